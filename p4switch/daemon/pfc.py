"""Priority flow control (IEEE 802.1Qbb): lossless priority queues, per (ingress port, priority).

A frame the switch holds (queued on some egress port) is counted against the port it
arrived on and its class there. Above ``xoff`` held frames of a class the switch sends
a PFC frame out of that ingress port pausing the class for the longest time (0xFFFF
quanta), renewed at half that time while it stays above ``xon``; at or below ``xon`` it
sends a pause time of 0 (resume). ``headroom`` more frames are accepted after XOFF, for
what the peer had in flight; beyond it a frame is dropped and counted (``headroom_drops``),
so a correct peer never sees a drop.

A PFC frame received on a port stops the service of that (egress port, class) queue for
the time given, or until a pause time 0 releases it; the other classes go on. PFC frames
never reach the P4 program.

The frame (802.1Qbb clause 36 / 802.3 annex 31D), 60 bytes before the FCS::

    0  dst 01:80:C2:00:00:01 | 6 src (the port's MAC) | 12 EtherType 0x8808
    14 opcode 0x0101 | 16 class-enable vector (bit i: class i) | 18 eight 16-bit pause times
    34 zero padding to 60

A pause time counts quanta of 512 bit times at the link's rate. A port with a packet rate
(time dilation) is a link of ``rate_pps`` nominal frames a second of ``NOMINAL_FRAME_BITS``
(a minimum frame on the wire: 64 bytes, preamble and gap: 84 bytes); an unlimited port is a
link of ``link_bps`` (default 100 Mb/s, see DEFAULT_LINK_BPS).

Which class a held frame counts against: by default the priority it is queued with, which
is its arrival class when classes are kept along the path (as 802.1Q's PCP is). A program
that changes a frame's class per hop (VCs) names where the arrival class is in the frame
(``ClassField``, a switch's "trust" mode for a field such as DSCP).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

PFC_DESTINATION = bytes.fromhex("0180c2000001")
MAC_CONTROL_ETHERTYPE = 0x8808
MAC_CONTROL_ETHERTYPE_BYTES = struct.pack("!H", MAC_CONTROL_ETHERTYPE)
PFC_OPCODE = 0x0101
CLASSES = 8
QUANTUM_BITS = 512
MAX_PAUSE_QUANTA = 0xFFFF
MIN_FRAME_BYTES = 60
NOMINAL_FRAME_BITS = 84 * 8
#: Rate of a port without a packet rate, for pause quanta: 100 Mb/s makes the longest pause
#: 0.34 s, so a pause renewed at half its time outlives the delays of a loaded machine's
#: scheduler (at 10 Gb/s it would last 3.4 ms and expire whenever the loop is late).
DEFAULT_LINK_BPS = 100e6
#: Held frames of one (ingress port, class) above which the class is paused: a few frames
#: queued keep the egress busy, more only add latency.
DEFAULT_XOFF = 16
#: Held frames at or below which the pause is released: half of XOFF, so that XOFF and XON
#: do not alternate for every frame.
DEFAULT_XON = 8
#: Frames accepted above XOFF before dropping: what may still arrive after the pause is sent,
#: i.e. the rest of this switch's receive batch (64 frames) and two transmit bursts of the
#: peer's loop (16 frames each: the one under way and the one before it reads the pause).
DEFAULT_HEADROOM = 96
_PFC_LAYOUT = struct.Struct("!6s6sHHH8H")


def pfc_frame(source_mac: bytes, pauses: dict[int, int]) -> bytes:
    """A PFC frame pausing each class in `pauses` for its quanta (0: resume), padded to 60 bytes."""
    vector = 0
    times = [0] * CLASSES
    for cls, quanta in pauses.items():
        if not 0 <= cls < CLASSES or not 0 <= quanta <= MAX_PAUSE_QUANTA:
            raise ValueError(f"PFC class must be 0..7 and pause 0..65535 quanta, not {cls}: {quanta}")
        vector |= 1 << cls
        times[cls] = quanta
    head = _PFC_LAYOUT.pack(PFC_DESTINATION, source_mac, MAC_CONTROL_ETHERTYPE, PFC_OPCODE, vector, *times)
    return head + bytes(MIN_FRAME_BYTES - len(head))


def parse_pfc(frame: bytes) -> dict[int, int] | None:
    """The (class -> pause quanta) of a PFC frame's enabled classes; None if it is not a PFC frame."""
    if len(frame) < _PFC_LAYOUT.size or frame[12:14] != MAC_CONTROL_ETHERTYPE_BYTES:
        return None
    _, _, _, opcode, vector, *times = _PFC_LAYOUT.unpack_from(frame)
    if opcode != PFC_OPCODE:
        return None
    return {cls: times[cls] for cls in range(CLASSES) if vector >> cls & 1}


def interface_mac(interface: str) -> bytes:
    """The MAC address of a network interface (zeros if the kernel does not say)."""
    try:
        with open(os.path.join("/sys/class/net", interface, "address")) as handle:
            return bytes.fromhex(handle.read().strip().replace(":", ""))
    except (OSError, ValueError):
        return bytes(6)


@dataclass(frozen=True)
class ClassField:
    """Where a frame carries its arrival class: frames of ``ethertype`` whose byte ``guard`` is
    nonzero have their class in byte ``offset`` under ``mask`` (shifted down); other frames: class 0."""

    ethertype: int
    guard: int
    offset: int
    mask: int

    @classmethod
    def parse(cls, text: str) -> ClassField:
        """``"0x88b5,20,40,0x0f"`` -> ClassField; ValueError naming the form otherwise."""
        parts = text.split(",")
        try:
            ethertype, guard, offset, mask = (int(part, 0) for part in parts)
        except ValueError:
            raise ValueError(
                f"a class field is ETHERTYPE,GUARD,OFFSET,MASK (e.g. 0x88b5,20,40,0x0f), not {text!r}"
            ) from None
        if not (0 <= ethertype <= 0xFFFF and 0 <= guard and 14 <= offset and 0 < mask <= 0xFF):
            raise ValueError(f"class field {text!r}: EtherType 0..0xffff, offsets in the frame, mask 1..0xff")
        return cls(ethertype, guard, offset, mask)

    def read(self, frame: bytes) -> int:
        if (
            len(frame) <= max(self.guard, self.offset)
            or int.from_bytes(frame[12:14], "big") != self.ethertype
        ):
            return 0
        if not frame[self.guard]:
            return 0
        shift = (self.mask & -self.mask).bit_length() - 1
        return (frame[self.offset] & self.mask) >> shift


@dataclass
class PfcSettings:
    """Thresholds (frames per ingress port and class) and the rate of unlimited links."""

    xoff: int = DEFAULT_XOFF
    xon: int = DEFAULT_XON
    headroom: int = DEFAULT_HEADROOM
    link_bps: float = DEFAULT_LINK_BPS
    class_field: ClassField | None = None

    def check(self) -> None:
        if not 0 <= self.xon < self.xoff:
            raise ValueError(f"PFC thresholds need 0 <= XON < XOFF, got XON {self.xon}, XOFF {self.xoff}")
        if self.headroom < 1:
            raise ValueError(f"PFC headroom must be at least 1 frame, got {self.headroom}")
        if not self.link_bps > 0:
            raise ValueError(f"link rate must be positive, got {self.link_bps} b/s")

    def queue_depth(self, ports: int) -> int:
        """An egress queue depth no lossless ingress can overrun: every port's XOFF plus headroom."""
        return max(1, ports) * (self.xoff + self.headroom)


@dataclass
class ClassCounters:
    """PFC counters of one (port, class)."""

    pause_sent: int = 0
    resume_sent: int = 0
    pause_received: int = 0
    resume_received: int = 0
    paused_s: float = 0.0
    headroom_drops: int = 0
    held: int = 0
    peer_paused: bool = False
    paused_until: float = 0.0
    paused_since: float = 0.0
    next_refresh: float = 0.0


Sender = Callable[[int, bytes], Any]


@dataclass
class PfcState:
    """PFC of one switch: held frames per (ingress port, class), pauses received per (egress port, class).

    ``send(port, frame)`` transmits a PFC frame; ``bits_per_second(port)`` is the port's link rate.
    Times are ``time.monotonic()`` seconds, passed in by the data plane.
    """

    settings: PfcSettings
    ports: dict[int, bytes]
    send: Sender
    bits_per_second: Callable[[int], float]
    classes: dict[int, list[ClassCounters]] = field(default_factory=dict)
    paused_masks: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.classes = {port: [ClassCounters() for _ in range(CLASSES)] for port in self.ports}
        self.paused_masks = dict.fromkeys(self.ports, 0)

    def quantum_s(self, port: int) -> float:
        return QUANTUM_BITS / self.bits_per_second(port)

    # -- frames held ---------------------------------------------------------------------------
    def may_hold(self, port: int, cls: int) -> bool:
        """Whether a frame of `cls` from `port` fits (XOFF + headroom); a refusal is counted."""
        counters = self.classes.get(port)
        if counters is None or not 0 <= cls < CLASSES:
            return True
        entry = counters[cls]
        if entry.held >= self.settings.xoff + self.settings.headroom:
            entry.headroom_drops += 1
            return False
        return True

    def hold(self, port: int, cls: int, now: float) -> None:
        counters = self.classes.get(port)
        if counters is None or not 0 <= cls < CLASSES:
            return
        entry = counters[cls]
        entry.held += 1
        if entry.held > self.settings.xoff and not entry.peer_paused:
            entry.peer_paused = True
            self._send_pause(port, cls, entry, now)

    def release(self, port: int, cls: int) -> None:
        counters = self.classes.get(port)
        if counters is None or not 0 <= cls < CLASSES:
            return
        entry = counters[cls]
        entry.held -= 1
        if entry.peer_paused and entry.held <= self.settings.xon:
            entry.peer_paused = False
            entry.resume_sent += 1
            self.send(port, pfc_frame(self.ports[port], {cls: 0}))

    def _send_pause(self, port: int, cls: int, entry: ClassCounters, now: float) -> None:
        entry.pause_sent += 1
        entry.next_refresh = now + MAX_PAUSE_QUANTA * self.quantum_s(port) / 2
        self.send(port, pfc_frame(self.ports[port], {cls: MAX_PAUSE_QUANTA}))

    def reset_held(self) -> None:
        """The queues were flushed: nothing is held, every paused peer is released."""
        for port, counters in self.classes.items():
            for cls, entry in enumerate(counters):
                entry.held = 0
                if entry.peer_paused:
                    entry.peer_paused = False
                    entry.resume_sent += 1
                    self.send(port, pfc_frame(self.ports[port], {cls: 0}))

    # -- pauses received -----------------------------------------------------------------------
    def receive(self, port: int, frame: bytes, now: float) -> bool:
        """Act on a MAC control frame received on `port`; True if it was one (it is consumed)."""
        if frame[12:14] != MAC_CONTROL_ETHERTYPE_BYTES:
            return False
        pauses = parse_pfc(frame)
        counters = self.classes.get(port)
        if not pauses or counters is None:
            return True
        quantum = self.quantum_s(port)
        mask = self.paused_masks[port]
        for cls, quanta in pauses.items():
            entry = counters[cls]
            paused = mask >> cls & 1
            if quanta:
                entry.pause_received += 1
                if not paused:
                    entry.paused_since = now
                    mask |= 1 << cls
                entry.paused_until = now + quanta * quantum
            else:
                entry.resume_received += 1
                if paused:
                    entry.paused_s += now - entry.paused_since
                    mask &= ~(1 << cls)
        self.paused_masks[port] = mask
        return True

    def tick(self, now: float) -> None:
        """Expire pauses received whose time is up; renew the pauses sent that are due."""
        for port, mask in self.paused_masks.items():
            if not mask:
                continue
            counters = self.classes[port]
            for cls in range(CLASSES):
                entry = counters[cls]
                if mask >> cls & 1 and entry.paused_until <= now:
                    entry.paused_s += entry.paused_until - entry.paused_since
                    mask &= ~(1 << cls)
            self.paused_masks[port] = mask
        for port, counters in self.classes.items():
            for cls, entry in enumerate(counters):
                if entry.peer_paused and entry.next_refresh <= now:
                    self._send_pause(port, cls, entry, now)

    def next_deadline(self) -> float | None:
        """The earliest time ``tick`` has something to do, None if nothing is pending."""
        times = [
            entry.paused_until
            for port, mask in self.paused_masks.items()
            if mask
            for cls, entry in enumerate(self.classes[port])
            if mask >> cls & 1
        ]
        times += [
            entry.next_refresh
            for counters in self.classes.values()
            for entry in counters
            if entry.peer_paused
        ]
        return min(times, default=None)

    def snapshot(self, port: int, now: float) -> list[dict[str, Any]]:
        """Per class of `port`: PFC counters and state as JSON-ready dicts."""
        counters = self.classes.get(port)
        if counters is None:
            return []
        mask = self.paused_masks[port]
        rows = []
        for cls, entry in enumerate(counters):
            paused = bool(mask >> cls & 1)
            current = min(now, entry.paused_until) - entry.paused_since if paused else 0.0
            rows.append(
                {
                    "priority": cls,
                    "pause_frames_sent": entry.pause_sent,
                    "resume_frames_sent": entry.resume_sent,
                    "pause_frames_received": entry.pause_received,
                    "resume_frames_received": entry.resume_received,
                    "paused_s": round(entry.paused_s + max(0.0, current), 6),
                    "paused": paused,
                    "held": entry.held,
                    "pausing_peer": entry.peer_paused,
                    "headroom_drops": entry.headroom_drops,
                }
            )
        return rows
