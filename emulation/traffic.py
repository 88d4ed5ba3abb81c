"""Probe traffic: raw sockets on every host, in their namespaces; paced sending and receiving.

No Python interpreter runs per host. For each host, :func:`open_host_socket`
enters the host's network namespace (``setns`` on ``/proc/<pid>/ns/net`` or an
``ip netns`` path), opens an ``AF_PACKET`` socket for the twinnet EtherType
bound to the host's interface, and returns to its own namespace: the socket
stays bound to the host's interface. The :class:`TrafficEngine` then

* sends every probe of a :class:`Schedule` at its time (paced by the clock, so
  the offered load does not depend on CPU speed; a late send is sent at once
  and its lateness recorded), from a process of its own on these sockets
  (:mod:`emulation.sender`) unless told otherwise, writing the probe id and the send time
  (:func:`emulation.packets.now_us`) into a pre-built frame per pair;
* receives on all hosts in one thread (epoll), keeping each frame with its
  kernel receive time (``SO_TIMESTAMPNS``, the clock ``send_time`` uses);
  frames are decoded with :mod:`emulation.packets` afterwards, off the hot path;
* obeys priority flow control on each host's link (lossless runs): a PFC frame
  from the card pauses that host (:class:`HostPauses`) for its time or until
  released, its probes are held in order meanwhile (the other hosts go on) and
  sent after the release at most at the link's rate (a burst would overrun the
  card's headroom before its next pause arrives); the pauses, the time paused
  and the probes held are counted.

Schedules come from the traffic patterns of :mod:`controller.analysis.traffic`:
every source PE sends ``packets_per_host`` probes at ``rate_pps``, to
destinations drawn from the pattern's flows (random by weight for the
randomised patterns, a smooth weighted round robin otherwise, so that
all-to-all with N-1 probes per host sends each ordered pair exactly once).
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from controller.analysis.traffic import Traffic
from emulation.netns import entered
from emulation.packets import ETHERTYPE_TWINNET, TIME_MODULUS, encode, now_us, probe
from p4switch.daemon import packet_io
from p4switch.daemon.pfc import MAC_CONTROL_ETHERTYPE, QUANTUM_BITS, parse_pfc
from topologies.addressing import host_mac
from topologies.errors import TwinnetError

SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
SO_TIMESTAMPNS = 35
SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33
#: Socket buffers of every host socket (SO_SNDBUFFORCE / SO_RCVBUFFORCE), bytes.
SOCKET_BUFFER_BYTES = 4 << 20
#: Patterns whose destinations are drawn at random by weight (the others take turns by weight).
RANDOM_PATTERNS = frozenset({"uniform", "hotspot"})
#: Smallest probe frame: Ethernet (14) + twinnet header (20) bytes.
MIN_FRAME_BYTES = 34


class TrafficError(TwinnetError, RuntimeError):
    """A host socket could not be opened, or traffic could not be sent."""


# -- namespaces and sockets -----------------------------------------------------------------


def open_host_socket(netns: str, interface: str, ethertype: int = ETHERTYPE_TWINNET) -> socket.socket:
    """An AF_PACKET socket for frames of `ethertype`, bound to `interface` of namespace `netns` (a path).

    Only this thread changes namespace, and it returns to its own before
    returning (also on errors).
    """
    try:
        with entered(netns):
            # protocol 0, then bind(): hooked once, to this interface only (see p4switch.daemon.ports)
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            try:
                sock.bind((interface, ethertype))
                sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                for option in (SO_SNDBUFFORCE, SO_RCVBUFFORCE):
                    sock.setsockopt(socket.SOL_SOCKET, option, SOCKET_BUFFER_BYTES)
            except OSError:
                sock.close()
                raise
    except OSError as error:
        raise TrafficError(f"cannot open a packet socket on {interface} in {netns}: {error}") from error
    return sock


@dataclass(frozen=True)
class HostEndpoint:
    """Where a PE's traffic enters and leaves: its namespace (path) and interface."""

    pe: int
    netns: str
    interface: str


def endpoints_of_network(network) -> list[HostEndpoint]:
    """The endpoints of every host of a running :class:`~emulation.network.TwinnetNetwork`."""
    return [HostEndpoint(host.pe, f"/proc/{host.pid}/ns/net", host.interface) for host in network.state.hosts]


# -- frames ----------------------------------------------------------------------------------


def _span(field_name: str, low: int, high: int) -> tuple[int, int]:
    """(offset, length) of a probe field in the encoded frame, found by encoding two values."""
    fixed = {"probe_id": 0, "send_time": 0}
    a = encode(probe(0, 1, **{**fixed, field_name: low}))
    b = encode(probe(0, 1, **{**fixed, field_name: high}))
    differ = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    return differ[0], differ[-1] - differ[0] + 1


PROBE_ID_SPAN = _span("probe_id", 0, 0xFFFFFFFF)
SEND_TIME_SPAN = _span("send_time", 0, TIME_MODULUS - 1)


def probe_frame(src: int, dst: int, size: int) -> bytearray:
    """A probe frame from `src` to `dst` of `size` bytes (padded payload), probe id and send time zero."""
    bare = len(encode(probe(src, dst, probe_id=0, send_time=0)))
    if size < bare:
        raise ValueError(f"a probe frame needs at least {bare} bytes, asked for {size}")
    return bytearray(encode(probe(src, dst, probe_id=0, send_time=0, payload=bytes(size - bare))))


def _pe_span(field_name: str) -> tuple[int, int]:
    """(offset, length) of a PE field in the frame, found by encoding two frames that differ only there."""
    a = encode(probe(0, 0, probe_id=0, send_time=0))
    ends = {"src_pe": (0xFFFF, 0), "dst_pe": (0, 0xFFFF)}[field_name]
    b = encode(probe(*ends, probe_id=0, send_time=0))
    differ = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y and i >= 12]
    return differ[0], differ[-1] - differ[0] + 1


SRC_PE_SPAN = _pe_span("src_pe")
DST_PE_SPAN = _pe_span("dst_pe")


class FrameFactory:
    """Probe frames of one size for many pairs, patched from one template.

    Building a frame with scapy costs about a millisecond; a 4x4x4 nDT has 16k
    pairs, so building them one by one held injection back for seconds. The
    template is built once (scapy) and each pair's frame is a copy with its MACs
    and PEs written in (the same bytes :func:`probe_frame` gives, held by a test).
    """

    def __init__(self, size: int) -> None:
        self.template = bytes(probe_frame(0, 0, size))

    def frame(self, src: int, dst: int) -> bytearray:
        frame = bytearray(self.template)
        frame[0:6] = bytes.fromhex(host_mac(dst).replace(":", ""))
        frame[6:12] = bytes.fromhex(host_mac(src).replace(":", ""))
        for (offset, length), value in ((SRC_PE_SPAN, src), (DST_PE_SPAN, dst)):
            frame[offset : offset + length] = value.to_bytes(length, "big")
        return frame


def stamp(frame: bytearray, probe_id: int, send_time: int) -> None:
    """Write the probe id and the send time into a pre-built probe frame."""
    offset, length = PROBE_ID_SPAN
    frame[offset : offset + length] = probe_id.to_bytes(length, "big")
    offset, length = SEND_TIME_SPAN
    frame[offset : offset + length] = send_time.to_bytes(length, "big")


# -- schedules -------------------------------------------------------------------------------


@dataclass
class Schedule:
    """Probes to send, sorted by time: probe i goes from ``src[i]`` to ``dst[i]`` at ``at[i]`` s after start.

    Probe ids are ``first_id + i``.
    """

    src: np.ndarray
    dst: np.ndarray
    at: np.ndarray
    first_id: int = 1

    def __len__(self) -> int:
        return int(self.src.size)

    @property
    def duration(self) -> float:
        return float(self.at[-1]) if len(self) else 0.0

    def probe_id(self, index: int) -> int:
        return self.first_id + index


class SourceFlows:
    """A pattern's flows grouped by source once (a stable sort keeps each source's flows in order),
    so that a source's destinations are drawn without scanning every flow: a uniform pattern over
    1,024 hosts has over a million flows, and a scan per source took a second."""

    def __init__(self, traffic: Traffic) -> None:
        order = np.argsort(traffic.src, kind="stable")
        self.src, self.dst, self.weight = traffic.src[order], traffic.dst[order], traffic.weight[order]
        self.random = traffic.name in RANDOM_PATTERNS

    def flows_of(self, src: int) -> tuple[np.ndarray, np.ndarray]:
        """The destinations and weights of `src`'s flows, in the pattern's order."""
        low, high = np.searchsorted(self.src, [src, src + 1])
        return self.dst[low:high], self.weight[low:high]

    def destinations(self, src: int, count: int, rng: np.random.Generator) -> np.ndarray:
        """`count` destinations for source `src` following the pattern's flows and weights."""
        dsts, weights = self.flows_of(src)
        if dsts.size == 0 or count == 0:
            return np.zeros(0, dtype=np.int64)
        weights = weights / weights.sum()
        if self.random:
            return rng.choice(dsts, size=count, p=weights)
        # smooth weighted round robin: at each step the flow furthest behind its share sends
        credit = np.zeros(dsts.size)
        chosen = np.empty(count, dtype=np.int64)
        for step in range(count):
            credit += weights
            best = int(np.argmax(credit))
            chosen[step] = dsts[best]
            credit[best] -= 1.0
        return chosen


def make_schedule(
    traffic: Traffic, num_pes: int, packets_per_host: int, rate_pps: float, seed: int = 0, first_id: int = 1
) -> Schedule:
    """Every source of the pattern sends `packets_per_host` probes at `rate_pps`, hosts staggered evenly."""
    if rate_pps <= 0:
        raise ValueError(f"rate must be positive, got {rate_pps}")
    rng = np.random.default_rng(seed)
    sources = np.unique(traffic.src)
    flows = SourceFlows(traffic)
    srcs, dsts, times = [], [], []
    for order, src in enumerate(sources.tolist()):
        chosen = flows.destinations(src, packets_per_host, rng)
        offset = order / (rate_pps * max(1, sources.size))
        srcs.append(np.full(chosen.size, src, dtype=np.int64))
        dsts.append(chosen)
        times.append(offset + np.arange(chosen.size) / rate_pps)
    if not srcs:
        empty = np.zeros(0, dtype=np.int64)
        return Schedule(empty, empty, np.zeros(0), first_id)
    src, dst, at = np.concatenate(srcs), np.concatenate(dsts), np.concatenate(times)
    order = np.argsort(at, kind="stable")
    return Schedule(src[order], dst[order], at[order], first_id)


# -- the engine ------------------------------------------------------------------------------


@dataclass
class Received:
    """A frame a host received, with the kernel's receive time (us, the clock of ``send_time``)."""

    pe: int
    frame: bytes
    receive_us: int


@dataclass
class SendRecord:
    """What was sent: per probe its send time (us); when sending started and ended (us); pacing lateness."""

    send_us: np.ndarray
    started_us: int = 0
    finished_us: int = 0
    max_late_s: float = 0.0
    late_probes: int = 0
    errors: dict[int, str] = field(default_factory=dict)
    interrupted: bool = False
    held_probes: int = 0
    never_released: int = 0
    #: where and how the schedule was sent (its process and CPU scheduling), for the report
    sender: str = "in the run process"

    @property
    def sent(self) -> int:
        return int(np.count_nonzero(self.send_us >= 0))


#: A probe counts as late when sent more than this after its time, s.
LATE_THRESHOLD_S = 0.005
#: While probes are held by a pause, the sender looks for a release this often, s.
HELD_POLL_S = 0.001
#: The sender sleeps at least this long between wakes while nothing is held, and then sends every
#: probe already due: one wake per probe cost ~20 us of CPU and preempted a switch process, a third
#: of a core at 20k probes/s. Probes are stamped when actually sent, so latency stays exact; a send
#: is at most about this much later than its time (far below LATE_THRESHOLD_S).
PACING_QUANTUM_S = 0.00025


class HostPauses:
    """PFC pauses of the hosts' links: a host obeys a pause of any class (it has one queue).

    A pause of q quanta lasts q x 512 bit times of the link (``link_bps``); 0 releases it.
    Written by the receiver thread, read by the sender (single assignments: no lock needed).
    """

    def __init__(self, link_bps: float, link_pps: float | None = None) -> None:
        self.quantum_s = QUANTUM_BITS / link_bps
        self.release_gap_s = 1.0 / link_pps if link_pps else HELD_POLL_S
        self.until: dict[int, float] = {}
        self.since: dict[int, float] = {}
        self.pauses: dict[int, int] = {}
        self.resumes: dict[int, int] = {}
        self.paused_s: dict[int, float] = {}

    def on_frame(self, pe: int, frame: bytes, now: float) -> None:
        pauses = parse_pfc(frame)
        if not pauses:
            return
        quanta = max(pauses.values())
        was_paused = self.until.get(pe, 0.0) > now
        if quanta:
            self.pauses[pe] = self.pauses.get(pe, 0) + 1
            if not was_paused:
                self.since[pe] = now
            self.until[pe] = now + quanta * self.quantum_s
        else:
            self.resumes[pe] = self.resumes.get(pe, 0) + 1
            if was_paused:
                self.paused_s[pe] = self.paused_s.get(pe, 0.0) + now - self.since[pe]
            self.until[pe] = 0.0

    def paused(self, pe: int, now: float) -> bool:
        until = self.until.get(pe, 0.0)
        if until and until <= now:  # expired: account its time once
            self.paused_s[pe] = self.paused_s.get(pe, 0.0) + until - self.since[pe]
            self.until[pe] = 0.0
            return False
        return until > now

    def summary(self, now: float) -> dict[str, object]:
        """Totals and the hosts paused, for the report."""
        per_host = {
            pe: round(
                self.paused_s.get(pe, 0.0)
                + max(0.0, min(now, self.until.get(pe, 0.0)) - self.since.get(pe, now)),
                6,
            )
            for pe in set(self.pauses) | set(self.paused_s)
        }
        return {
            "pause_frames_received": sum(self.pauses.values()),
            "resume_frames_received": sum(self.resumes.values()),
            "hosts_paused": len(self.pauses),
            "paused_s_total": round(sum(per_host.values()), 6),
            "paused_s_per_host": {str(pe): value for pe, value in sorted(per_host.items())},
        }


#: Threads that close the hosts' sockets together (see close_sockets).
CLOSE_THREADS = 64


def close_sockets(sockets: Sequence[socket.socket]) -> None:
    """Close packet sockets in parallel: each close waits for an RCU grace period (the kernel's
    packet_release calls synchronize_net, ~17 ms here), which closes in parallel share; 256 host
    sockets took 4.3 s one after the other and 0.09 s this way."""
    if not sockets:
        return
    with ThreadPoolExecutor(min(CLOSE_THREADS, len(sockets)), thread_name_prefix="twinnet-close") as pool:
        list(pool.map(socket.socket.close, sockets))


class TrafficEngine:
    """Sockets on every host, a receiver thread, and paced injection (see the module doc).

    Use as a context manager; :meth:`inject` sends a schedule, :meth:`wait_for`
    waits for the probes to arrive (or the network to go quiet), :meth:`take_received`
    hands over what arrived.
    """

    def __init__(self, endpoints: Sequence[HostEndpoint], pauses: HostPauses | None = None) -> None:
        self.endpoints = {endpoint.pe: endpoint for endpoint in endpoints}
        self.sockets: dict[int, socket.socket] = {}
        self.pauses = pauses
        self.control_sockets: dict[int, socket.socket] = {}
        self.received: list[Received] = []
        #: frames longer than packet_io.FRAME_BYTES the kernel cut: left out (probes are at most an MTU)
        self.cut_frames = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = os.pipe()
        self._poller = select.epoll()
        self.receiver_error: BaseException | None = None
        #: whether open() made the sockets (the engine's own, which a sender process can take over)
        self.opened = False

    # -- life cycle --

    def open(self) -> TrafficEngine:
        try:
            for pe, endpoint in self.endpoints.items():
                self.sockets[pe] = open_host_socket(endpoint.netns, endpoint.interface)
                if self.pauses is not None:
                    self.control_sockets[pe] = open_host_socket(
                        endpoint.netns, endpoint.interface, MAC_CONTROL_ETHERTYPE
                    )
        except BaseException:
            self.close()
            raise
        self._start_receiver()
        self.opened = True
        return self

    def close(self) -> None:
        self._stop.set()
        if self._wake_w >= 0:
            os.write(self._wake_w, b"x")
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.opened = False
        close_sockets([*self.sockets.values(), *self.control_sockets.values()])
        self.sockets.clear()
        self.control_sockets.clear()
        for fd in (self._wake_r, self._wake_w):
            if fd >= 0:
                os.close(fd)
        self._wake_r = self._wake_w = -1
        self._poller.close()

    def __enter__(self) -> TrafficEngine:
        return self.open()

    def __exit__(self, *exc_info) -> None:
        self.close()

    # -- receiving --

    def _start_receiver(self, data: bool = True) -> None:
        """The receiver thread, its sockets registered first (so that none is registered after
        ``control_handed_over`` has taken the PFC sockets away)."""
        sockets = [*self.sockets.values()] if data else []
        for sock in [*sockets, *self.control_sockets.values()]:
            self._poller.register(sock.fileno(), select.EPOLLIN)
        self._poller.register(self._wake_r, select.EPOLLIN)
        self._thread = threading.Thread(
            target=self._receive_loop, kwargs={"data": data}, name="twinnet-receiver", daemon=True
        )
        self._thread.start()

    def _receive_loop(self, data: bool = True) -> None:
        """Receive probes (``data``) and PFC frames on every host until closed (sockets registered)."""
        poller = self._poller
        pe_of = {sock.fileno(): pe for pe, sock in self.sockets.items()} if data else {}
        control = {sock.fileno(): (pe, sock) for pe, sock in self.control_sockets.items()}
        try:
            while not self._stop.is_set():
                for fd, _events in poller.poll(0.5):
                    if fd == self._wake_r:
                        continue
                    if fd in control:
                        self._receive_control(*control[fd])
                        continue
                    pe = pe_of.get(fd)
                    if pe is None:  # a PFC socket handed to the sender process
                        continue
                    self._receive_data(fd, pe)
        except BaseException as error:  # surfaced by run(): a dead receiver must not look like lost probes
            self.receiver_error = error

    def _receive_data(self, fd: int, pe: int) -> None:
        """Every frame waiting on host `pe`'s socket, in batches of one system call, with its kernel
        receive time (the socket ignores the host's own outgoing frames: PACKET_IGNORE_OUTGOING)."""
        while True:
            frames, stamps, cut = packet_io.receive_stamped(fd, packet_io.MAX_BATCH)
            self.cut_frames += cut
            if frames:
                now = now_us()
                with self._lock:
                    self.received.extend(
                        Received(pe, frame, stamp // 1000 % TIME_MODULUS if stamp >= 0 else now)
                        for frame, stamp in zip(frames, stamps, strict=True)
                    )
            if len(frames) + cut < packet_io.MAX_BATCH:
                return

    @contextlib.contextmanager
    def control_handed_over(self) -> Iterator[None]:
        """While inside, this process's receiver leaves the PFC sockets to the sender process."""
        fds = [sock.fileno() for sock in self.control_sockets.values()]
        for fd in fds:
            with contextlib.suppress(OSError):  # epoll_ctl is safe while the receiver waits in epoll_wait
                self._poller.unregister(fd)
        try:
            yield
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    self._poller.register(fd, select.EPOLLIN)

    @contextlib.contextmanager
    def receiving_control(self) -> Iterator[None]:
        """A receiver thread for the PFC sockets only (the sender process; the probes are the parent's)."""
        self._start_receiver(data=False)
        try:
            yield
        finally:
            self._stop.set()
            os.write(self._wake_w, b"x")
            self._thread.join(timeout=5)
            self._thread = None

    def _receive_control(self, pe: int, sock: socket.socket) -> None:
        """PFC frames from the host's card: pause or release that host."""
        while True:
            try:
                frame, address = sock.recvfrom(256, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            if address[2] != PACKET_OUTGOING:
                self.pauses.on_frame(pe, frame, time.monotonic())

    def take_received(self) -> list[Received]:
        """The frames received so far (and forget them)."""
        with self._lock:
            taken, self.received = self.received, []
        return taken

    def received_count(self) -> int:
        with self._lock:
            return len(self.received)

    # -- sending --

    def send_frame(self, pe: int, frame: bytes) -> None:
        """Send one frame from PE `pe`'s interface."""
        self.sockets[pe].send(frame)

    def inject(
        self,
        schedule: Schedule,
        size: int,
        tick: Callable[[int, float], bool] | None = None,
        tick_every: float = 0.2,
        own_process: bool | None = None,
        real_time: bool = True,
    ) -> SendRecord:
        """Send every probe of `schedule` at its time; `tick(sent, elapsed)` returning False stops early.

        Ctrl-C (KeyboardInterrupt) stops sending too: the record says so and
        holds what was sent until then. With ``own_process`` (the default when the
        engine has hosts' sockets) a child process sends (emulation.sender), so that
        this process's other threads cannot make the sends late; with ``real_time`` it
        sends under SCHED_FIFO when it may (False: normal scheduling, for comparison).
        """
        if own_process is None:
            own_process = self.opened
        if own_process:
            from emulation.sender import inject_in_child

            return inject_in_child(self, schedule, size, tick, tick_every, real_time)
        return self.send_schedule(schedule, size, tick, tick_every)

    def send_schedule(
        self,
        schedule: Schedule,
        size: int,
        tick: Callable[[int, float], bool] | None = None,
        tick_every: float = 0.2,
    ) -> SendRecord:
        """``inject`` in this process."""
        record = SendRecord(np.full(len(schedule), -1, dtype=np.int64))
        try:
            self._send(schedule, size, record, tick, tick_every)
        except KeyboardInterrupt:
            record.interrupted = True
        record.finished_us = now_us()
        return record

    def _send(
        self,
        schedule: Schedule,
        size: int,
        record: SendRecord,
        tick: Callable[[int, float], bool] | None,
        tick_every: float,
    ) -> None:
        src, dst, at = schedule.src.tolist(), schedule.dst.tolist(), schedule.at.tolist()
        factory = FrameFactory(size)
        frames = {pair: factory.frame(*pair) for pair in set(zip(src, dst, strict=True))}
        start = time.monotonic()
        record.started_us = now_us()
        next_tick = start + tick_every
        pauses = self.pauses
        held: dict[int, deque[int]] = {}
        next_release: dict[int, float] = {}

        def send(index: int) -> None:
            frame = frames[src[index], dst[index]]
            sent_at = now_us()
            stamp(frame, schedule.probe_id(index), sent_at)
            try:
                self.sockets[src[index]].send(frame)
            except OSError as error:
                record.errors[schedule.probe_id(index)] = str(error)
                return
            record.send_us[index] = sent_at

        def release(now: float) -> None:
            for pe in [pe for pe in held if now >= next_release.get(pe, 0.0) and not pauses.paused(pe, now)]:
                queue = held[pe]
                send(queue.popleft())
                next_release[pe] = now + pauses.release_gap_s
                if not queue:
                    del held[pe]

        for index in range(len(schedule) + 1):
            last = index == len(schedule)
            due = start + at[index] if not last else 0.0
            while True:
                now = time.monotonic()
                if tick is not None and now >= next_tick:
                    next_tick = now + tick_every
                    if not tick(index, now - start):
                        record.never_released = sum(map(len, held.values()))
                        return
                if held:
                    release(now)
                if now >= due and not (last and held):
                    break
                wake = min(due, next_tick) if tick is not None else due
                if held:
                    poll = min(HELD_POLL_S, pauses.release_gap_s)
                    wake = min(wake, now + poll) if not last else now + poll
                    time.sleep(max(0.0, wake - now))
                else:
                    time.sleep(max(PACING_QUANTUM_S, wake - now))
            if last:
                return
            late = now - due
            if late > LATE_THRESHOLD_S:
                record.late_probes += 1
            record.max_late_s = max(record.max_late_s, late)
            pe = src[index]
            if pauses is not None and (pe in held or pauses.paused(pe, now)):
                held.setdefault(pe, deque()).append(index)
                record.held_probes += 1
                continue
            send(index)

    def wait_for(
        self,
        expected: int,
        quiet_s: float,
        limit_s: float,
        tick: Callable[[int, float], bool] | None = None,
    ) -> float:
        """Wait until `expected` frames arrived, none came for `quiet_s` or `limit_s` passed; seconds."""
        start = last_change = time.monotonic()
        count = self.received_count()
        while True:
            if self.receiver_error is not None:
                raise TrafficError(f"the receiver stopped: {self.receiver_error}")
            now = time.monotonic()
            current = self.received_count()
            if current != count:
                count, last_change = current, now
            if count >= expected or now - last_change >= quiet_s or now - start >= limit_s:
                return now - start
            if tick is not None and not tick(count, now - start):
                return now - start
            time.sleep(0.05)
