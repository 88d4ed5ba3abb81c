"""P4Runtime on the language core with tests/p4progs/acl.p4: ternary, range and optional keys,
priorities, const tables, const default actions and direct counters (real gRPC on loopback, no root).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4switch.daemon.program import PipelineSlot
from p4switch.p4runtime.client import P4RuntimeClient, WriteFailure, update
from p4switch.p4runtime.server import P4RuntimeService, start_p4runtime_server

ACL = Path(__file__).resolve().parents[1] / "p4progs" / "acl.p4"
INSERT, MODIFY = p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY


@pytest.fixture(scope="module")
def program():
    try:
        from p4switch import compile_program

        return compile_program(str(ACL))
    except Exception as error:  # the language core cannot run it (yet)
        pytest.skip(f"the language core cannot compile {ACL.name}: {type(error).__name__}: {error}")


@pytest.fixture
def switch(program) -> Iterator[tuple[PipelineSlot, P4RuntimeClient]]:
    slot = PipelineSlot()
    server, port = start_p4runtime_server("127.0.0.1:0", P4RuntimeService(0, slot))
    client = P4RuntimeClient(f"127.0.0.1:{port}", 0, (0, 1))
    try:
        assert client.arbitrate().status.code == code_pb2.OK
        client.set_pipeline(program.p4info, ACL.read_bytes())  # the config carries the source text
        yield slot, client
    finally:
        client.close()
        server.stop(grace=0).wait(5)


def ids(program, table: str) -> tuple[int, dict[str, int]]:
    info = next(t for t in program.p4info.tables if t.preamble.name == table)
    return info.preamble.id, {f.name: f.id for f in info.match_fields}


def action_id(program, name: str) -> int:
    return next(a.preamble.id for a in program.p4info.actions if a.preamble.name == name)


def acl_entry(program, priority: int, src=None, dport=None, dscp=None, action="AclIngress.deny"):
    """An acl entry: src (value, mask), dport (low, high), dscp value; each optional."""
    table_id, fields = ids(program, "AclIngress.acl")
    entity = p4runtime_pb2.Entity()
    entry = entity.table_entry
    entry.table_id, entry.priority = table_id, priority
    if src is not None:
        match = entry.match.add()
        match.field_id = fields["hdr.ipv4.src_addr"]
        match.ternary.value, match.ternary.mask = src
    if dport is not None:
        match = entry.match.add()
        match.field_id = fields["hdr.l4.dport"]
        match.range.low, match.range.high = dport
    if dscp is not None:
        match = entry.match.add()
        match.field_id = fields["dscp"]
        match.optional.value = dscp
    entry.action.action.action_id = action_id(program, action)
    return entity


def write_codes(client: P4RuntimeClient, *updates) -> list[int]:
    with pytest.raises(WriteFailure) as failure:
        client.write(list(updates))
    assert failure.value.code == grpc.StatusCode.UNKNOWN
    return [error.canonical_code for error in failure.value.errors]


def read_table(client: P4RuntimeClient, table_id: int) -> list[p4runtime_pb2.TableEntry]:
    entity = p4runtime_pb2.Entity()
    entity.table_entry.table_id = table_id
    return [e.table_entry for e in client.read([entity])]


def test_ternary_range_and_optional_keys_are_validated(program, switch) -> None:
    _, client = switch
    ten = (b"\x0a\x00\x00\x00", b"\xff\x00\x00\x00")
    codes = write_codes(
        client,
        update(INSERT, acl_entry(program, 0, src=ten)),  # a ternary table needs a priority
        update(
            INSERT, acl_entry(program, 5, src=(b"\x0a\x00\x00\x01", b"\xff\x00\x00\x00"))
        ),  # bits off the mask
        update(
            INSERT, acl_entry(program, 5, src=(b"\x0a", b"\x00"))
        ),  # all-zero mask: omit the field instead
        update(INSERT, acl_entry(program, 5, dport=(b"\x00\x5a", b"\x00\x50"))),  # low > high
        update(INSERT, acl_entry(program, 5, dport=(b"\x00", b"\xff\xff"))),  # full range: omit instead
        update(INSERT, acl_entry(program, 5, dscp=b"\x01\x00")),  # 256 in 8 bits
        update(INSERT, acl_entry(program, 5, src=ten, dport=(b"\x50", b"\x5a"), dscp=b"\x2e")),  # valid
    )
    assert codes == [code_pb2.INVALID_ARGUMENT] * 6 + [code_pb2.OK]
    table_id, fields = ids(program, "AclIngress.acl")
    (entry,) = read_table(client, table_id)
    assert entry.priority == 5
    by_field = {m.field_id: m for m in entry.match}
    assert set(by_field) == {fields["hdr.ipv4.src_addr"], fields["hdr.l4.dport"], fields["dscp"]}
    assert (
        by_field[fields["hdr.ipv4.src_addr"]].ternary.value,
        by_field[fields["hdr.ipv4.src_addr"]].ternary.mask,
    ) == (b"\x0a\x00\x00\x00", b"\xff\x00\x00\x00")
    assert (by_field[fields["hdr.l4.dport"]].range.low, by_field[fields["hdr.l4.dport"]].range.high) == (
        b"\x50",
        b"\x5a",
    )
    assert by_field[fields["dscp"]].optional.value == b"\x2e"
    # the same match at another priority is another entry; at the same priority a duplicate
    client.write([update(INSERT, acl_entry(program, 6, src=ten, dport=(b"\x50", b"\x5a"), dscp=b"\x2e"))])
    assert write_codes(
        client, update(INSERT, acl_entry(program, 6, src=ten, dport=(b"\x50", b"\x5a"), dscp=b"\x2e"))
    ) == [code_pb2.ALREADY_EXISTS]
    assert len(read_table(client, table_id)) == 2


def test_const_entries_and_const_default_are_read_only(program, switch) -> None:
    _, client = switch
    table_id, fields = ids(program, "AclIngress.fwd")
    entries = read_table(client, table_id)
    ports = sorted((e.match[0].exact.value, e.action.action.params[0].value) for e in entries)
    assert ports == [(b"\x01", b"\x02"), (b"\x02", b"\x01")]
    entity = p4runtime_pb2.Entity()
    entity.table_entry.table_id = table_id
    match = entity.table_entry.match.add()
    match.field_id, match.exact.value = fields["standard_metadata.ingress_port"], b"\x03"
    entity.table_entry.action.action.action_id = action_id(program, "AclIngress.set_port")
    param = entity.table_entry.action.action.params.add()
    param.param_id, param.value = 1, b"\x01"
    default = p4runtime_pb2.Entity()
    default.table_entry.table_id = table_id
    default.table_entry.is_default_action = True
    default.table_entry.action.action.action_id = action_id(program, "NoAction")
    assert (
        write_codes(client, update(INSERT, entity), update(MODIFY, default))
        == [code_pb2.PERMISSION_DENIED] * 2
    )
    assert len(read_table(client, table_id)) == 2


def udp_frame(src: str, dport: int) -> bytes:
    ipv4 = bytes([0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0]) + ipaddress.IPv4Address(src).packed + bytes(4)
    return bytes(12) + b"\x08\x00" + ipv4 + (1234).to_bytes(2, "big") + dport.to_bytes(2, "big") + bytes(4)


def test_direct_and_indexed_counters_read_back(program, switch) -> None:
    slot, client = switch
    client.write(
        [
            update(
                INSERT,
                acl_entry(
                    program, 9, src=(b"\x0a\x00\x00\x00", b"\xff\x00\x00\x00"), dport=(b"\x50", b"\x5a")
                ),
            )
        ]
    )
    denied, allowed = udp_frame("10.1.2.3", 85), udp_frame("10.1.2.3", 443)
    with slot.lock:
        outcomes = [slot.pipeline.process(frame, 1) for frame in (denied, denied, allowed)]
    assert [len(outcome) for outcome in outcomes] == [0, 0, 1]
    table_id, _ = ids(program, "AclIngress.acl")
    direct = p4runtime_pb2.Entity()
    direct.direct_counter_entry.table_entry.table_id = table_id
    (cell,) = client.read([direct])
    assert (cell.direct_counter_entry.data.packet_count, cell.direct_counter_entry.data.byte_count) == (
        2,
        2 * len(denied),
    )
    counter_id = next(
        c.preamble.id for c in program.p4info.counters if c.preamble.name == "AclIngress.verdicts"
    )
    counter = p4runtime_pb2.Entity()
    counter.counter_entry.counter_id = counter_id
    cells = {e.counter_entry.index.index: e.counter_entry.data.packet_count for e in client.read([counter])}
    assert cells == {0: 1, 1: 2}
