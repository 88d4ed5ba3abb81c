"""Digests on the embedded target: v1model ``digest()``, P4Info, DigestEntry, DigestList, DigestListAck.

tests/p4progs/digest.p4 sends ``learn_t {src, port}`` for an ethertype 0x88b5 frame and, from
the action of table ``watch``, ``seen_t {tag, eth, odd, delta}``. Expected samples are built
here from the frame's bytes and the entry's parameter, and the P4Info from the program's
declarations; the batching and acknowledgement rules are the P4Runtime specification's
(DigestEntry.Config), checked on the engine with a hand-driven clock and over gRPC.
"""

from __future__ import annotations

import queue
import time
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2
from port_sockets import PairSocket
from test_p4runtime_entities import code_of, entities_of
from test_target_replication import GeneralPathPipeline

from p4switch import compile_program
from p4switch.compiler.p4info import jenkins_one_at_a_time
from p4switch.daemon.dataplane import DataPlane
from p4switch.daemon.ports import Port
from p4switch.daemon.program import PipelineSlot
from p4switch.errors import P4CompileError
from p4switch.p4runtime.client import P4RuntimeClient, WriteFailure
from p4switch.p4runtime.info import P4RuntimeError
from p4switch.p4runtime.server import P4RuntimeService, start_p4runtime_server
from p4switch.runtime.digests import DigestConfig

PROGRAM_FILE = Path(__file__).resolve().parents[1] / "p4progs" / "digest.p4"
INSERT, MODIFY, DELETE = p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY, p4runtime_pb2.Update.DELETE
SECOND = 1_000_000_000


@pytest.fixture(scope="module")
def program():
    return compile_program(str(PROGRAM_FILE))


def frame(dst: int, src: int, ethertype: int, tag: int) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + ethertype.to_bytes(2, "big") + bytes([tag])


def learn_sample(packet: bytes, port: int) -> tuple:
    """learn_t of a frame: its source MAC (bytes 6..11) and the ingress port."""
    return (int.from_bytes(packet[6:12], "big"), port)


def seen_sample(packet: bytes, delta: int) -> tuple:
    """seen_t flattened: tag, the ethernet header (valid, dst, src, type), tag odd, delta."""
    tag = packet[14]
    dst, src, ethertype = (int.from_bytes(packet[a:b], "big") for a, b in ((0, 6), (6, 12), (12, 14)))
    return (tag, True, dst, src, ethertype, tag % 2 == 1, delta)


class Clock:
    """A clock the test moves by hand (ns)."""

    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


def pipeline_with_sink(program, clock=None):
    pipeline = program.new_pipeline()
    sent: list[tuple[str, int, list[tuple]]] = []
    if clock is not None:
        pipeline.digests.clock = clock
    pipeline.digests.sink = lambda name, list_id, samples, timestamp: (
        sent.append((name, list_id, samples)) or True
    )
    return pipeline, sent


def watch_entry(pipeline, tag: int, delta: int) -> None:
    pipeline.table_insert("I.watch", {"hdr.t.tag": tag}, "I.report", (delta & 0xFF,))


# ----- the pipeline ---------------------------------------------------------------------------------
def test_each_digest_carries_the_values_of_its_call(program) -> None:
    """learn_t from the frame and port; seen_t with the tag as the call saw it (the action zeroes it
    after), the whole ethernet header, the tag's parity and the entry's signed delta."""
    pipeline, sent = pipeline_with_sink(program)
    for name in ("learn_t", "seen_t"):
        pipeline.digests.configure(name, DigestConfig(0, 1, 0))
    watch_entry(pipeline, 0x15, -3)
    learn = frame(0xFFFFFFFFFFFF, 0x0A0B0C0D0E0F, 0x88B5, 0x00)
    seen = frame(0x010203040506, 0x0A0B0C0D0E0F, 0x0800, 0x15)
    assert pipeline.process(learn, 7) == [(1, learn)]
    assert pipeline.process(seen, 3) == [(1, seen)]
    assert sent == [("learn_t", 1, [learn_sample(learn, 7)]), ("seen_t", 1, [seen_sample(seen, -3)])]


def test_a_later_call_replaces_an_earlier_one_and_a_drop_still_sends(program) -> None:
    """As simple_switch (one learn id per packet): the action's digest replaces learn_t; a packet
    dropped by mark_to_drop still sends its digest (learning precedes the drop check)."""
    pipeline, sent = pipeline_with_sink(program)
    for name in ("learn_t", "seen_t"):
        pipeline.digests.configure(name, DigestConfig(0, 1, 0))
    watch_entry(pipeline, 0xFF, 5)
    both = frame(1, 2, 0x88B5, 0xFF)
    assert pipeline.process(both, 4) == []
    assert sent == [("seen_t", 1, [seen_sample(both, 5)])]


def test_a_digest_without_a_configuration_is_not_sent(program) -> None:
    pipeline, sent = pipeline_with_sink(program)
    pipeline.digests.configure("seen_t", DigestConfig(0, 1, 0))
    pipeline.process(frame(1, 2, 0x88B5, 0), 1)
    assert sent == [] and pipeline.digests.learned == 1


def test_lists_are_cut_by_size_and_by_timeout(program) -> None:
    """max_list_size 3: the third sample sends the three; max_timeout_ns: a lone sample waits until
    its first sample is that old."""
    clock = Clock()
    pipeline, sent = pipeline_with_sink(program, clock)
    pipeline.digests.configure("learn_t", DigestConfig(SECOND, 3, 0))
    packets = [frame(1, src, 0x88B5, 0) for src in (10, 11, 12, 13)]
    for packet in packets[:2]:
        pipeline.process(packet, 2)
    assert sent == []
    pipeline.process(packets[2], 2)
    assert sent == [("learn_t", 1, [learn_sample(p, 2) for p in packets[:3]])]
    pipeline.process(packets[3], 2)
    clock.now += SECOND - 1
    assert pipeline.digests.poll() == clock.now + 1  # the next thing to do: this list's timeout
    assert len(sent) == 1
    clock.now += 1
    pipeline.digests.poll()
    assert sent[1] == ("learn_t", 2, [learn_sample(packets[3], 2)])


def test_unacknowledged_data_is_not_sent_again_until_acked_or_timed_out(program) -> None:
    """Data equal to a sample of a list not yet acknowledged (or already buffered) is dropped; the
    ack releases it, and so does ack_timeout_ns without one; ack_timeout_ns 0 drops nothing."""
    clock = Clock()
    pipeline, sent = pipeline_with_sink(program, clock)
    digests = pipeline.digests
    digests.configure("learn_t", DigestConfig(0, 1, 5 * SECOND))
    a, b = frame(1, 0xA, 0x88B5, 0), frame(1, 0xB, 0x88B5, 0)
    for packet in (a, a, b):
        pipeline.process(packet, 1)
    assert sent == [("learn_t", 1, [learn_sample(a, 1)]), ("learn_t", 2, [learn_sample(b, 1)])]
    assert digests.suppressed == 1
    assert not digests.ack("learn_t", 9)  # no such list
    assert digests.ack("learn_t", 1)
    pipeline.process(a, 1)
    pipeline.process(b, 1)  # list 2 is still unacknowledged
    assert sent[2:] == [("learn_t", 3, [learn_sample(a, 1)])]
    clock.now += 5 * SECOND
    digests.poll()
    pipeline.process(b, 1)
    assert sent[3:] == [("learn_t", 4, [learn_sample(b, 1)])]
    digests.configure("learn_t", DigestConfig(SECOND, 10, SECOND))
    pipeline.process(a, 1)
    pipeline.process(a, 1)  # equal to buffered data
    clock.now += SECOND
    digests.poll()
    assert sent[4:] == [("learn_t", 5, [learn_sample(a, 1)])]
    digests.ack("learn_t", 5)
    digests.configure("learn_t", DigestConfig(SECOND, 10, 0))  # ack_timeout_ns 0: no deduplication
    pipeline.process(a, 1)
    pipeline.process(a, 1)
    clock.now += SECOND
    digests.poll()
    assert sent[5:] == [("learn_t", 6, [learn_sample(a, 1)] * 2)]
    digests.configure("learn_t", None)  # deleted and inserted again: list ids go on (as PI)
    digests.configure("learn_t", DigestConfig(0, 1, 0))
    pipeline.process(b, 1)
    assert sent[6:] == [("learn_t", 7, [learn_sample(b, 1)])]


@pytest.mark.parametrize("fused", [False, True])
def test_the_data_plane_learns_on_both_loops(program, fused: bool) -> None:
    """Frames through the switch's receive loop (fused driver, or the general loop) send digests."""
    pipeline, sent = pipeline_with_sink(program)
    pipeline.digests.configure("learn_t", DigestConfig(0, 1, 0))
    sockets = [PairSocket(), PairSocket()]
    ports = [Port(number, f"p{number}", sock, True) for number, sock in enumerate(sockets)]
    slot = PipelineSlot()
    slot.pipeline = pipeline if fused else GeneralPathPipeline(pipeline)
    dataplane = DataPlane(ports, slot)
    packet = frame(1, 0x123456, 0x88B5, 0)
    sockets[0].feed(packet)
    dataplane._receive(ports[0], slot.pipeline)
    assert sockets[1].sent == [packet]
    assert sent == [("learn_t", 1, [learn_sample(packet, 0)])]


# ----- the compiler and P4Info ------------------------------------------------------------------------
def test_p4info_lists_each_digest_as_p4c_does(program) -> None:
    """Named after the data's type, id prefix P4Ids.DIGEST with the name's hash, a struct type_spec,
    and type_info describing the structs and the header they hold."""
    info = program.p4info
    digests = {d.preamble.name: d for d in info.digests}
    assert sorted(digests) == ["learn_t", "seen_t"]
    for name, digest in digests.items():
        assert digest.preamble.id == (p4info_pb2.P4Ids.DIGEST << 24) | (
            jenkins_one_at_a_time(name) & 0xFFFFFF
        )
        assert digest.preamble.alias == name
        assert digest.type_spec.struct.name == name

    def members(struct: str) -> list:
        return [(m.name, m.type_spec.WhichOneof("type_spec")) for m in info.type_info.structs[struct].members]

    assert members("learn_t") == [("src", "bitstring"), ("port", "bitstring")]
    assert members("seen_t") == [
        ("tag", "bitstring"),
        ("eth", "header"),
        ("odd", "bool"),
        ("delta", "bitstring"),
    ]
    delta = info.type_info.structs["seen_t"].members[3].type_spec.bitstring
    assert delta.WhichOneof("type_spec") == "int" and delta.int.bitwidth == 8
    header = info.type_info.headers["ethernet_t"]
    assert [(m.name, m.type_spec.bit.bitwidth) for m in header.members] == [
        ("dst", 48),
        ("src", 48),
        ("type", 16),
    ]


@pytest.mark.parametrize(
    ("statement", "block", "words"),
    [
        ("digest(1, hdr.eth);", "E", "only possible in the ingress control"),
        ("digest(1, {hdr.eth.src});", "I", "needs its struct type"),
        ("digest(1, hdr.t.tag);", "I", "must be a struct or header, not bit<8>"),
    ],
)
def test_digests_it_cannot_send_are_refused_at_the_call(tmp_path: Path, statement, block, words) -> None:
    source = PROGRAM_FILE.read_text()
    marker = f"control {block}(inout H hdr, inout M m, inout standard_metadata_t sm) {{ apply {{ "
    if block == "I":
        marker = "        sm.egress_spec = 1;\n"
    assert marker in source
    path = tmp_path / "p.p4"
    path.write_text(source.replace(marker, marker + statement + "\n", 1))
    with pytest.raises(P4CompileError) as error:
        compile_program(str(path), use_disk_cache=False)
    line = next(n for n, text in enumerate(path.read_text().splitlines(), start=1) if statement in text)
    assert f"p.p4:{line}:" in str(error.value) and words in str(error.value)


# ----- P4Runtime -------------------------------------------------------------------------------------
def digest_update(kind: int, digest_id: int, config: tuple[int, int, int] | None) -> p4runtime_pb2.Update:
    update = p4runtime_pb2.Update(type=kind)
    update.entity.digest_entry.digest_id = digest_id
    if config is not None:
        c = update.entity.digest_entry.config
        c.max_timeout_ns, c.max_list_size, c.ack_timeout_ns = config
    return update


def digest_ids(program) -> dict[str, int]:
    return {d.preamble.name: d.preamble.id for d in program.p4info.digests}


def test_digest_entry_writes_have_the_specs_codes(program) -> None:
    """Unknown id: NOT_FOUND; INSERT twice: ALREADY_EXISTS; MODIFY or DELETE of an unconfigured
    digest: NOT_FOUND; no config or a negative value: INVALID_ARGUMENT; undo restores; a read of
    one digest that is not configured: NOT_FOUND."""
    entities = entities_of(program)
    learn = digest_ids(program)["learn_t"]
    unknown = max(digest_ids(program).values()) + 1
    assert code_of(entities, digest_update(INSERT, unknown, (0, 1, 0))) == code_pb2.NOT_FOUND
    assert code_of(entities, digest_update(MODIFY, learn, (0, 1, 0))) == code_pb2.NOT_FOUND
    assert code_of(entities, digest_update(DELETE, learn, None)) == code_pb2.NOT_FOUND
    assert code_of(entities, digest_update(INSERT, learn, None)) == code_pb2.INVALID_ARGUMENT
    assert code_of(entities, digest_update(INSERT, learn, (0, -1, 0))) == code_pb2.INVALID_ARGUMENT
    assert code_of(entities, digest_update(INSERT, learn, (5, 2, 7))) == code_pb2.OK
    assert code_of(entities, digest_update(INSERT, learn, (5, 2, 7))) == code_pb2.ALREADY_EXISTS
    undo = entities.write(digest_update(MODIFY, learn, (6, 3, 8)))
    assert entities.pipeline.digests.config("learn_t") == DigestConfig(6, 3, 8)
    undo()
    assert entities.pipeline.digests.config("learn_t") == DigestConfig(5, 2, 7)
    undo = entities.write(digest_update(DELETE, learn, None))
    assert entities.pipeline.digests.config("learn_t") is None
    undo()
    assert entities.pipeline.digests.config("learn_t") == DigestConfig(5, 2, 7)
    request = p4runtime_pb2.Entity()
    request.digest_entry.digest_id = digest_ids(program)["seen_t"]  # not configured: NOT_FOUND, as PI
    with pytest.raises(P4RuntimeError) as error:
        list(entities.read(request))
    assert error.value.code == code_pb2.NOT_FOUND


def next_digest(client: P4RuntimeClient, timeout: float = 5.0) -> p4runtime_pb2.DigestList:
    while True:
        message = client.stream_messages.get(timeout=timeout)
        assert message is not None, f"stream closed: {client.stream_error}"
        if message.HasField("digest"):
            return message.digest


def learn_data(packet: bytes, port: int) -> list[bytes]:
    """The P4Data bitstrings of learn_t, in the canonical (shortest) encoding."""
    return [
        int(value).to_bytes(max(1, (int(value).bit_length() + 7) // 8), "big")
        for value in learn_sample(packet, port)
    ]


def test_a_controller_configures_receives_and_acknowledges_digest_lists(program) -> None:
    """Over gRPC (loopback): nothing for an unconfigured digest; a DigestEntry written and read back;
    a list of two samples with their P4Data, list id and timestamp; a seen_t list with its header,
    bool and int members; data repeated before the ack is not sent, and is after the ack."""
    slot = PipelineSlot()
    server, port = start_p4runtime_server("127.0.0.1:0", P4RuntimeService(0, slot))
    client = P4RuntimeClient(f"127.0.0.1:{port}", 0, (0, 1))
    ids = digest_ids(program)
    try:
        assert client.arbitrate().status.code == code_pb2.OK
        client.set_pipeline(program.p4info, PROGRAM_FILE.read_bytes())
        pipeline = slot.pipeline
        a, b, c = (frame(0xFFFFFFFFFFFF, src, 0x88B5, 0) for src in (0x0A0000000001, 0x0B, 0x0C))

        def inject(packet: bytes, port: int = 3) -> None:
            with slot.control():
                pipeline.process(packet, port)

        inject(a)  # not configured yet: never sent
        with pytest.raises(WriteFailure) as failure:
            client.write([digest_update(INSERT, ids["learn_t"] + 1, (0, 1, 0))])
        assert [e.canonical_code for e in failure.value.errors] == [code_pb2.NOT_FOUND]
        client.write([digest_update(INSERT, ids["learn_t"], (60 * SECOND, 2, 60 * SECOND))])
        request = p4runtime_pb2.Entity()
        request.digest_entry.digest_id = 0
        (read,) = client.read([request])
        assert read.digest_entry.digest_id == ids["learn_t"]
        assert read.digest_entry.config.max_list_size == 2
        before = time.time_ns()
        inject(b)
        inject(c, 5)
        first = next_digest(client)
        assert first.digest_id == ids["learn_t"] and first.list_id == 1
        assert [[m.bitstring for m in d.struct.members] for d in first.data] == [
            learn_data(b, 3),
            learn_data(c, 5),
        ]
        assert before <= first.timestamp <= time.time_ns()

        client.write([digest_update(INSERT, ids["seen_t"], (0, 1, 0))])
        with slot.control():
            watch_entry(pipeline, 0x33, -128)
        seen = frame(0x010203040506, 0x0A0B0C0D0E0F, 0x0800, 0x33)
        inject(seen)
        (data,) = next_digest(client).data
        tag, eth, odd, delta = data.struct.members
        assert tag.bitstring == bytes([0x33]) and odd.bool is True and delta.bitstring == bytes([0x80])
        assert eth.header.is_valid and list(eth.header.bitstrings) == [seen[0:6], seen[6:12], seen[12:14]]

        # b and c wait for the ack of list 1: a new b is dropped, a and b make list 2 after the ack
        inject(b)
        inject(a)
        request = p4runtime_pb2.StreamMessageRequest()
        request.digest_ack.digest_id, request.digest_ack.list_id = ids["learn_t"], 1
        client._requests.put(request)
        second = None
        deadline = time.monotonic() + 5
        while second is None and time.monotonic() < deadline:
            inject(b)  # dropped until the ack is in; then it completes list 2
            try:
                second = next_digest(client, timeout=0.02)
            except queue.Empty:
                continue
        assert second is not None and second.list_id == 2
        assert [[m.bitstring for m in d.struct.members] for d in second.data] == [
            learn_data(a, 3),
            learn_data(b, 3),
        ]
    finally:
        client.close()
        server.stop(grace=0).wait(5)


def test_a_write_of_a_digest_entry_needs_the_primary(program) -> None:
    """A backup controller's DigestEntry write is PERMISSION_DENIED, as every Write."""
    slot = PipelineSlot()
    server, port = start_p4runtime_server("127.0.0.1:0", P4RuntimeService(0, slot))
    primary = P4RuntimeClient(f"127.0.0.1:{port}", 0, (0, 2))
    backup = P4RuntimeClient(f"127.0.0.1:{port}", 0, (0, 1))
    try:
        primary.arbitrate()
        backup.arbitrate()
        primary.set_pipeline(program.p4info, PROGRAM_FILE.read_bytes())
        with pytest.raises(WriteFailure) as failure:
            backup.write([digest_update(INSERT, digest_ids(program)["learn_t"], (0, 1, 0))])
        assert failure.value.code == grpc.StatusCode.PERMISSION_DENIED
    finally:
        backup.close()
        primary.close()
        server.stop(grace=0).wait(5)
