"""The switch's forwarding loop on the language core's fused driver gives the general path's results.

``DataPlane._receive_fused`` must forward, count and drop exactly as a loop over the
pipeline's ``ingress``/``egress`` API (``ApiLoopDataPlane._receive_fast`` here) does.
Both run in-process on fake port sockets (no interfaces, no root): the card program's
vectors (tests/vectors/*.json) through the fused loop, and the same random frames through
both loops, comparing sent frames, switch counters, queue counters and contents, port
counters and the program's counters.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from port_sockets import PairSocket

from emulation.card_vectors import (
    Outcome,
    compile_card_or_reason,
    load_all,
    run_vector,
)
from p4switch.daemon import dataplane as switch_dataplane
from p4switch.daemon.dataplane import RX_BATCH, DataPlane
from p4switch.daemon.ports import (
    AUXDATA,
    MAX_FRAME_BYTES,
    TP_STATUS_VLAN_TPID_VALID,
    TP_STATUS_VLAN_VALID,
    Port,
    with_vlan_tag,
)
from p4switch.daemon.program import PipelineSlot

VECTOR_FILES = sorted((Path(__file__).resolve().parents[1] / "vectors").glob("*.json"))
VECTORS = load_all(VECTOR_FILES)
IDS = [f"{Path(v['file']).stem}:{v['name']}" for v in VECTORS]
PORTS = range(1, 9)
CPU_PORT = 64

PROGRAM, REASON = compile_card_or_reason()
pytestmark = pytest.mark.skipif(PROGRAM is None, reason=f"card program not compiled: {REASON}")


class ResultOnlyPipeline:
    """The pipeline seen through its ingress/egress API only (no fused driver): the general loop."""

    def __init__(self, pipeline: Any) -> None:
        self.ingress = pipeline.ingress
        self.egress = pipeline.egress


class ApiLoopDataPlane(DataPlane):
    """The data plane with a receive loop on the pipeline's ``ingress``/``egress`` API (no fused driver)."""

    def _receive(self, port: Port, pipeline: Any) -> None:
        if isinstance(pipeline, ResultOnlyPipeline):
            self._receive_fast(port, pipeline)
        else:
            super()._receive(port, pipeline)

    def _receive_fast(self, port: Port, pipeline: Any) -> None:
        """The per-frame path of ``_ingress`` and ``_egress_and_send`` inlined, in three phases.

        The reference the fused loop is held to: the same phases as ``_receive_fused`` on the
        pipeline's ``ingress``/``egress`` API, with the switch's own general per-frame steps:

        1. receive the whole batch in one system call (its frames arrive when they are read);
        2. run the pipeline over the batch; frames for an idle port without a rate limit go
           through egress at once and are collected in arrival order, all others (busy or
           rate-limited port, odd priority) take the queue path unchanged;
        3. send the collected frames, in order.

        Keeping the kernel's receive, the pipeline and the kernel's send each in one run
        keeps their code warm in the CPU caches, instead of alternating between them for
        every frame. Everything the loops touch is bound to a local first (much cheaper than
        an attribute or method look-up), and the port's rx_frames is added once per batch.
        """
        batch, read_ns = self._receive_batch(port)
        if not batch:
            return
        number = port.number
        now_us = (read_ns - self._clock_origin_ns) // 1000
        ingress, egress = pipeline.ingress, pipeline.egress
        admit, counters = self._admit, self.counters
        departures: list[tuple[int, bytes]] = []
        for frame in batch:
            if len(frame) < switch_dataplane.ETHERNET_HEADER_BYTES:
                counters.malformed += 1
                continue
            try:
                result = ingress(frame, number, now_us)
            except Exception as error:  # one bad packet must not stop the switch
                self._packet_error("ingress", number, frame, error)
                continue
            if getattr(result, "parser_error", 0):
                counters.parser_errors += 1
            if result.dropped:
                counters.ingress_drops += 1
                continue
            egress_port = result.egress_spec
            if not admit(egress_port, result.priority):
                self._enqueue(result, now_us)
                continue
            try:
                out = egress(result, egress_port, 0, 0, 0, now_us)
            except Exception as error:
                self._packet_error("egress", egress_port, b"", error)
                continue
            if out is None:
                counters.egress_drops += 1
                continue
            departures.append((egress_port, out))
        if departures:
            self._send_departures(departures)


class FakeClock:
    """A monotonic_ns that advances 1 µs per reading, so that both loops see the same times."""

    def __init__(self) -> None:
        self.now_ns = 1_000_000_000

    def __call__(self) -> int:
        self.now_ns += 1000
        return self.now_ns


class Switch:
    """A DataPlane over fake sockets with one card pipeline; ``fused`` picks the loop."""

    def __init__(self, fused: bool, priority_count: int = 4) -> None:
        self.pipeline = PROGRAM.new_pipeline()
        self.sockets = {number: PairSocket() for number in PORTS}
        self.ports = [Port(number, f"p{number}", self.sockets[number], True) for number in PORTS]
        self.slot = PipelineSlot()
        self.slot.pipeline = self.pipeline if fused else ResultOnlyPipeline(self.pipeline)
        self.packet_ins: list[bytes] = []
        self.dataplane = ApiLoopDataPlane(
            self.ports,
            self.slot,
            priority_count=priority_count,
            cpu_port=CPU_PORT,
            packet_in=self.packet_ins.append,
        )
        self.dataplane._clock_origin_ns = 0

    def receive(self, number: int, frames: list[bytes]) -> None:
        """Deliver frames on a port and run the loop's receive step over them, a batch at a time."""
        sock = self.sockets[number]
        port = next(p for p in self.ports if p.number == number)
        for start in range(0, len(frames), RX_BATCH):
            for frame in frames[start : start + RX_BATCH]:
                sock.feed(frame)
            while sock.waiting():
                self.dataplane._receive(port, self.slot.pipeline)

    def state(self) -> dict[str, Any]:
        """Everything observable: frames sent, counters of switch, queues, ports and program."""
        queued = {
            number: [
                [
                    (item.enq_qdepth, item.enq_time_us, item.state.egress_spec, item.state.priority)
                    for item in queue
                ]
                for queue in queues.queues
            ]
            for number, queues in self.dataplane.queues.items()
        }
        program_counters = {
            name: (list(counter.packets), list(counter.bytes))
            for name, counter in self.pipeline.counters.items()
        }
        return {
            "sent": {number: list(sock.sent) for number, sock in self.sockets.items()},
            "packet_in": list(self.packet_ins),
            "switch": self.dataplane.snapshot(),
            "queued": queued,
            "program": program_counters,
        }


@pytest.fixture()
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Make the loop's clock deterministic (one fresh clock per switch run)."""
    monkeypatch.setattr(switch_dataplane.time, "monotonic_ns", FakeClock())
    yield


class SwitchCard:
    """A vector runner's card on the fused loop: one frame in, the frames the switch sent out."""

    def __init__(self) -> None:
        self.switch = Switch(fused=True, priority_count=8)  # all priorities the card program sets
        self.param_names = {a.preamble.name: [p.name for p in a.params] for a in PROGRAM.p4info.actions}

    def _ordered(self, action: str, params: Mapping[str, int]) -> tuple[int, ...]:
        return tuple(int(params[name]) for name in self.param_names.get(action, []))

    def set_default(self, table: str, action: str, params: Mapping[str, int]) -> None:
        self.switch.pipeline.table_set_default(table, action, self._ordered(action, params))

    def insert(self, table: str, match: Mapping[str, Any], action: str, params: Mapping[str, int]) -> None:
        self.switch.pipeline.table_insert(table, dict(match), action, self._ordered(action, params))

    def send(
        self, frame: bytes, port: int, *, ingress_time_us: int, egress_time_us: int, enq_qdepth: int
    ) -> Outcome:
        before = {number: len(sock.sent) for number, sock in self.switch.sockets.items()}
        self.switch.receive(port, [frame])
        out = [
            (number, sock.sent[-1])
            for number, sock in self.switch.sockets.items()
            if len(sock.sent) > before[number]
        ]
        assert len(out) <= 1
        if not out:
            return Outcome(dropped=True)
        return Outcome(dropped=False, port=out[0][0], frame=out[0][1])

    def counter(self, name: str, index: int) -> tuple[int, int]:
        return self.switch.pipeline.counter_read(name, index)


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_vectors_through_the_fused_loop(vector: dict[str, Any], fixed_clock: None) -> None:
    """Every card vector gives its expected frames, drops and counters through the fused loop."""
    if any(step["port"] not in PORTS for step in vector["steps"]):
        pytest.skip("a step arrives on a port this fake switch does not have")
    run_vector(vector, SwitchCard, exact_time=False, in_process=False)  # runts never reach a switch


def install(pipeline: Any) -> None:
    """Entries of a card on a routed path: some routes, queues, a host port."""
    pipeline.table_set_default("MyIngress.card_config", "MyIngress.set_card", (7, 6))
    routes = {5: (5, 0), 6: (7, 1), 9: (40, 0), 12: (6, 2)}  # dst_pe: (port, vc); no port 40 on the switch
    for in_port in (1, 2, 3):
        for dst, params in routes.items():
            pipeline.table_insert(
                "MyIngress.route",
                {"standard_metadata.ingress_port": in_port, "hdr.tw.dst_pe": dst, "hdr.tw.rclass": 0},
                "MyIngress.set_route",
                params,
            )
    for vc, prio in ((0, 0), (1, 3), (2, 6)):  # priority 6 is out of range of the 4 queues
        pipeline.table_insert(
            "MyIngress.vc_queue", {"hdr.tw.rclass": 0, "hdr.tw.vc": vc}, "MyIngress.set_queue", (prio,)
        )
    pipeline.table_insert(
        "MyIngress.host_in", {"standard_metadata.ingress_port": 4}, "MyIngress.from_host", (11, 0)
    )
    pipeline.table_insert("MyEgress.host_out", {"standard_metadata.egress_port": 7}, "MyEgress.to_host", ())


def random_frame(rng: random.Random) -> bytes:
    """A twinnet or IPv4 frame with random fields, sometimes cut short or with random bytes."""
    kind = rng.random()
    if kind < 0.1:
        return bytes(rng.getrandbits(8) for _ in range(rng.randrange(14, 80)))
    ethernet = bytes.fromhex("020000000002020000000001")
    if kind < 0.3:
        ip = struct.pack(
            "!BBHHHBBHII", 0x45, 0, 40, 1, 0, 64, 17, 0, 0x0A000001, 0x0A000000 + rng.choice((1, 6, 9, 70000))
        )
        frame = ethernet + struct.pack("!H", 0x0800) + ip + bytes(20)
    else:
        trace_count = rng.choice((0, 0, 0, 1, 2, 5, 23, 24, 30))
        twinnet = struct.pack(
            "!HHBBBBHI",
            rng.choice((5, 5, 6, 6, 9, 12, 13)),
            1,
            rng.choice((0, 0, 0, 0x01, 0x01, 0x02, 0x10)),
            rng.choice((0, 0, 1, 1, 5, 6, 200)),
            trace_count,
            0,
            rng.choice((0x0800, 0)),
            rng.getrandbits(32),
        ) + rng.getrandbits(48).to_bytes(6, "big")
        trace = bytes(rng.getrandbits(8) for _ in range(16 * min(trace_count, 30)))
        frame = ethernet + struct.pack("!H", 0x88B5) + twinnet + trace + bytes(rng.randrange(0, 30))
    if rng.random() < 0.1:
        frame = frame[: rng.randrange(14, len(frame) + 1)]
    return frame


def run_switch(
    fused: bool, frames: list[tuple[int, bytes]], rate_port: int | None, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """The observable state after the frames went through one loop (fresh clock)."""
    monkeypatch.setattr(switch_dataplane.time, "monotonic_ns", FakeClock())
    switch = Switch(fused)
    install(switch.pipeline)
    if rate_port is not None:
        switch.dataplane.set_rate(10.0, rate_port)  # packets to it are queued, not sent at once
    for start in range(0, len(frames), RX_BATCH // 2):
        chunk = frames[start : start + RX_BATCH // 2]
        for number in PORTS:
            arriving = [frame for port, frame in chunk if port == number]
            if arriving:
                switch.receive(number, arriving)
    return switch.state()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("rate_port", [None, 7])
def test_random_frames_give_the_same_results(
    seed: int, rate_port: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random frames on several ports: fused and general loops agree on everything observable."""
    rng = random.Random(seed)
    frames = [(rng.choice((1, 2, 3, 1, 2, 4)), random_frame(rng)) for _ in range(600)]
    fused = run_switch(True, frames, rate_port, monkeypatch)
    general = run_switch(False, frames, rate_port, monkeypatch)
    assert fused == general
    sent = sum(len(frames) for frames in fused["sent"].values())
    counters = fused["switch"]["counters"]
    assert sent > 30 and counters["ingress_drops"] > 10 and counters["parser_errors"] > 0
    assert counters["unknown_port_drops"] > 0
    if rate_port is not None:
        assert sum(len(queue) for queue in fused["queued"][rate_port]) > 0


def test_a_crash_in_the_fused_loop_is_counted_and_logged_like_the_general_one(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """An exception in the generated ingress is counted and logged with the error and the packet.

    The fused loop runs ingress and egress in one call, so it names the pipeline as the stage.
    """
    messages = []
    for fused in (True, False):
        monkeypatch.setattr(switch_dataplane.time, "monotonic_ns", FakeClock())
        switch = Switch(fused)
        install(switch.pipeline)
        switch.pipeline.tables["MyIngress.route"].by_key = None  # makes the route lookup fail
        caplog.clear()
        twinnet = struct.pack("!HHBBBBHI", 5, 1, 0, 0, 0, 0, 0, 1) + bytes(6)
        frame = bytes.fromhex("02000000000202000000000188b5") + twinnet + bytes(30)
        switch.receive(1, [frame])
        assert switch.dataplane.counters.packet_errors == 1
        messages.append([record.getMessage() for record in caplog.records])
    assert "pipeline failed" in messages[0][0] and "ingress failed" in messages[1][0]
    assert messages[0][0].replace("pipeline failed", "ingress failed") == messages[1][0]


@pytest.mark.parametrize("fused", [True, False])
def test_a_frame_longer_than_the_receive_buffer_is_an_oversize_drop(fused: bool) -> None:
    """A truncated receive (MSG_TRUNC) is counted as received and dropped, never run cut short."""
    switch = Switch(fused)
    install(switch.pipeline)
    switch.receive(1, [bytes(MAX_FRAME_BYTES + 1), bytes(MAX_FRAME_BYTES + 4000)])
    counters = switch.dataplane.counters
    assert counters.oversize_drops == 2 and counters.malformed == 0 and counters.parser_errors == 0
    assert switch.ports[0].rx_frames == 2 and not any(sock.sent for sock in switch.sockets.values())


def test_the_vlan_tag_the_kernel_took_off_is_put_back() -> None:
    frame = bytes.fromhex("0200000000aa020000000001") + b"\x88\xb5" + bytes(20)
    tagged = AUXDATA.pack(TP_STATUS_VLAN_VALID | TP_STATUS_VLAN_TPID_VALID, 0, 0, 0, 0, 0x2064, 0x88A8)
    assert with_vlan_tag(frame, tagged) == frame[:12] + bytes.fromhex("88a82064") + frame[12:]
    old_kernel = AUXDATA.pack(TP_STATUS_VLAN_VALID, 0, 0, 0, 0, 5, 0)  # no TPID given: 802.1Q
    assert with_vlan_tag(frame, old_kernel) == frame[:12] + bytes.fromhex("81000005") + frame[12:]
    assert with_vlan_tag(frame, AUXDATA.pack(0, 0, 0, 0, 0, 0, 0)) == frame
