"""Table entries to P4Runtime protos: canonical bytestrings, hand-built protos, the way back."""

from __future__ import annotations

import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller.compile import compile_card_program
from controller.translate import (
    DELETE,
    INSERT,
    EntrySpec,
    default_entry,
    route_spec,
    spec_of,
    spec_update,
    table_entry,
)
from p4src import card as names
from p4switch.p4runtime.info import (
    EncodingError,
    P4InfoIndex,
    P4InfoLookupError,
    decode_bytestring,
    encode_bytestring,
    p4info_mismatch,
)

# ids of a hand-written P4Info, unrelated to any compiler's numbering
ROUTE_ID, SET_ROUTE_ID, CONFIG_ID, SET_CARD_ID, NO_ROUTE_ID = (
    0x02000001,
    0x01000001,
    0x02000002,
    0x01000002,
    0x01000003,
)


def hand_p4info() -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    route = info.tables.add()
    route.preamble.id, route.preamble.name = ROUTE_ID, names.ROUTE
    for field_id, name, width in ((1, names.INGRESS_PORT, 9), (2, names.DST_PE, 16), (3, names.RCLASS, 4)):
        route.match_fields.add(id=field_id, name=name, bitwidth=width, match_type=p4info_pb2.MatchField.EXACT)
    route.action_refs.add(id=SET_ROUTE_ID)
    route.action_refs.add(id=NO_ROUTE_ID)
    config = info.tables.add()
    config.preamble.id, config.preamble.name = CONFIG_ID, names.CARD_CONFIG
    config.action_refs.add(id=SET_CARD_ID)
    for action_id, name, params in (
        (SET_ROUTE_ID, names.SET_ROUTE, (("port", 9), ("vc", 4))),
        (SET_CARD_ID, names.SET_CARD, (("card_id", 16), ("hop_limit", 8))),
        (NO_ROUTE_ID, names.DROP_NO_ROUTE, ()),
    ):
        action = info.actions.add()
        action.preamble.id, action.preamble.name = action_id, name
        for param_id, (param, width) in enumerate(params, start=1):
            action.params.add(id=param_id, name=param, bitwidth=width)
    return info


def test_canonical_bytestrings_are_the_shortest_big_endian_strings() -> None:
    # brute force over a 9-bit field: the canonical string is the shortest one that decodes to the value
    for value in range(512):
        shortest = next(value.to_bytes(length, "big") for length in (1, 2) if value < 256**length)
        assert encode_bytestring(value, 9) == shortest
        assert decode_bytestring(shortest, 9, "f") == value
    with pytest.raises(EncodingError, match="does not fit in 9 bits"):
        encode_bytestring(512, 9)
    with pytest.raises(EncodingError):
        encode_bytestring(-1, 4)


def test_longer_bytestrings_with_leading_zeros_are_accepted_and_values_that_do_not_fit_refused() -> None:
    # P4Runtime spec v1.3, 8.4 Bytestrings: padding with zero bytes is allowed, at any length (bmv2 too)
    for padding in range(4):
        assert decode_bytestring(b"\x00" * padding + b"\x04", 16, "f") == 4
    assert decode_bytestring(b"\x00\x00\x00\x01\xff", 9, "f") == 511
    for data in (b"\x02\x00", b"\x00\x00\x02\x00", b"\x01\x00\x00"):  # 512 and 65536: above 9 bits
        with pytest.raises(EncodingError, match="does not fit in 9 bits"):
            decode_bytestring(data, 9, "f")
    with pytest.raises(EncodingError, match="empty"):
        decode_bytestring(b"", 9, "f")


def test_a_route_entry_becomes_exactly_the_table_entry_built_by_hand() -> None:
    index = P4InfoIndex(hand_p4info())
    # card 12 forwards packets for PE 37 of class 1 arriving on port 3 to port 5 on VC 1 (p4src/README.md)
    built = table_entry(index, route_spec(ingress_port=3, dst_pe=37, routing_class=1, egress_port=5, vc=1))
    expected = p4runtime_pb2.TableEntry(
        table_id=ROUTE_ID,
        match=[
            p4runtime_pb2.FieldMatch(field_id=1, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x03")),
            p4runtime_pb2.FieldMatch(field_id=2, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x25")),
            p4runtime_pb2.FieldMatch(field_id=3, exact=p4runtime_pb2.FieldMatch.Exact(value=b"\x01")),
        ],
        action=p4runtime_pb2.TableAction(
            action=p4runtime_pb2.Action(
                action_id=SET_ROUTE_ID,
                params=[
                    p4runtime_pb2.Action.Param(param_id=1, value=b"\x05"),
                    p4runtime_pb2.Action.Param(param_id=2, value=b"\x01"),
                ],
            )
        ),
    )
    assert built.SerializeToString(deterministic=True) == expected.SerializeToString(deterministic=True)


def test_wide_values_use_two_bytes_and_zero_one_byte() -> None:
    index = P4InfoIndex(hand_p4info())
    built = table_entry(index, route_spec(ingress_port=300, dst_pe=0, routing_class=0, egress_port=256, vc=0))
    assert [m.exact.value for m in built.match] == [b"\x01\x2c", b"\x00", b"\x00"]
    assert [p.value for p in built.action.action.params] == [b"\x01\x00", b"\x00"]
    with pytest.raises(EncodingError, match="MyIngress.route hdr.tw.dst_pe = 65536"):
        table_entry(index, route_spec(1, 65536, 0, 2, 0))
    with pytest.raises(EncodingError, match="vc = 16"):
        table_entry(index, route_spec(1, 2, 0, 2, 16))


def test_the_default_action_entry_of_card_config() -> None:
    index = P4InfoIndex(hand_p4info())
    built = default_entry(index, names.CARD_CONFIG, names.SET_CARD, (12, 9))
    expected = p4runtime_pb2.TableEntry(
        table_id=CONFIG_ID,
        is_default_action=True,
        action=p4runtime_pb2.TableAction(
            action=p4runtime_pb2.Action(
                action_id=SET_CARD_ID,
                params=[
                    p4runtime_pb2.Action.Param(param_id=1, value=b"\x0c"),
                    p4runtime_pb2.Action.Param(param_id=2, value=b"\x09"),
                ],
            )
        ),
    )
    assert built.SerializeToString(deterministic=True) == expected.SerializeToString(deterministic=True)


def test_entries_read_back_in_any_padding_give_the_same_spec() -> None:
    index = P4InfoIndex(hand_p4info())
    spec = route_spec(3, 37, 1, 5, 1)
    assert spec_of(index, table_entry(index, spec)) == spec
    padded = table_entry(index, spec)
    for field, width in zip(padded.match, (2, 2, 1), strict=True):
        field.exact.value = field.exact.value.rjust(width, b"\x00")
    padded.action.action.params[0].value = b"\x00\x05"
    assert spec_of(index, padded) == spec
    assert spec.describe() == "MyIngress.route(3, 37, 1) -> MyIngress.set_route(5, 1)"


def test_an_entry_with_the_wrong_number_of_values_is_refused() -> None:
    index = P4InfoIndex(hand_p4info())
    with pytest.raises(EncodingError, match="matches on 3 fields"):
        table_entry(index, EntrySpec(names.ROUTE, (1, 2), names.SET_ROUTE, (1, 0)))
    with pytest.raises(EncodingError, match="takes 2 parameters"):
        table_entry(index, EntrySpec(names.ROUTE, (1, 2, 0), names.SET_ROUTE, (1,)))
    with pytest.raises(P4InfoLookupError, match="no table 'MyIngress.nope'"):
        table_entry(index, EntrySpec("MyIngress.nope", (), names.SET_ROUTE, (1, 0)))


def test_the_card_program_offers_what_the_controller_uses() -> None:
    program = compile_card_program(names.CARD_PROGRAM, "embedded")
    index = P4InfoIndex(program.p4info)
    index.require(names.TABLES, names.ACTIONS, names.COUNTERS)
    assert index.table_named(names.ROUTE).match_fields[1].bitwidth == 16
    with pytest.raises(P4InfoLookupError, match="matches on"):
        index.require({names.ROUTE: ((names.INGRESS_PORT,), ())}, {}, ())


def test_p4info_mismatch_names_what_differs() -> None:
    program = compile_card_program(names.CARD_PROGRAM, "embedded")
    same = p4info_pb2.P4Info()
    same.CopyFrom(program.p4info)
    labels = ("controller", "card")
    assert p4info_mismatch(program.p4info, same, labels) is None
    route = next(t for t in same.tables if t.preamble.name == names.ROUTE)
    route.preamble.id += 1
    difference = p4info_mismatch(program.p4info, same, labels)
    assert "P4Info tables differ" in difference and f"card has [({route.preamble.id}, " in difference
    fewer = p4info_pb2.P4Info()
    fewer.CopyFrom(program.p4info)
    del fewer.counters[0]
    assert "P4Info counters differ from the card's: controller has [(" in p4info_mismatch(
        program.p4info, fewer, labels
    )


def test_names_agree_with_the_emulation_side_of_the_card_program() -> None:
    packets = pytest.importorskip("emulation.packets")
    for table, (fields, actions) in names.TABLES.items():
        assert tuple(name for name, _ in packets.CARD_TABLES[table]["keys"]) == fields
        for action in actions:
            assert tuple(p for p, _ in packets.CARD_TABLES[table]["actions"][action]) == names.ACTIONS[action]
    assert names.DROP_REASONS == packets.DROP_REASONS
    assert set(names.COUNTERS) == set(packets.CARD_COUNTERS)
    assert names.MAX_TRACE == packets.MAX_TRACE and names.VCS_PER_PORT == packets.VCS_PER_PORT
    assert names.port_vc_index(5, 3) == packets.port_vc_index(5, 3)


def test_updates_carry_the_entry_and_a_delete_only_its_match() -> None:
    index = P4InfoIndex(hand_p4info())
    spec = route_spec(3, 37, 1, 5, 1)
    inserted = spec_update(index, INSERT, spec)
    assert inserted.type == p4runtime_pb2.Update.INSERT
    assert inserted.entity.table_entry == table_entry(index, spec)
    deleted = spec_update(index, DELETE, spec)
    assert deleted.type == p4runtime_pb2.Update.DELETE
    assert not deleted.entity.table_entry.HasField("action")
    assert list(deleted.entity.table_entry.match) == list(table_entry(index, spec).match)


def test_a_routing_table_entry_translates_one_to_one() -> None:
    from controller.routing import compute_tables
    from topologies.build import build_topology

    tables = compute_tables(build_topology("torus", dims="4"), "dor")
    index = P4InfoIndex(hand_p4info())
    for entry in list(tables.entries())[:5]:
        built = table_entry(
            index,
            route_spec(entry.ingress_port, entry.dst_pe, entry.routing_class, entry.egress_port, entry.vc),
        )
        expected = p4runtime_pb2.TableEntry(table_id=ROUTE_ID)
        for field_id, value in enumerate((entry.ingress_port, entry.dst_pe, entry.routing_class), start=1):
            expected.match.add(field_id=field_id).exact.value = bytes([value])  # all below 256 here
        expected.action.action.action_id = SET_ROUTE_ID
        for param_id, value in enumerate((entry.egress_port, entry.vc), start=1):
            expected.action.action.params.add(param_id=param_id, value=bytes([value]))
        assert built.SerializeToString(deterministic=True) == expected.SerializeToString(deterministic=True)
