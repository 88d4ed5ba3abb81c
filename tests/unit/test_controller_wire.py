"""Wire-encoded Updates and WriteRequests are byte for byte the protobuf library's serialization."""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from controller.compile import compile_card_program
from controller.p4info_index import P4InfoIndex
from controller.routing import compute_tables
from controller.translate import DELETE, INSERT, MODIFY, EntrySpec, default_entry, spec_update, update
from controller.twins import plan_cards
from controller.wire import WireEncoder, update_type, varint, write_request
from p4src import card as names
from topologies.build import build_topology


def test_varints() -> None:
    assert [varint(v) for v in (0, 1, 127, 128, 300, 1 << 32)] == [
        b"\x00",
        b"\x01",
        b"\x7f",
        b"\x80\x01",
        b"\xac\x02",
        b"\x80\x80\x80\x80\x10",
    ]


def test_every_update_of_a_plan_encodes_as_the_library_does() -> None:
    topology = build_topology("ndt", dims="2x4x2", config="cbest")
    plans = plan_cards(topology, compute_tables(topology, "ts-dor"))
    index = P4InfoIndex(compile_card_program(names.CARD_PROGRAM, "embedded").p4info)
    encoder = WireEncoder(index)
    checked = 0
    for plan in list(plans.values())[:6]:
        for spec in plan.entries.values():
            for kind in (INSERT, MODIFY, DELETE):
                expected = spec_update(index, kind, spec).SerializeToString(deterministic=True)
                assert encoder.update(kind, spec) == expected, spec.describe()
                assert update_type(encoder.update(kind, spec)) == kind
                checked += 1
    assert checked > 1000


def test_write_requests_encode_as_the_library_does() -> None:
    index = P4InfoIndex(compile_card_program(names.CARD_PROGRAM, "embedded").p4info)
    config = update(MODIFY, default_entry(index, names.CARD_CONFIG, names.SET_CARD, (300, 9)))
    serialized = [config.SerializeToString(deterministic=True)] * 2
    for device_id, election in ((0, (0, 100)), (7, (1, 2))):
        for atomicity in (
            p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR,
            p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR,
        ):
            expected = p4runtime_pb2.WriteRequest(
                device_id=device_id, atomicity=atomicity, updates=[config, config]
            )
            expected.election_id.high, expected.election_id.low = election
            built = write_request(device_id, election, serialized, atomicity)
            assert built == expected.SerializeToString(deterministic=True)
            assert p4runtime_pb2.WriteRequest.FromString(built) == expected


def test_read_responses_decode_as_the_library_reads_them() -> None:
    from controller.translate import spec_of, table_entry
    from controller.wire import table_entries

    topology = build_topology("fattree", k=4, n=2, twin=True)
    plan = plan_cards(topology, compute_tables(topology, "destro"))["c5"]
    index = P4InfoIndex(compile_card_program(names.CARD_PROGRAM, "embedded").p4info)
    response = p4runtime_pb2.ReadResponse()
    for spec in plan.entries.values():
        response.entities.add().table_entry.CopyFrom(table_entry(index, spec))
    config = default_entry(index, names.CARD_CONFIG, names.SET_CARD, plan.config)
    response.entities.add().table_entry.CopyFrom(config)
    padded = response.entities.add().table_entry
    padded.CopyFrom(table_entry(index, next(iter(plan.entries.values()))))
    padded.match[0].exact.value = padded.match[0].exact.value.rjust(2, b"\x00")  # bmv2 may pad
    response.entities.add().counter_entry.counter_id = 1  # not a table entry: skipped
    decoded = table_entries(response.SerializeToString(), index)
    expected = [(False, spec_of(index, entity.table_entry)) for entity in response.entities[:-3]]
    assert decoded[:-2] == expected and len(expected) == len(plan.entries)
    assert decoded[-2] == (True, EntrySpec(names.CARD_CONFIG, (), names.SET_CARD, plan.config))
    assert decoded[-1] == expected[0]
