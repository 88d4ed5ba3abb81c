"""The packet replication engine: multicast, clone (I2E, E2E), resubmit, recirculate and truncate.

tests/p4progs/replication.stf holds frames worked out by hand from simple_switch's rules
(one packet kind per rule); it runs on the STF runner's two paths and through the switch's
data plane (both loops, fake port sockets). The P4Runtime PacketReplicationEngineEntry
writes are checked against the error codes the P4Runtime specification gives for them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from port_sockets import PairSocket
from test_p4runtime_entities import code_of, entities_of  # the same helpers as the other entity tests

from p4switch import compile_program
from p4switch.daemon.dataplane import DataPlane
from p4switch.daemon.ports import Port
from p4switch.daemon.program import PipelineSlot
from p4switch.errors import EntryError
from p4switch.p4runtime.entities import PipelineEntities
from p4switch.runtime.replication import CloneSession, MulticastGroup, Replica, ReplicationEngine
from p4switch.stf.runner import StfRun, run_stf
from p4switch.stf.script import read_stf

PROGS = Path(__file__).resolve().parents[1] / "p4progs"
PROGRAM_FILE, STF_FILE = PROGS / "replication.p4", PROGS / "replication.stf"
INSERT, MODIFY, DELETE = p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY, p4runtime_pb2.Update.DELETE


@pytest.fixture(scope="module")
def program():
    return compile_program(str(PROGRAM_FILE))


@pytest.mark.parametrize("fused", [False, True])
def test_the_hand_worked_frames_on_both_paths(program, fused: bool) -> None:
    """Every expected frame of replication.stf arrives, and nothing else."""
    result = run_stf(program, read_stf(STF_FILE), str(STF_FILE), fused=fused)
    assert result.passed, result.report()


# ----- the data plane -------------------------------------------------------------------------
class GeneralPathPipeline:
    """The pipeline without its fused driver: the data plane takes its general loop."""

    def __init__(self, pipeline: Any) -> None:
        self.pipeline = pipeline

    def __getattr__(self, name: str) -> Any:
        if name == "fused_entry_point":
            raise AttributeError(name)
        return getattr(self.pipeline, name)


@pytest.mark.parametrize("fused", [False, True])
def test_the_data_plane_replicates_as_the_stf_expects(program, fused: bool) -> None:
    """The STF's packets through the switch's receive loop: per port, the STF's expected frames."""
    commands = read_stf(STF_FILE)
    run = StfRun(program, str(STF_FILE), fused)  # the STF's groups and sessions, on run.pipeline
    sockets = {number: PairSocket() for number in range(5)}
    ports = [Port(number, f"p{number}", sock, True) for number, sock in sockets.items()]
    slot = PipelineSlot()
    slot.pipeline = run.pipeline if fused else GeneralPathPipeline(run.pipeline)
    dataplane = DataPlane(ports, slot)
    expected: dict[int, list] = {number: [] for number in sockets}
    for command in commands:
        if command.verb == "packet":
            sockets[command.args["port"]].feed(command.args["data"])
            dataplane._receive(ports[command.args["port"]], slot.pipeline)
        elif command.verb == "expect":
            expected[command.args["expected"].port].append(command.args["expected"])
        else:
            getattr(run, f"_do_{command.verb}")(command)
    for number, sock in sockets.items():
        assert len(sock.sent) == len(expected[number]), f"port {number}: {[f.hex() for f in sock.sent]}"
        for want, got in zip(expected[number], sock.sent, strict=True):
            assert want.matches(got), f"port {number}: expected {want.text()}, got {got.hex()}"
    assert dataplane.counters.packet_errors == 0


# ----- the engine -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "write",
    [
        lambda pre: pre.set_group(MulticastGroup(0, ())),  # 0 is no multicast
        lambda pre: pre.set_group(MulticastGroup(1 << 16, ())),  # mcast_grp is bit<16>
        lambda pre: pre.set_group(MulticastGroup(1, (Replica(511),))),  # the drop port
        lambda pre: pre.set_group(MulticastGroup(1, (Replica(1, 1 << 16),))),  # egress_rid is bit<16>
        lambda pre: pre.set_group(MulticastGroup(1, (Replica(1, 2), Replica(1, 2)))),
        lambda pre: pre.set_session(CloneSession(0, ())),
        lambda pre: pre.set_session(CloneSession(1, (), class_of_service=8)),  # priority is bit<3>
        lambda pre: pre.remove_group(3),
        lambda pre: pre.remove_session(3),
    ],
)
def test_the_engine_refuses_what_v1model_cannot_carry(write) -> None:
    pre = ReplicationEngine()
    with pytest.raises(EntryError):
        write(pre)
    assert pre.groups == {} and pre.sessions == {}


def test_an_unprogrammed_group_drops_and_an_unprogrammed_session_clones_nothing(program) -> None:
    """simple_switch: mcast_grp not in the PRE drops the packet; a clone to no session makes none."""
    pipeline = program.new_pipeline()
    multicast = bytes([2, 5, 0, 0, 0, 0, 0, 0, 0xEE])
    assert pipeline.replicate(pipeline.ingress(multicast, 0)) == []
    clone = bytes([3, 5, 0, 0, 0, 0, 0, 0, 0xEE])
    copies = pipeline.replicate(pipeline.ingress(clone, 0))
    assert [copy.egress_spec for copy in copies] == [2]  # the original only


# ----- P4Runtime ----------------------------------------------------------------------------------
def group_update(kind: int, group_id: int, replicas=(), metadata: bytes = b"") -> p4runtime_pb2.Update:
    message = p4runtime_pb2.Update(type=kind)
    entry = message.entity.packet_replication_engine_entry.multicast_group_entry
    entry.multicast_group_id = group_id
    entry.metadata = metadata
    for port, instance in replicas:
        entry.replicas.add(port=port.to_bytes(2, "big"), instance=instance)
    return message


def session_update(
    kind: int, session_id: int, replicas=(), cos: int = 0, length: int = 0
) -> p4runtime_pb2.Update:
    message = p4runtime_pb2.Update(type=kind)
    entry = message.entity.packet_replication_engine_entry.clone_session_entry
    entry.session_id = session_id
    entry.class_of_service = cos
    entry.packet_length_bytes = length
    for port, instance in replicas:
        entry.replicas.add(egress_port=port, instance=instance)
    return message


def read_all(entities: PipelineEntities, kind: str) -> list:
    request = p4runtime_pb2.Entity()
    getattr(request.packet_replication_engine_entry, kind).SetInParent()
    return [getattr(e.packet_replication_engine_entry, kind) for e in entities.read(request)]


def test_multicast_group_writes_have_the_specs_codes(program) -> None:
    """P4Runtime spec, MulticastGroupEntry: id 0, bad instance or port, duplicate pair: INVALID_ARGUMENT;
    backup replicas (not supported here): UNIMPLEMENTED; INSERT twice: ALREADY_EXISTS; MODIFY or
    DELETE of a missing group: NOT_FOUND."""
    entities = entities_of(program)
    assert code_of(entities, group_update(INSERT, 0, [(1, 0)])) == code_pb2.INVALID_ARGUMENT
    assert code_of(entities, group_update(INSERT, 7, [(1, 1 << 16)])) == code_pb2.INVALID_ARGUMENT
    assert code_of(entities, group_update(INSERT, 7, [(600, 0)])) == code_pb2.INVALID_ARGUMENT
    assert code_of(entities, group_update(INSERT, 7, [(1, 3), (1, 3)])) == code_pb2.INVALID_ARGUMENT
    backup = group_update(INSERT, 7, [(1, 0)])
    backup.entity.packet_replication_engine_entry.multicast_group_entry.replicas[0].backup_replicas.add(
        port=b"\x02"
    )
    assert code_of(entities, backup) == code_pb2.UNIMPLEMENTED
    assert code_of(entities, group_update(MODIFY, 7, [(1, 0)])) == code_pb2.NOT_FOUND
    assert code_of(entities, group_update(DELETE, 7)) == code_pb2.NOT_FOUND
    assert entities.pipeline.pre.groups == {} and read_all(entities, "multicast_group_entry") == []
    assert code_of(entities, group_update(INSERT, 7, [(1, 9)], b"cookie")) == code_pb2.OK
    assert code_of(entities, group_update(INSERT, 7, [(1, 9)])) == code_pb2.ALREADY_EXISTS
    (read,) = read_all(entities, "multicast_group_entry")
    assert (
        read
        == group_update(
            INSERT, 7, [(1, 9)], b"cookie"
        ).entity.packet_replication_engine_entry.multicast_group_entry
    )


def test_a_written_group_replicates_and_a_rolled_back_one_is_gone(program) -> None:
    """The group written over P4Runtime is the one ingress replicates to; undo restores the previous."""
    entities = entities_of(program)
    entities.write(group_update(INSERT, 7, [(3, 21), (1, 22)]))
    undo = entities.write(group_update(MODIFY, 7, [(4, 23)]))
    pipeline = entities.pipeline
    multicast = bytes([2, 5, 0, 0, 0, 0, 0, 0, 0xEE])

    def copies() -> list[tuple[int, int]]:
        results = pipeline.replicate(pipeline.ingress(multicast, 0))
        return [(r.egress_spec, pipeline.egress(r, r.egress_spec)[4]) for r in results]  # byte 4: egress_rid

    assert copies() == [(4, 23)]
    undo()
    assert copies() == [(3, 21), (1, 22)]
    entities.write(group_update(DELETE, 7))
    assert copies() == []


def test_clone_session_writes_have_the_specs_codes_and_truncate(program) -> None:
    """CloneSessionEntry: id 0 or a class of service beyond bit<3>: INVALID_ARGUMENT; a session with
    packet_length_bytes truncates its clones (here to 4 bytes) and not the original."""
    entities = entities_of(program)
    assert code_of(entities, session_update(INSERT, 0, [(4, 0)])) == code_pb2.INVALID_ARGUMENT
    assert code_of(entities, session_update(INSERT, 5, [(4, 0)], cos=8)) == code_pb2.INVALID_ARGUMENT
    assert code_of(entities, session_update(DELETE, 5)) == code_pb2.NOT_FOUND
    assert code_of(entities, session_update(INSERT, 5, [(4, 0)], length=4)) == code_pb2.OK
    assert len(read_all(entities, "clone_session_entry")) == 1
    pipeline = entities.pipeline
    clone = bytes([3, 5, 0, 0, 0, 0, 0, 0, 0xEE])
    results = pipeline.replicate(pipeline.ingress(clone, 0))
    frames = {r.egress_spec: pipeline.egress(r, r.egress_spec) for r in results}
    assert frames == {4: bytes([3, 5, 0, 1]), 2: bytes([3, 0x11, 0, 0, 0, 0, 0, 0, 0xEE])}


def test_the_switchs_p4runtime_server_serves_the_replication_engine(program) -> None:
    """Over gRPC (loopback): a group and a session written, read back, and used by the pipeline the
    server installed; a batch with a bad group is refused with INVALID_ARGUMENT in its error details."""
    import grpc

    from p4switch.daemon.program import PipelineSlot
    from p4switch.p4runtime.client import P4RuntimeClient, WriteFailure
    from p4switch.p4runtime.server import P4RuntimeService, start_p4runtime_server

    slot = PipelineSlot()
    server, port = start_p4runtime_server("127.0.0.1:0", P4RuntimeService(0, slot))
    client = P4RuntimeClient(f"127.0.0.1:{port}", 0, (0, 1))
    try:
        assert client.arbitrate().status.code == code_pb2.OK
        client.set_pipeline(program.p4info, PROGRAM_FILE.read_bytes())
        client.write([group_update(INSERT, 7, [(3, 21), (1, 22)]), session_update(INSERT, 5, [(4, 0)])])
        with pytest.raises(WriteFailure) as failure:
            client.write([group_update(INSERT, 8, [(1, 2), (1, 2)])])
        assert failure.value.code == grpc.StatusCode.UNKNOWN
        assert [e.canonical_code for e in failure.value.errors] == [code_pb2.INVALID_ARGUMENT]
        request = p4runtime_pb2.Entity()
        request.packet_replication_engine_entry.multicast_group_entry.SetInParent()
        (read,) = client.read([request])
        assert [r.instance for r in read.packet_replication_engine_entry.multicast_group_entry.replicas] == [
            21,
            22,
        ]
        pipeline = slot.pipeline
        results = pipeline.replicate(pipeline.ingress(bytes([2, 5, 0, 0, 0, 0, 0, 0, 0xEE]), 0))
        assert [r.egress_spec for r in results] == [3, 1]
        results = pipeline.replicate(pipeline.ingress(bytes([3, 5, 0, 0, 0, 0, 0, 0, 0xEE]), 0))
        assert sorted(r.egress_spec for r in results) == [2, 4]
    finally:
        client.close()
        server.stop(grace=0).wait(5)


def test_process_gives_every_copy(program) -> None:
    """``Pipeline.process`` (both halves, empty queues) replicates too: a group of three replicas gives
    three frames, each with its replica's egress_rid (byte 4) and instance_type 5 (byte 3); an
    egress clone gives the original and its copy."""
    pipeline = program.new_pipeline()
    pipeline.pre.set_group(MulticastGroup(7, (Replica(1, 300), Replica(3, 300), Replica(4, 301))))
    pipeline.pre.set_session(CloneSession(6, (Replica(3),)))
    frames = pipeline.process(bytes([2, 5, 0, 0, 0, 0, 0, 0, 0xEE]), 0)
    assert [(port, frame[3], frame[4]) for port, frame in frames] == [
        (1, 5, 300 % 256),
        (3, 5, 300 % 256),
        (4, 5, 301 % 256),
    ]
    frames = pipeline.process(bytes([6, 5, 0, 0, 0, 0, 0, 0, 0xEE]), 0)
    assert [(port, frame[3]) for port, frame in frames] == [(2, 0), (3, 2)]


MULTICAST_ONLY = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> rid; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply { mark_to_drop(sm); if (hdr.h.a == 1) { sm.mcast_grp = 3; } }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { hdr.h.rid = sm.egress_rid[7:0]; } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.mark.parametrize("fused", [False, True])
def test_multicast_after_mark_to_drop_on_a_program_with_the_fused_driver(tmp_path, fused: bool) -> None:
    """mark_to_drop (egress_spec 511, mcast_grp 0) then mcast_grp = 3: simple_switch replicates (its
    multicast check comes before the drop check); a = 2 stays dropped. Group 3: port 5 rid 9, port 6 rid 8."""
    (tmp_path / "p.p4").write_text(MULTICAST_ONLY)
    stf = "mc_mgrp_create 3\nmc_node_create 9 5\nmc_node_create 8 6\n"
    stf += "mc_node_associate 3 0\nmc_node_associate 3 1\n"
    stf += "packet 1 01 00\nexpect 5 01 09$\nexpect 6 01 08$\npacket 1 02 00\n"
    (tmp_path / "t.stf").write_text(stf)
    compiled = compile_program(tmp_path / "p.p4", use_disk_cache=False)
    assert not compiled.model.uses_special_ops  # the fused driver is the optimised one
    result = run_stf(compiled, read_stf(tmp_path / "t.stf"), "t.stf", fused=fused)
    assert result.passed, result.report()
