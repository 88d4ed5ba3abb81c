"""The switch's P4Runtime service over real gRPC on loopback, with a stand-in pipeline.

Checks arbitration, pipeline config actions, Write status codes with per-update
errors (and no change to table state on rejected updates), atomicity, default
entries, Read wildcards, counters and registers. No root needed.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from test_switch_standin import (
    ACTION_DROP_ID,
    ACTION_FORWARD_ID,
    COUNTER_ID,
    REGISTER_ID,
    SOURCE,
    TABLE_ID,
    stand_in_compile,
    stand_in_p4info,
)

from p4switch.daemon.program import PipelineSlot
from p4switch.p4runtime.client import P4RuntimeClient, WriteFailure, table_entry, update
from p4switch.p4runtime.server import P4RuntimeService, start_p4runtime_server

INSERT, MODIFY, DELETE = p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY, p4runtime_pb2.Update.DELETE
Action = p4runtime_pb2.SetForwardingPipelineConfigRequest


class Device:
    def __init__(self) -> None:
        self.slot = PipelineSlot()
        self.service = P4RuntimeService(7, self.slot, compile_function=stand_in_compile)
        self.server, port = start_p4runtime_server("127.0.0.1:0", self.service)
        self.address = f"127.0.0.1:{port}"
        self.clients: list[P4RuntimeClient] = []

    def client(self, election_low: int, device_id: int = 7) -> P4RuntimeClient:
        client = P4RuntimeClient(self.address, device_id, (0, election_low))
        self.clients.append(client)
        return client

    def close(self) -> None:
        for client in self.clients:
            client.close()
        self.server.stop(grace=0).wait(5)


@pytest.fixture
def device() -> Iterator[Device]:
    device = Device()
    try:
        yield device
    finally:
        device.close()


@pytest.fixture
def primary(device: Device) -> P4RuntimeClient:
    client = device.client(10)
    assert client.arbitrate().status.code == code_pb2.OK
    client.set_pipeline(stand_in_p4info(), SOURCE.encode())
    return client


def route(port: int, mac: bytes, out_port: bytes = b"\x02", prio: bytes = b"\x01") -> p4runtime_pb2.Entity:
    return table_entry(
        TABLE_ID, [(1, bytes([port])), (2, mac)], ACTION_FORWARD_ID, [(1, out_port), (2, prio)]
    )


def all_entries(client: P4RuntimeClient) -> list[p4runtime_pb2.Entity]:
    wildcard = p4runtime_pb2.Entity()
    wildcard.table_entry.SetInParent()
    return client.read([wildcard])


def rejected(client: P4RuntimeClient, *entities_and_kinds, atomicity: int = 0) -> list[int]:
    """Write the updates, expect UNKNOWN, return the per-update canonical codes."""
    with pytest.raises(WriteFailure) as failure:
        client.write([update(kind, entity) for kind, entity in entities_and_kinds], atomicity=atomicity)
    assert failure.value.code == grpc.StatusCode.UNKNOWN
    return [error.canonical_code for error in failure.value.errors]


def test_capabilities_report_the_p4runtime_version(device: Device) -> None:
    response = device.client(1).stub.Capabilities(p4runtime_pb2.CapabilitiesRequest())
    assert response.p4runtime_api_version == importlib.metadata.version("p4runtime")


def test_arbitration_lower_election_id_is_backup_and_cannot_write(device: Device) -> None:
    first = device.client(10)
    answer = first.arbitrate()
    assert answer.status.code == code_pb2.OK and answer.election_id.low == 10
    first.set_pipeline(stand_in_p4info(), SOURCE.encode())
    second = device.client(5)
    answer = second.arbitrate()
    assert answer.status.code == code_pb2.ALREADY_EXISTS and answer.election_id.low == 10
    with pytest.raises(WriteFailure) as failure:
        second.write([update(INSERT, route(1, b"\x0a"))])
    assert failure.value.code == grpc.StatusCode.PERMISSION_DENIED
    with pytest.raises(grpc.RpcError) as denied:
        second.set_pipeline(stand_in_p4info(), SOURCE.encode())
    assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert all_entries(first) == []
    first.write([update(INSERT, route(1, b"\x0a"))])
    assert len(all_entries(second)) == 1  # anyone may read
    # the primary leaves: the backup is told it is primary now, and may write
    first.close()
    promoted = second.next_arbitration()
    assert promoted.status.code == code_pb2.OK and promoted.election_id.low == 5
    second.write([update(INSERT, route(2, b"\x0a"))])
    assert len(all_entries(second)) == 2


def test_a_higher_election_id_takes_over_and_the_old_primary_is_told(device: Device) -> None:
    old = device.client(3)
    assert old.arbitrate().status.code == code_pb2.OK
    new = device.client(4)
    assert new.arbitrate().status.code == code_pb2.OK
    demoted = old.next_arbitration()
    assert demoted.status.code == code_pb2.ALREADY_EXISTS and demoted.election_id.low == 4


def test_duplicate_election_id_and_wrong_device_end_the_stream(device: Device) -> None:
    assert device.client(9).arbitrate().status.code == code_pb2.OK
    twin = device.client(9)
    with pytest.raises(ConnectionError):
        twin.arbitrate(timeout=5)
    assert twin.stream_error.code() == grpc.StatusCode.INVALID_ARGUMENT
    stranger = device.client(11, device_id=8)
    with pytest.raises(ConnectionError):
        stranger.arbitrate(timeout=5)
    assert stranger.stream_error.code() == grpc.StatusCode.NOT_FOUND


def test_write_without_arbitration_or_pipeline(device: Device) -> None:
    client = device.client(10)
    with pytest.raises(WriteFailure) as failure:
        client.write([update(INSERT, route(1, b"\x0a"))])
    assert failure.value.code == grpc.StatusCode.PERMISSION_DENIED
    client.arbitrate()
    with pytest.raises(WriteFailure) as failure:
        client.write([update(INSERT, route(1, b"\x0a"))])
    assert failure.value.code == grpc.StatusCode.FAILED_PRECONDITION
    wrong_device = device.client(10, device_id=3)
    with pytest.raises(WriteFailure) as failure:
        wrong_device.write([update(INSERT, route(1, b"\x0a"))])
    assert failure.value.code == grpc.StatusCode.NOT_FOUND


def test_pipeline_config_actions(device: Device) -> None:
    client = device.client(10)
    client.arbitrate()
    mismatched = stand_in_p4info()
    mismatched.tables[0].match_fields[1].bitwidth = 32
    with pytest.raises(grpc.RpcError) as error:
        client.set_pipeline(mismatched, SOURCE.encode())
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as error:
        client.set_pipeline(stand_in_p4info(), b"BROKEN program")
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as error:  # nothing saved: NOT_FOUND (spec: COMMIT)
        client.set_pipeline(stand_in_p4info(), SOURCE.encode(), action=Action.COMMIT)
    assert error.value.code() == grpc.StatusCode.NOT_FOUND
    client.set_pipeline(stand_in_p4info(), SOURCE.encode(), action=Action.VERIFY)
    assert device.slot.config is None
    client.set_pipeline(stand_in_p4info(), SOURCE.encode(), cookie=42, action=Action.VERIFY_AND_SAVE)
    assert device.slot.config is None
    with_config = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=7, action=Action.COMMIT)
    with_config.election_id.high, with_config.election_id.low = client.election_id
    with_config.config.p4info.CopyFrom(stand_in_p4info())
    with pytest.raises(grpc.RpcError) as error:  # COMMIT carries no config: INVALID_ARGUMENT (spec)
        client.stub.SetForwardingPipelineConfig(with_config)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert device.slot.config is None and device.slot.saved is not None
    client.set_pipeline(stand_in_p4info(), b"", action=Action.COMMIT)
    got = client.stub.GetForwardingPipelineConfig(
        p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=7)
    )
    assert got.config.cookie.cookie == 42
    assert got.config.p4_device_config == SOURCE.encode()
    assert got.config.p4info == stand_in_p4info()
    # reconcile with the same program keeps the installed entries
    client.write([update(INSERT, route(1, b"\x0a"))])
    client.set_pipeline(stand_in_p4info(), SOURCE.encode(), action=Action.RECONCILE_AND_COMMIT)
    assert len(all_entries(client)) == 1
    # commit starts from empty tables
    client.set_pipeline(stand_in_p4info(), SOURCE.encode())
    assert all_entries(client) == []


def test_write_batch_and_read_back_canonical(primary: P4RuntimeClient) -> None:
    primary.write(
        [update(INSERT, route(port, b"\x00\x00\x00\x00\x00\x0a", b"\x00\x03", b"\x02")) for port in (1, 2, 3)]
    )
    entries = all_entries(primary)
    assert len(entries) == 3
    for entity in entries:
        entry = entity.table_entry
        assert entry.table_id == TABLE_ID
        assert entry.match[1].exact.value == b"\x0a"  # canonical: leading zeros stripped
        assert [p.value for p in entry.action.action.params] == [b"\x03", b"\x02"]
    assert sorted(e.table_entry.match[0].exact.value for e in entries) == [b"\x01", b"\x02", b"\x03"]
    one_table = p4runtime_pb2.Entity()
    one_table.table_entry.table_id = TABLE_ID
    assert len(primary.read([one_table])) == 3
    one_entry = route(2, b"\x0a")
    one_entry.table_entry.ClearField("action")
    read = primary.read([one_entry])
    assert len(read) == 1 and read[0].table_entry.match[0].exact.value == b"\x02"


def test_bad_writes_get_their_codes_and_change_nothing(primary: P4RuntimeClient) -> None:
    primary.write([update(INSERT, route(1, b"\x0a"))])
    before = all_entries(primary)
    unknown_table = route(1, b"\x0b")
    unknown_table.table_entry.table_id = 999
    bad_action = route(1, b"\x0c")
    bad_action.table_entry.action.action.action_id = 12345
    missing_param = table_entry(TABLE_ID, [(1, b"\x01"), (2, b"\x0d")], ACTION_FORWARD_ID, [(1, b"\x02")])
    wide_param = route(1, b"\x0e", out_port=b"\x02\x00")  # 512 does not fit 9 bits
    codes = rejected(
        primary,
        (INSERT, route(1, b"\x0a")),  # duplicate
        (DELETE, route(5, b"\x0a")),  # missing
        (MODIFY, route(6, b"\x0a")),  # missing
        (INSERT, unknown_table),
        (INSERT, route(1, b"\x00\x01\x00\x00\x00\x00\x00\x0b")),  # 2**48 + 11: zero padding, still too wide
        (INSERT, route(1, b"\x01\x00\x00\x00\x00\x00\x0b")),  # 7 bytes for 48 bits
        (INSERT, bad_action),
        (INSERT, missing_param),
        (INSERT, wide_param),
        (INSERT, table_entry(TABLE_ID, [(1, b"\x01")], ACTION_DROP_ID)),  # exact field missing
        (INSERT, table_entry(TABLE_ID, [(1, b"\x01"), (2, b"\x0f")], ACTION_DROP_ID, priority=3)),  # priority
    )
    assert (
        codes
        == [code_pb2.ALREADY_EXISTS, code_pb2.NOT_FOUND, code_pb2.NOT_FOUND, code_pb2.NOT_FOUND]
        + [code_pb2.INVALID_ARGUMENT] * 7
    )
    assert all_entries(primary) == before


def test_continue_on_error_applies_the_good_updates(primary: P4RuntimeClient) -> None:
    codes = rejected(
        primary, (INSERT, route(1, b"\x0a")), (INSERT, route(1, b"\x0a")), (INSERT, route(2, b"\x0a"))
    )
    assert codes == [code_pb2.OK, code_pb2.ALREADY_EXISTS, code_pb2.OK]
    assert len(all_entries(primary)) == 2


def test_rollback_on_error_applies_nothing(primary: P4RuntimeClient) -> None:
    primary.write([update(INSERT, route(1, b"\x0a", out_port=b"\x04"))])
    before = all_entries(primary)
    codes = rejected(
        primary,
        (INSERT, route(2, b"\x0a")),
        (MODIFY, route(1, b"\x0a", out_port=b"\x05")),
        (DELETE, route(1, b"\x0a")),
        (DELETE, route(3, b"\x0a")),  # fails: everything before is undone
        atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR,
    )
    assert codes == [code_pb2.ABORTED, code_pb2.ABORTED, code_pb2.ABORTED, code_pb2.NOT_FOUND]
    assert all_entries(primary) == before


def test_modify_and_delete(primary: P4RuntimeClient) -> None:
    primary.write([update(INSERT, route(1, b"\x0a", out_port=b"\x02"))])
    primary.write([update(MODIFY, route(1, b"\x0a", out_port=b"\x07"))])
    assert all_entries(primary)[0].table_entry.action.action.params[0].value == b"\x07"
    primary.write([update(DELETE, route(1, b"\x0a"))])
    assert all_entries(primary) == []


def test_default_entry_modify_read_and_reset(primary: P4RuntimeClient) -> None:
    default = table_entry(TABLE_ID, [], ACTION_FORWARD_ID, [(1, b"\x03"), (2, b"\x01")])
    default.table_entry.is_default_action = True
    primary.write([update(MODIFY, default)])
    query = p4runtime_pb2.Entity()
    query.table_entry.table_id = TABLE_ID
    query.table_entry.is_default_action = True
    (read,) = primary.read([query])
    assert read.table_entry.action.action.action_id == ACTION_FORWARD_ID
    assert [p.value for p in read.table_entry.action.action.params] == [b"\x03", b"\x01"]
    assert rejected(primary, (INSERT, default)) == [code_pb2.INVALID_ARGUMENT]
    reset = p4runtime_pb2.Entity()
    reset.table_entry.table_id = TABLE_ID
    reset.table_entry.is_default_action = True
    primary.write([update(MODIFY, reset)])
    (read,) = primary.read([query])
    assert read.table_entry.action.action.action_id == ACTION_DROP_ID


def test_counters_direct_counters_and_registers(device: Device, primary: P4RuntimeClient) -> None:
    primary.write([update(INSERT, route(1, b"\x0a"))])
    pipeline = device.slot.pipeline
    frame = bytes.fromhex("00000000000a") + bytes(6) + b"\x08\x00" + bytes(46)
    for _ in range(3):
        pipeline.ingress(frame, 1)
    pipeline.ingress(frame, 2)
    counter = p4runtime_pb2.Entity()
    counter.counter_entry.counter_id = COUNTER_ID
    cells = {e.counter_entry.index.index: e.counter_entry.data for e in primary.read([counter])}
    assert len(cells) == 16
    assert (cells[1].packet_count, cells[1].byte_count) == (3, 3 * 60)
    assert (cells[2].packet_count, cells[0].packet_count) == (1, 0)
    counter.counter_entry.index.index = 2
    (one,) = primary.read([counter])
    assert one.counter_entry.data.packet_count == 1
    direct = p4runtime_pb2.Entity()
    direct.direct_counter_entry.table_entry.table_id = TABLE_ID
    (cell,) = primary.read([direct])
    assert (cell.direct_counter_entry.data.packet_count, cell.direct_counter_entry.data.byte_count) == (
        3,
        180,
    )
    with_counters = p4runtime_pb2.Entity()
    with_counters.table_entry.table_id = TABLE_ID
    with_counters.table_entry.counter_data.SetInParent()
    (entry,) = primary.read([with_counters])
    assert entry.table_entry.counter_data.packet_count == 3
    register = p4runtime_pb2.Entity()
    register.register_entry.register_id = REGISTER_ID
    register.register_entry.index.index = 3
    register.register_entry.data.bitstring = b"\x01\x00"
    primary.write([update(MODIFY, register)])
    register.register_entry.ClearField("data")
    register.register_entry.ClearField("index")
    values = {e.register_entry.index.index: e.register_entry.data.bitstring for e in primary.read([register])}
    assert values == {0: b"\x00", 1: b"\x3c", 2: b"\x3c", 3: b"\x01\x00"}
