"""Updates serialised from kept bytes (translate.UpdateEncoder) against the protobuf classes' own.

The reference is ``spec_update(...).SerializeToString()``: the encoder must give the same
bytes, which the protobuf classes parse back to the same Update, for every table, value
size and update kind, and refuse what spec_update refuses with the same error.
"""

from __future__ import annotations

import random

import pytest
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller.compile import compile_card_program
from controller.translate import DELETE, INSERT, MODIFY, EntrySpec, UpdateEncoder, spec_update, varint
from p4src import card as names
from p4switch.p4runtime.info import EncodingError, P4InfoIndex, P4InfoLookupError

EXACT = p4info_pb2.MatchField.EXACT


def wide_p4info() -> p4info_pb2.P4Info:
    """A table and action whose ids, field ids and widths need several varint and value bytes."""
    info = p4info_pb2.P4Info()
    table = info.tables.add()
    table.preamble.id, table.preamble.name = 0x0200_ABCD, "Wide.t"
    for field_id, width in ((1, 1), (300, 48), (70_000, 9), (5, 128), (6, 256)):
        table.match_fields.add(id=field_id, name=f"f{field_id}", bitwidth=width, match_type=EXACT)
    table.action_refs.add(id=0x0100_0FFF)
    table.action_refs.add(id=0x0100_0001)
    action = info.actions.add()
    action.preamble.id, action.preamble.name = 0x0100_0FFF, "Wide.a"
    for param_id, width in ((200, 32), (1, 1), (129, 100)):
        action.params.add(id=param_id, name=f"p{param_id}", bitwidth=width)
    empty = info.actions.add()
    empty.preamble.id, empty.preamble.name = 0x0100_0001, "Wide.none"
    return info


def random_spec(index: P4InfoIndex, rng: random.Random) -> EntrySpec:
    """An entry of a random all-exact table of `index`, values anywhere in their widths."""
    tables = [t for t in index.tables.values() if all(f.match_type == EXACT for f in t.match_fields)]
    table = rng.choice(tables)

    def value(width: int) -> int:
        return rng.choice((0, 1, (1 << width) - 1, rng.getrandbits(width), rng.getrandbits(min(width, 8))))

    match = tuple(value(info.bitwidth) for info in table.match_fields)
    action = index.actions[rng.choice(sorted(table.action_scopes))]
    return EntrySpec(table.name, match, action.name, tuple(value(p.bitwidth) for p in action.params))


@pytest.mark.parametrize("which", ["card", "wide"])
def test_encoded_updates_are_the_bytes_of_spec_update_and_parse_back_to_it(which: str) -> None:
    p4info = compile_card_program(names.CARD_PROGRAM, "embedded").p4info if which == "card" else wide_p4info()
    index = P4InfoIndex(p4info)
    encoder = UpdateEncoder(index)
    rng = random.Random(which)
    for _ in range(3000):  # values repeat: most come from the kept bytes, some are encoded anew
        spec = random_spec(index, rng)
        kind = rng.choice((INSERT, MODIFY, DELETE, p4runtime_pb2.Update.UNSPECIFIED))
        reference = spec_update(index, kind, spec)
        encoded = encoder.encode(kind, spec)
        assert encoded == reference.SerializeToString()
        assert p4runtime_pb2.Update.FromString(encoded) == reference


def test_varints_are_protobufs() -> None:
    for value in (1, 127, 128, 300, 16_383, 16_384, 2**32 - 1, 2**63):  # proto3 writes no zero
        message = p4runtime_pb2.Uint128(high=value)
        assert varint(value) == message.SerializeToString()[1:]
    assert p4runtime_pb2.Uint128.FromString(b"\x08" + varint(0)).high == 0


def test_what_spec_update_refuses_is_refused_with_the_same_error() -> None:
    index = P4InfoIndex(wide_p4info())
    encoder = UpdateEncoder(index)
    good = EntrySpec("Wide.t", (1, 5, 3, 7, 9), "Wide.a", (1, 0, 2))
    encoder.encode(INSERT, good)  # its values are kept: the bad ones below must not be taken for them
    bad = [
        EntrySpec("Wide.t", (2, 5, 3, 7, 9), "Wide.a", (1, 0, 2)),  # 2 in a 1-bit field
        EntrySpec("Wide.t", (1, 5, 512, 7, 9), "Wide.a", (1, 0, 2)),  # 512 in 9 bits (fits the others)
        EntrySpec("Wide.t", (1, -5, 3, 7, 9), "Wide.a", (1, 0, 2)),
        EntrySpec("Wide.t", (1, 5, 3, 7), "Wide.a", (1, 0, 2)),
        EntrySpec("Wide.nope", (1, 5, 3, 7, 9), "Wide.a", (1, 0, 2)),
        EntrySpec("Wide.t", (1, 5, 3, 7, 9), "Wide.nope", (1, 0, 2)),
        EntrySpec("Wide.t", (1, 5, 3, 7, 9), "Wide.a", (1, 0)),
        EntrySpec("Wide.t", (1, 5, 3, 7, 9), "Wide.a", (1, 2, 2)),  # 2 in a 1-bit parameter
        EntrySpec("Wide.t", (1, 5, 3, 7, 9), "Wide.none", (1,)),
    ]
    for spec in bad:
        with pytest.raises((EncodingError, P4InfoLookupError)) as expected:
            spec_update(index, INSERT, spec)
        with pytest.raises(type(expected.value)) as got:
            encoder.encode(INSERT, spec)
        assert str(got.value) == str(expected.value)
    # a DELETE carries no action: a bad action is not looked at, as spec_update does not
    assert encoder.encode(DELETE, bad[5]) == spec_update(index, DELETE, bad[5]).SerializeToString()


def test_a_write_request_of_encoded_updates_is_the_one_protobuf_builds() -> None:
    from controller.p4runtime_conn import CardConnection, CardEndpoint

    index = P4InfoIndex(wide_p4info())
    encoder = UpdateEncoder(index)
    rng = random.Random(5)
    specs = [random_spec(index, rng) for _ in range(300)]
    messages = [spec_update(index, INSERT, spec) for spec in specs]
    # bytes and messages mixed; some updates longer than 127 bytes (two-byte length prefixes)
    given = [
        encoder.encode(INSERT, spec) if i % 3 else message
        for i, (spec, message) in enumerate(zip(specs, messages, strict=True))
    ]
    assert any(len(encoder.encode(INSERT, spec)) > 127 for spec in specs)
    connection = CardConnection(CardEndpoint("c7", 7, 70_000, "unused"), index, election_id=(3, 300))
    data = connection.request_bytes(given)
    expected = p4runtime_pb2.WriteRequest(device_id=70_000, updates=messages)
    expected.election_id.high, expected.election_id.low = 3, 300
    assert data == expected.SerializeToString()
    assert p4runtime_pb2.WriteRequest.FromString(data) == expected
