"""A card's data plane: its ports, queues and counters, served by the forwarding loop (loop.py).

Everything that touches the pipeline runs in the loop's one thread, with the card's
pipeline slot lock held per batch (the language core is not thread-safe; P4Runtime
writes wait at most one batch). One batch of a card (``serve``), after the loop's
``epoll`` over all port sockets (and a wake-up pipe) with a timeout that is the time
until the next rate-limited port of any card may send:

1. PFC timers, and the flush of the queues after a new pipeline;
2. for each readable port, up to ``RX_BATCH`` frames: ingress, then the priority queues
   of the egress port (tail drop when full); the batch is received first, then run
   through the pipeline, then the frames for idle ports are sent, in order;
3. every port with a backlog sends what its rate allows; the egress stage runs at
   dequeue (v1model: after the traffic manager), given enq_qdepth (packets queued on the
   port when this one arrived), deq_qdepth (packets left after it) and deq_timedelta.
   A packet for an idle port without a rate limit goes through egress at once (depths 0),
   as it would leave an empty queue at once.

In lossless mode (``pfc`` given, p4switch.daemon.pfc) every frame takes the general path:
PFC frames are consumed before the pipeline, queued frames are counted per (ingress
port, class), paused (egress port, priority) queues are skipped, and the loop also wakes
for the next pause expiry or renewal.

A single-card switch runs its own loop (``start()``); a multi-card process one loop for all
its cards (p4switch.daemon.host). Keeping it in one thread avoids hand-offs between
threads on the hot path (Python's GIL makes them expensive); rate-limited ports make
the loop sleep exactly until the next departure.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from p4switch.daemon import packet_io
from p4switch.daemon.loop import MAX_POLL_MS, ForwardingLoop
from p4switch.daemon.pfc import NOMINAL_FRAME_BITS, PfcSettings, PfcState, interface_mac
from p4switch.daemon.ports import (
    ANCILLARY_BYTES,
    MAX_FRAME_BYTES,
    PACKET_OUTGOING,
    TP_STATUS_VLAN_VALID,
    Port,
    with_vlan_tag,
)
from p4switch.daemon.program import PipelineSlot
from p4switch.daemon.queues import DEFAULT_QUEUE_DEPTH, PortQueues, QueuedPacket
from p4switch.runtime.pipeline import IngressResult, stage_error

log = logging.getLogger("twinnet.switch.dataplane")

RX_BATCH = 64  # at most packet_io.MAX_BATCH
ETHERNET_HEADER_BYTES = 14
MAX_LOGGED_ERRORS = 100
MSG_TRUNC = 0x20
#: Lossless mode: frames a port sends per loop iteration, so that a pause received is acted on
#: after at most this many more frames even on a port without a rate limit (PFC headroom).
PFC_TX_BURST = 16


class DataPlaneCounters:
    """Switch-wide counters of frames that left the normal path."""

    __slots__ = (
        "malformed",
        "oversize_drops",
        "parser_errors",
        "packet_errors",
        "ingress_drops",
        "egress_drops",
        "no_pipeline_drops",
        "unknown_port_drops",
        "flushed_on_reconfig",
    )

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, 0)

    def snapshot(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


class FusedPathHooks:
    """What the fused driver reports (p4switch.runtime.pipeline.FusedHooks): counted, or queued."""

    def __init__(self, dataplane: DataPlane) -> None:
        self.dataplane = dataplane
        self.counters = dataplane.counters

    def parser_error(self, code: int) -> None:
        self.counters.parser_errors += 1

    def ingress_drop(self) -> None:
        self.counters.ingress_drops += 1

    def egress_drop(self) -> None:
        self.counters.egress_drops += 1

    def queue(self, egress_port: int, priority: int, state: Any, timestamp_us: int) -> None:
        """A packet for a busy, rate-limited or unknown port: into its queue (tail drop when full)."""
        sm = state[2]
        pipeline = self.dataplane.slot.pipeline
        if sm.f_mcast_grp or getattr(pipeline, "special_ops", False):  # the replication engine decides
            copies = pipeline.replicate(pipeline.result_of(state))
            if not copies:
                self.counters.ingress_drops += 1
            self.dataplane._fan_out(pipeline, copies, timestamp_us)
            return
        result = IngressResult(
            False, egress_port, priority, sm.f_packet_length, sm.f_mcast_grp, state, sm.f_parser_error
        )
        self.dataplane._enqueue(result, timestamp_us)


def held_from(queue: Iterable[QueuedPacket]) -> list[list[int]]:
    """[ingress port, arrival class, frames] of what waits in one queue (lossless accounting)."""
    counts: dict[tuple[int, int], int] = {}
    for item in list(queue):  # list() copies under the GIL: the data plane thread may be appending
        key = (item.ingress, item.arrival_class)
        counts[key] = counts.get(key, 0) + 1
    return [[port, cls, count] for (port, cls), count in sorted(counts.items())]


class DataPlane:
    """Ports, their priority queues and the forwarding thread."""

    def __init__(
        self,
        ports: list[Port],
        slot: PipelineSlot,
        priority_count: int = 1,
        queue_depth: int = DEFAULT_QUEUE_DEPTH,
        cpu_port: int | None = None,
        packet_in: Callable[[bytes], None] | None = None,
        on_failure: Callable[[str], None] | None = None,
        pfc: PfcSettings | None = None,
    ) -> None:
        self.ports = {port.number: port for port in ports}
        self.slot = slot
        self.queues = {number: PortQueues(number, priority_count, queue_depth) for number in self.ports}
        self.cpu_port = cpu_port
        self.packet_in = packet_in
        if cpu_port is not None and packet_in is not None:
            self.queues[cpu_port] = PortQueues(cpu_port, priority_count, queue_depth)
        self.counters = DataPlaneCounters()
        self.hooks = FusedPathHooks(self)
        self.pfc: PfcState | None = None
        self._rx_port = -1
        self._rx_frame = b""
        if pfc is not None:
            self.pfc = PfcState(
                pfc,
                {number: interface_mac(port.interface) for number, port in self.ports.items()},
                self._send_control,
                self._link_bps,
            )
            self._admit = self._admit_lossless  # type: ignore[method-assign]
        self._injected: deque[bytes] = deque()
        self._active: set[int] = set()
        #: the forwarding loop that serves this card (its own, made by ``start()``, or a process's shared one)
        self.loop: ForwardingLoop | None = None
        self._own_loop = False
        self._on_failure = on_failure
        #: why this card stopped forwarding without its loop failing ("killed")
        self.stopped_reason: str | None = None
        self._generation = -1
        self._clock_origin_ns = time.monotonic_ns()

    # ----- control ---------------------------------------------------------------------------
    @property
    def failure(self) -> str | None:
        """Why the card stopped forwarding, if not by ``stop()``: its loop's failure, or "killed"."""
        loop = self.loop
        if loop is not None and loop.failure is not None:
            return loop.failure
        return self.stopped_reason

    def start(self) -> None:
        """Forward in a loop of this card's own (a single-card switch)."""
        loop = ForwardingLoop(on_failure=self._on_failure)
        loop.add(self)
        self._own_loop = True
        loop.start()

    def alive(self) -> bool:
        """Whether the forwarding loop runs for this card (started, not stopped, failed or killed)."""
        loop = self.loop
        return loop is not None and loop.alive() and self.stopped_reason is None

    def stop(self) -> None:
        """Stop this card's own loop (a card of a shared loop is stopped with the loop)."""
        if self._own_loop and self.loop is not None:
            self.loop.stop()
            self._own_loop = False

    def wake(self) -> None:
        """Make the loop re-read rates and injected packets now."""
        if self.loop is not None:
            self.loop.wake()

    def discard(self) -> None:
        """The card fails (killed): its queued frames are discarded and its ports closed; loop thread only."""
        self.stopped_reason = self.stopped_reason or "killed"
        for queues in self.queues.values():
            while queues.dequeue() is not None:
                pass
        self._active.clear()
        self._injected.clear()
        for port in self.ports.values():
            port.close()

    def inject(self, frame: bytes) -> None:
        """Queue a frame as if received on the CPU port (a P4Runtime packet-out)."""
        if self.stopped_reason is not None:
            return
        self._injected.append(frame)
        if self.loop is not None:
            self.loop.pending.add(self)
            self.loop.wake()

    def set_rate(self, rate_pps: float | None, port: int | None = None) -> None:
        for number in self._port_numbers(port):
            self.queues[number].set_rate(rate_pps)
        self.wake()

    def set_depth(self, depth: int, port: int | None = None) -> None:
        for number in self._port_numbers(port):
            self.queues[number].set_depth(depth)

    def _port_numbers(self, port: int | None) -> list[int]:
        if port is None:
            return list(self.queues)
        if port not in self.queues:
            raise KeyError(f"no port {port}")
        return [port]

    def snapshot(self) -> dict[str, Any]:
        ports = []
        now = time.monotonic()
        for number in sorted(self.queues):
            entry = self.queues[number].snapshot()
            port = self.ports.get(number)
            entry.update(port.snapshot() if port is not None else {"interface": "cpu"})
            if self.pfc is not None:
                entry["pfc"] = self.pfc.snapshot(number, now)
                for row, queue in zip(entry["queues"], self.queues[number].queues, strict=True):
                    row["held_from"] = held_from(queue)
            ports.append(entry)
        answer: dict[str, Any] = {
            "ports": ports,
            "counters": self.counters.snapshot(),
            "dataplane": self.health(),
        }
        if self.pfc is not None:
            settings = self.pfc.settings
            answer["lossless"] = {
                "xoff_frames": settings.xoff,
                "xon_frames": settings.xon,
                "headroom_frames": settings.headroom,
                "link_bps_unlimited_ports": settings.link_bps,
            }
        return answer

    def health(self) -> dict[str, Any]:
        """Whether the forwarding loop runs, why it stopped, and the age of its heartbeat (s)."""
        loop = self.loop
        return {
            "alive": self.alive(),
            "failure": self.failure,
            "beat_age_s": loop.beat_age() if loop is not None else None,
        }

    # ----- lossless (PFC) hooks ------------------------------------------------------------------
    def _send_control(self, number: int, frame: bytes) -> None:
        port = self.ports.get(number)
        if port is not None and port.sock is not None:
            port.send(frame)

    def _link_bps(self, number: int) -> float:
        """A port's link rate for PFC quanta: its packet rate in nominal frames, else the unlimited rate."""
        rate = self.queues[number].rate_pps
        return rate * NOMINAL_FRAME_BITS if rate else self.pfc.settings.link_bps

    def _admit_lossless(self, egress_port: int, priority: int) -> bool:
        """``_admit``, and the (egress port, priority) is not paused by the peer."""
        if self.pfc.paused_masks.get(egress_port, 0) >> priority & 1:
            return False
        return DataPlane._admit(self, egress_port, priority)

    def _receive_lossless(self, port: Port, pipeline: Any) -> None:
        """A batch of frames: PFC frames acted on and consumed, the others through ``_ingress``."""
        number = port.number
        pfc = self.pfc
        now = time.monotonic()
        pcap = port.pcap_in
        for frame in self._receive_batch(port)[0]:
            if pcap is not None:
                pcap.write(frame)
            if pfc.receive(number, frame, now):
                continue
            self._rx_port, self._rx_frame = number, frame
            self._ingress(pipeline, frame, number)

    # ----- the loop --------------------------------------------------------------------------
    def _now_us(self) -> int:
        return (time.monotonic_ns() - self._clock_origin_ns) // 1000

    def serve(self, ports: list[Port]) -> int:
        """One batch of this card (called by the forwarding loop): PFC timers, a new pipeline's flush,
        the readable ``ports``, injected frames, then the queues; with the pipeline lock held.

        Returns the number of control-plane threads waiting for the lock (the loop then yields).
        """
        slot = self.slot
        with slot.lock:
            pipeline = slot.pipeline
            if self.pfc is not None:
                self.pfc.tick(time.monotonic())
            if slot.generation != self._generation:
                self._flush_queues()
                self._generation = slot.generation
            for port in ports:
                self._receive(port, pipeline)
            if self._injected:
                self._receive_injected(pipeline)
            if self._active:
                self._transmit(pipeline)
        return slot.control_waiting

    def has_work(self) -> bool:
        """Whether the loop must serve this card again without a readable port (queues, injected, PFC)."""
        if self._active or self._injected:
            return True
        pfc = self.pfc
        return pfc is not None and pfc.next_deadline() is not None

    def _timeout_ms(self) -> int:
        pfc = self.pfc
        if pfc is None:
            if not self._active:
                return MAX_POLL_MS
            now = time.monotonic()
            wait = min((self.queues[number].wait_time(now) or 0.0) for number in self._active)
            return min(MAX_POLL_MS, int(wait * 1000) + (1 if wait > 0 else 0))
        now = time.monotonic()
        waits = [
            self.queues[number].wait_time(now) or 0.0
            for number in self._active
            if self.queues[number].sendable(pfc.paused_masks.get(number, 0))
        ]
        deadline = pfc.next_deadline()
        if deadline is not None:
            waits.append(max(0.0, deadline - now))
        if not waits:
            return MAX_POLL_MS
        wait = min(waits)
        return min(MAX_POLL_MS, int(wait * 1000) + (1 if wait > 0 else 0))

    def _flush_queues(self) -> None:
        for queues in self.queues.values():
            while queues.dequeue() is not None:
                self.counters.flushed_on_reconfig += 1
        self._active.clear()
        if self.pfc is not None:
            self.pfc.reset_held()

    def _receive(self, port: Port, pipeline: Any) -> None:
        """Up to RX_BATCH frames from one port, each through ingress and on to its egress port.

        The common case (the kernel drops our own outgoing copies, no pcap, a language-core
        pipeline loaded) takes ``_receive_fused``; lossless mode ``_receive_lossless``;
        anything else (including a pipeline without a fused driver, such as the tests'
        stand-in) the general loop below, which hands every frame to ``_ingress``.
        """
        if self.pfc is not None and port.ignores_outgoing:
            self._receive_lossless(port, pipeline)
            return
        if port.ignores_outgoing and port.pcap_in is None and pipeline is not None:
            fused_entry_point = getattr(pipeline, "fused_entry_point", None)
            if fused_entry_point is not None:
                self._receive_fused(port, fused_entry_point())
                return
        recvmsg = port.sock.recvmsg
        number = port.number
        filter_outgoing = not port.ignores_outgoing
        pcap = port.pcap_in
        for _ in range(RX_BATCH):
            try:
                frame, ancillary, flags, address = recvmsg(MAX_FRAME_BYTES, ANCILLARY_BYTES)
            except BlockingIOError:
                return
            except OSError as error:
                log.warning("port %d (%s): receive failed: %s", number, port.interface, error)
                return
            if filter_outgoing and address[2] == PACKET_OUTGOING:
                continue
            port.rx_frames += 1
            if flags & MSG_TRUNC:
                self.counters.oversize_drops += 1
                continue
            if ancillary and ancillary[0][2][0] & TP_STATUS_VLAN_VALID:
                frame = with_vlan_tag(frame, ancillary[0][2])
            if pcap is not None:
                pcap.write(frame)
            if self.pfc is not None:
                if self.pfc.receive(number, frame, time.monotonic()):
                    continue
                self._rx_port, self._rx_frame = number, frame
            self._ingress(pipeline, frame, number)

    def _receive_batch(self, port: Port) -> tuple[list[bytes], int]:
        """Up to RX_BATCH frames waiting on `port`, read in one system call (packet_io.receive), and
        when they were read (monotonic ns).

        Counted in the port's rx_frames once per batch; a receive error is logged and ends the
        batch. A VLAN tag the kernel took off is put back; a truncated (oversize) frame is
        counted and left out.
        """
        try:
            frames, cut = packet_io.receive(port.sock.fileno(), RX_BATCH)
        except OSError as error:
            log.warning("port %d (%s): receive failed: %s", port.number, port.interface, error)
            return [], 0
        read_ns = time.monotonic_ns()
        port.rx_frames += len(frames) + cut
        if cut:
            self.counters.oversize_drops += cut
        return frames, read_ns

    def _receive_fused(self, port: Port, run_fused: Callable[..., tuple[int, bytes] | None]) -> None:
        """Up to RX_BATCH frames from one port through the language core's fused driver, in three phases.

        1. receive the whole batch in one system call (its frames arrive when they are read);
        2. run the pipeline over the batch; frames for an idle port without a rate limit go
           through egress at once and are collected in arrival order, all others (busy or
           rate-limited port, odd priority) take the queue path unchanged;
        3. send the collected frames, in order.

        The same outcome per frame (counters, queues, drops, logged errors) as the general
        loop over ``_ingress`` (tests/unit/test_target_fastpath_switch.py holds the two to
        each other), with much less work per frame: one call runs parser,
        ingress, the idle-port check (``_admit``), egress and deparser, with the packet's
        headers in local variables; drops and queued packets are reported to ``self.hooks``.
        Frames are sent by ``_send_departures``, one system call per run of frames to the
        same port.
        """
        batch, read_ns = self._receive_batch(port)
        if not batch:
            return
        number = port.number
        arrival_us = (read_ns - self._clock_origin_ns) // 1000
        counters, admit, hooks = self.counters, self._admit, self.hooks
        departures: list[tuple[int, bytes]] = []
        for frame in batch:
            if len(frame) < ETHERNET_HEADER_BYTES:
                counters.malformed += 1
                continue
            try:
                sent = run_fused(frame, number, arrival_us, admit, hooks)
            except Exception as error:  # one bad packet must not stop the switch
                self._packet_error("pipeline", number, frame, stage_error("pipeline", error))
                continue
            if sent is not None:
                departures.append(sent)
        if departures:
            self._send_departures(departures)

    def _enqueue(self, result: IngressResult, now_us: int) -> None:
        """A packet for a busy, rate-limited or unknown port: into its queue (tail drop when full)."""
        queues = self.queues.get(result.egress_spec)
        if queues is None:
            self.counters.unknown_port_drops += 1
            return
        pfc = self.pfc
        if pfc is None:
            if queues.enqueue(result.priority, result, now_us):
                self._active.add(queues.port)
            return
        ingress = self._rx_port
        field = pfc.settings.class_field
        arrival_class = field.read(self._rx_frame) if field is not None else result.priority
        if not pfc.may_hold(ingress, arrival_class):
            return
        if queues.enqueue(result.priority, result, now_us, ingress, arrival_class):
            self._active.add(queues.port)
            pfc.hold(ingress, arrival_class, time.monotonic())

    def _admit(self, egress_port: int, priority: int) -> bool:
        """Whether a packet for this port and priority leaves at once (idle, unlimited port): counted.

        An idle port without a rate limit would dequeue the packet at once, so it is counted
        as enqueued and dequeued, and goes straight through egress.
        """
        queues = self.queues.get(egress_port)
        if (
            queues is None
            or queues.backlog
            or queues.rate_pps is not None
            or not 0 <= priority < queues.priority_count
        ):
            return False
        queue_counters = queues.counters[priority]
        queue_counters.enqueued += 1
        queue_counters.dequeued += 1
        return True

    def _send_departures(self, departures: list[tuple[int, bytes]]) -> None:
        """Send frames in order; the same per-frame outcome as ``Port.send`` (or a packet-in).

        The frames of a port go out in order, in one system call per run of consecutive frames to
        it (``packet_io.send``), and its tx_frames and tx_errors are added once per run. A port
        with a pcap file goes through ``Port.send`` (it writes the capture too).
        """
        ports = self.ports
        start, count = 0, len(departures)
        while start < count:
            egress_port = departures[start][0]
            end = start + 1
            while end < count and departures[end][0] == egress_port:
                end += 1
            out_port = ports.get(egress_port)
            if out_port is not None and out_port.sock is not None and out_port.pcap_out is None:
                frames = [frame for _, frame in departures[start:end]]
                sent, refused = packet_io.send(out_port.sock.fileno(), frames)
                out_port.tx_frames += sent
                out_port.tx_errors += refused
            else:
                for _, frame in departures[start:end]:
                    if out_port is not None:
                        out_port.send(frame)
                    elif self.packet_in is not None:
                        self.packet_in(frame)
            start = end

    def _receive_injected(self, pipeline: Any) -> None:
        while self._injected:
            frame = self._injected.popleft()
            self._rx_port, self._rx_frame = -1, frame
            self._ingress(pipeline, frame, self.cpu_port)

    def _ingress(self, pipeline: Any, frame: bytes, port_number: int) -> None:
        counters = self.counters
        if len(frame) < ETHERNET_HEADER_BYTES:
            counters.malformed += 1
            return
        if pipeline is None:
            counters.no_pipeline_drops += 1
            return
        now_us = self._now_us()
        try:
            result = pipeline.ingress(frame, port_number, now_us)
        except Exception as error:  # one bad packet must not stop the switch
            self._packet_error("ingress", port_number, frame, error)
            return
        if getattr(result, "parser_error", 0):
            counters.parser_errors += 1
        if result.dropped:
            counters.ingress_drops += 1
            return
        if getattr(result, "replicate", False):  # multicast, clone, resubmit (p4switch.runtime.replication)
            self._fan_out(pipeline, pipeline.replicate(result), now_us)
            return
        if self._admit(result.egress_spec, result.priority):
            self._egress_and_send(pipeline, result.egress_spec, result, 0, 0, 0, now_us)
        else:
            self._enqueue(result, now_us)

    def _egress_and_send(
        self,
        pipeline: Any,
        number: int,
        state: Any,
        enq_qdepth: int,
        deq_qdepth: int,
        deq_timedelta: int,
        now_us: int,
    ) -> None:
        try:
            frame = pipeline.egress(state, number, enq_qdepth, deq_qdepth, deq_timedelta, now_us)
        except Exception as error:
            self._packet_error("egress", number, b"", error)
            return
        pending = getattr(pipeline, "pending", False)  # egress clones, a recirculated packet
        if frame is None:
            if not pending:
                self.counters.egress_drops += 1
        else:
            port = self.ports.get(number)
            if port is not None:
                port.send(frame)
            elif self.packet_in is not None:
                self.packet_in(frame)
        if pending:
            self._fan_out(pipeline, pipeline.take_pending(), now_us)

    def _fan_out(self, pipeline: Any, copies: list[IngressResult], now_us: int) -> None:
        """Packets from the replication engine, each to its egress port: at once if idle, else queued."""
        for copy in copies:
            if self._admit(copy.egress_spec, copy.priority):
                self._egress_and_send(pipeline, copy.egress_spec, copy, 0, 0, 0, now_us)
            else:
                self._enqueue(copy, now_us)

    def _transmit(self, pipeline: Any) -> None:
        now = time.monotonic()
        now_us = self._now_us()
        pfc = self.pfc
        for number in list(self._active):
            queues = self.queues[number]
            paused = pfc.paused_masks.get(number, 0) if pfc is not None else 0
            budget = PFC_TX_BURST if pfc is not None else -1
            while queues.backlog and queues.may_send(now) and budget:
                budget -= 1
                item = queues.dequeue(paused)
                if item is None:
                    break
                queues.charge_one(now)
                if pfc is not None:
                    pfc.release(item.ingress, item.arrival_class)
                self._egress_and_send(
                    pipeline,
                    number,
                    item.state,
                    item.enq_qdepth,
                    queues.backlog,
                    now_us - item.enq_time_us,
                    now_us,
                )
            if not queues.backlog:
                self._active.discard(number)

    def _packet_error(self, stage: str, port_number: int, frame: bytes, error: Exception) -> None:
        self.counters.packet_errors += 1
        if self.counters.packet_errors <= MAX_LOGGED_ERRORS:
            log.error(
                "%s failed on port %d: %s: %s; packet: %s",
                stage,
                port_number,
                type(error).__name__,
                error,
                frame.hex(),
            )
