"""The fused driver (``run_fused``) gives exactly what ``run_ingress`` + ``run_egress`` give.

``Pipeline.fused_entry_point()`` returns ``run_fused(packet, port, ts, admit, hooks)``:
parser and ingress, then the traffic manager's choice (``admit``), then egress at once or
the packet state handed to ``hooks.queue`` (protocol: ``FusedHooks`` in
p4switch/runtime/pipeline.py). An optimisation pass (p4switch/compiler/fusion/) rewrites
it with the block functions inlined and the headers and metadata in local variables;
these tests hold any version of it to the reference semantics, the plain drivers of
``Pipeline.raw_entry_points()``.

Every case drives two fresh pipelines of one compiled program with the same control-plane
state: one through ``run_fused``, the other through ``run_ingress``/``run_egress`` doing
by hand what ``run_fused`` is documented to do. For each frame the two must agree on

- every hook call and the ``admit`` arguments, in order (parser error code, ingress drop,
  ``(egress_port, priority)``, queue, egress drop) and the returned value, or the type of
  the exception raised;
- a queued packet's state: its standard metadata's egress_spec / priority / parser_error
  and payload, and what ``run_egress`` of its own pipeline makes of it later (after more
  frames went through: a state must not share anything with later packets), with queue
  depths and a queue delay the fused path never uses, sometimes on another egress port;

and after the sequence on all program state: indexed counters, registers and the direct
counters of every table entry and default entry. ``admit`` is always true, always false,
true for even ports, or a seeded coin flip per frame.

Programs: the card program (p4src/card.p4) with its packet vectors (tests/vectors) and
seeded random frames; the programs of tests/p4progs with the entries and frames their
tests use plus seeded random frames; and a program written here (EGRESS_P4) whose egress
drops, exits and writes the standard metadata it sees (queue depths, timestamps, ports,
priority) into the frame, since none of the others has an egress drop or reads them.
"""

from __future__ import annotations

import random
import struct
from collections import Counter as Tally
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from test_target_calc import request as calc_request
from test_target_fastpath_switch import install as install_card
from test_target_fastpath_switch import random_frame as random_card_frame
from test_target_features import OPERANDS, ops_packet
from test_target_forwarding import frame as ipv4_test_frame
from test_target_forwarding import routed

import p4switch.compiler.compile as compiler
from emulation.card_vectors import (
    EmbeddedCard,
    Outcome,
    compile_card_or_reason,
    load_all,
    run_vector,
)
from p4src import CARD_PROGRAM
from p4switch import Pipeline, compile_program
from p4switch.compiler.compile import clear_memory_cache
from p4switch.compiler.fusion import FusionError

REPO = Path(__file__).resolve().parents[2]
PROGS = REPO / "tests" / "p4progs"
VECTOR_FILES = sorted((Path(__file__).resolve().parents[1] / "vectors").glob("*.json"))
VECTORS = load_all(VECTOR_FILES)
VECTOR_IDS = [f"{Path(v['file']).stem}:{v['name']}" for v in VECTORS]
CARD, CARD_REASON = compile_card_or_reason()
needs_card = pytest.mark.skipif(CARD is None, reason=f"card program not compiled: {CARD_REASON}")

#: First timestamp (µs) of a sequence: the 32-bit enq_timestamp wraps during it.
TS_START = (1 << 32) - 3000
ETHERNET = bytes.fromhex("020000000001020000000002")

Event = tuple[Any, ...]
Admit = Callable[[int, int], bool]
#: An admit policy: (frame number, egress port, priority) -> whether the port is idle.
Policy = Callable[[int, int, int], bool]

_COIN = random.Random(20240611)
COIN_FLIPS = tuple(_COIN.random() < 0.5 for _ in range(1009))


def admit_always(number: int, port: int, priority: int) -> bool:
    """Every egress port is idle: every forwarded packet takes the fused path to egress."""
    return True


def admit_never(number: int, port: int, priority: int) -> bool:
    """No egress port is idle: every forwarded packet is queued."""
    return False


def admit_even_ports(number: int, port: int, priority: int) -> bool:
    """Even egress ports are idle, odd ones busy."""
    return port % 2 == 0


def admit_coin(number: int, port: int, priority: int) -> bool:
    """A seeded coin flip per frame."""
    return COIN_FLIPS[number % len(COIN_FLIPS)]


POLICIES: dict[str, Policy] = {
    "always": admit_always,
    "never": admit_never,
    "even_ports": admit_even_ports,
    "coin": admit_coin,
}


# ------------------------------------------------------------------ both sides of one frame


@dataclass
class Pair:
    """Two pipelines of one program with the same control-plane state."""

    fused: Pipeline
    reference: Pipeline


def new_pair(program: Any, setup: Callable[[Pipeline], None] | None = None) -> Pair:
    """Two fresh pipelines of ``program``, each set up by ``setup`` (table entries)."""
    pair = Pair(program.new_pipeline(), program.new_pipeline())
    if setup is not None:
        setup(pair.fused)
        setup(pair.reference)
    return pair


def queued_state_event(state: Any) -> Event:
    """What must agree about a queued packet state before egress runs on it."""
    _hdr, _meta, sm, payload = state
    return ("queued_state", sm.f_egress_spec, sm.f_priority, sm.f_parser_error, payload)


class RecordingHooks:
    """FusedHooks that write every call into an event list and keep the queued state."""

    def __init__(self, events: list[Event]) -> None:
        """Record into ``events``."""
        self.events = events
        self.state: Any = None

    def parser_error(self, code: int) -> None:
        """Record the parser error code."""
        self.events.append(("parser_error", code))

    def ingress_drop(self) -> None:
        """Record an ingress drop."""
        self.events.append(("ingress_drop",))

    def queue(self, egress_port: int, priority: int, state: Any, timestamp_us: int) -> None:
        """Record the queueing (with the time it is queued at) and what the state says; keep the state."""
        self.events.append(("queue", egress_port, priority, timestamp_us))
        self.events.append(queued_state_event(state))
        self.state = state

    def egress_drop(self) -> None:
        """Record an egress drop."""
        self.events.append(("egress_drop",))


@dataclass
class SendResult:
    """One frame through both sides: comparable event lists and the queued states (if queued)."""

    fused: list[Event]
    reference: list[Event]
    fused_state: Any = None
    reference_state: Any = None


def send_fused(pipeline: Pipeline, frame: bytes, port: int, ts: int, admit: Admit) -> tuple[list[Event], Any]:
    """``run_fused`` on one frame: (events: hook and admit calls, then the result or exception; state)."""
    run_fused = pipeline.fused_entry_point()
    events: list[Event] = []
    hooks = RecordingHooks(events)

    def recording_admit(egress_port: int, priority: int) -> bool:
        events.append(("admit", egress_port, priority))
        return admit(egress_port, priority)

    try:
        result = run_fused(frame, port, ts, recording_admit, hooks)
    except Exception as error:  # compared by type with the reference's
        events.append(("raised", type(error).__name__))
    else:
        events.append(("result", result))
    return events, hooks.state


def send_reference(
    pipeline: Pipeline, frame: bytes, port: int, ts: int, admit: Admit
) -> tuple[list[Event], Any]:
    """What ``run_fused`` is documented to do, with ``run_ingress`` and ``run_egress``: the same events."""
    run_ingress, run_egress, drop_port = pipeline.raw_entry_points()
    events: list[Event] = []
    queued: Any = None
    try:
        state = run_ingress(frame, port, ts)
        sm = state[2]
        if sm.f_parser_error:
            events.append(("parser_error", sm.f_parser_error))
        egress_port, priority = sm.f_egress_spec, sm.f_priority
        result = None
        if egress_port == drop_port:
            events.append(("ingress_drop",))
        else:
            events.append(("admit", egress_port, priority))
            if not admit(egress_port, priority):
                events.append(("queue", egress_port, priority, ts))
                events.append(queued_state_event(state))
                queued = state
            else:
                out = run_egress(state, egress_port, 0, 0, 0, ts)
                if out is None:
                    events.append(("egress_drop",))
                else:
                    result = (egress_port, out)
    except Exception as error:
        events.append(("raised", type(error).__name__))
    else:
        events.append(("result", result))
    return events, queued


def send_both(pair: Pair, frame: bytes, port: int, ts: int, admit: Admit) -> SendResult:
    """One frame through ``run_fused`` on one pipeline and the reference drivers on the other."""
    fused, fused_state = send_fused(pair.fused, frame, port, ts, admit)
    reference, reference_state = send_reference(pair.reference, frame, port, ts, admit)
    return SendResult(fused, reference, fused_state, reference_state)


def egress_both(pair: Pair, result: SendResult, args: tuple[int, int, int, int, int]) -> tuple[Event, Event]:
    """``run_egress(state, *args)`` on the queued state of each side, each in its own pipeline."""
    events = []
    for pipeline, state in ((pair.fused, result.fused_state), (pair.reference, result.reference_state)):
        run_egress = pipeline.raw_entry_points()[1]
        try:
            events.append(("egress", run_egress(state, *args)))
        except Exception as error:
            events.append(("raised", type(error).__name__))
    return events[0], events[1]


def _show(value: Any) -> str:
    """An event with bytes shown as hex."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex() or "''"
    if isinstance(value, tuple):
        return "(" + ", ".join(_show(item) for item in value) + ")"
    return repr(value)


def assert_same(where: str, frame: bytes, fused: Any, reference: Any) -> None:
    """The two sides' records are equal; else show the frame and both records."""
    if fused == reference:
        return
    if isinstance(fused, list):
        fused_text = "\n".join(f"      {_show(event)}" for event in fused)
        reference_text = "\n".join(f"      {_show(event)}" for event in reference)
    else:
        fused_text, reference_text = f"      {_show(fused)}", f"      {_show(reference)}"
    raise AssertionError(
        f"{where}: run_fused and run_ingress+run_egress differ\n"
        f"  frame ({len(frame)} bytes) {frame.hex()}\n"
        f"  run_fused:\n{fused_text}\n  run_ingress+run_egress:\n{reference_text}"
    )


def program_state(pipeline: Pipeline) -> dict[str, Any]:
    """All state the program keeps across packets: counters, registers, direct counters of entries."""
    state: dict[str, Any] = {}
    for name, counter in pipeline.counters.items():
        state[f"counter {name} packets"] = list(counter.packets)
        state[f"counter {name} bytes"] = list(counter.bytes)
    for name, register in pipeline.registers.items():
        state[f"register {name}"] = list(register.cells)
    for name, table in pipeline.tables.items():
        state[f"table {name} entries"] = {key: tuple(entry.counts) for key, entry in table.entries.items()}
        state[f"table {name} default"] = tuple(table.default.counts)
    return state


def assert_same_program_state(where: str, pair: Pair) -> None:
    """Both pipelines hold the same program state; else name what differs."""
    fused, reference = program_state(pair.fused), program_state(pair.reference)
    differences = []
    for name in sorted(set(fused) | set(reference)):
        a, b = fused.get(name), reference.get(name)
        if a == b:
            continue
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            cells = [f"[{i}] {x} vs {y}" for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
            differences.append(f"  {name}: " + ", ".join(cells[:10]))
        else:
            differences.append(f"  {name}: {a!r} vs {b!r}")
    assert not differences, f"{where}: program state differs (run_fused vs reference):\n" + "\n".join(
        differences
    )


# ------------------------------------------------------------------ a sequence of frames


def event_kinds(result: SendResult) -> list[str]:
    """Names of what happened to a frame on the reference side (for coverage checks)."""
    kinds = [event[0] for event in result.reference if event[0] not in ("result", "admit", "queued_state")]
    last = result.reference[-1]
    if last[0] == "result" and last[1] is not None:
        kinds.append("sent")
    return kinds


def run_sequence(
    where: str, pair: Pair, frames: list[tuple[int, bytes]], policy: Policy, seed: int | str
) -> Tally[str]:
    """Frames through both sides, compared one by one; queued states go to egress a few frames later.

    Timestamps increase from TS_START (the same on both sides). A queued packet's egress
    runs after 0 to 3 more frames with its queued egress port, or a port one higher,
    enq_qdepth 0, 1, 3 or 7, deq_qdepth 1, deq_timedelta 5 and the current timestamp.
    Returns how often each outcome occurred.
    """
    rng = random.Random(seed)
    tally: Tally[str] = Tally()
    pending: list[tuple[int, int, bytes, SendResult, int]] = []
    ts = TS_START

    def drain(until: int) -> None:
        while pending and pending[0][0] <= until:
            _due, number, frame, result, queued_port = pending.pop(0)
            args = (queued_port + rng.choice((0, 0, 1)), rng.choice((0, 1, 3, 7)), 1, 5, ts)
            fused, reference = egress_both(pair, result, args)
            assert_same(
                f"{where}: frame {number}, egress of the queued state {args}", frame, fused, reference
            )
            tally["drained_drop" if reference == ("egress", None) else "drained_" + reference[0]] += 1

    for number, (port, frame) in enumerate(frames):
        ts += rng.randrange(1, 5)
        result = send_both(pair, frame, port, ts, lambda p, q, n=number: policy(n, p, q))
        assert_same(f"{where}: frame {number} on port {port} at {ts}", frame, result.fused, result.reference)
        tally.update(event_kinds(result))
        if result.reference_state is not None:
            queued_port = next(event[1] for event in result.reference if event[0] == "queue")
            pending.append((number + rng.randrange(4), number, frame, result, queued_port))
        drain(number)
    drain(len(frames))
    assert_same_program_state(where, pair)
    return tally


# ------------------------------------------------------------------ frames


def internet_checksum(data: bytes) -> int:
    """The ones' complement of the ones' complement sum of 16-bit words (odd length: zero-padded)."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ipv4_packet(
    rng: random.Random, src: int, dst: int, proto: int, ttl: int, tos: int, payload: bytes
) -> bytes:
    """An IPv4 header (checksum right, or wrong one time in ten) and its payload."""
    header = struct.pack(
        "!BBHHHBBHII", 0x45, tos, 20 + len(payload), rng.getrandbits(16), 0, ttl, proto, 0, src, dst
    )
    checksum = internet_checksum(header) if rng.random() < 0.9 else rng.getrandbits(16)
    return header[:10] + struct.pack("!H", checksum) + header[12:] + payload


def other_frame(rng: random.Random) -> bytes:
    """Ethernet with an EtherType the programs do not parse (or random bytes), maybe empty."""
    if rng.random() < 0.2:
        return bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 20)))
    ether_type = rng.choice((0x86DD, 0x0806, 0x8100, 0x88B6, 0x88B8, 0xFFFF, 0x0000))
    return (
        ETHERNET + struct.pack("!H", ether_type) + bytes(rng.getrandbits(8) for _ in range(rng.randrange(60)))
    )


def maybe_truncated(rng: random.Random, frame: bytes) -> bytes:
    """The frame, or one time in eight cut short (at least the Ethernet addresses)."""
    if rng.random() < 0.125:
        return frame[: rng.randrange(12, len(frame) + 1)]
    return frame


def card_frame(rng: random.Random) -> tuple[int, bytes]:
    """(port, frame) for the card program as set up by ``setup_card``.

    Mostly the switch test's random frames (twinnet with random fields and trace_count
    0..30, IPv4, runts, truncated), plus IPv4 from the host port and unknown EtherTypes.
    """
    port = rng.choice((1, 2, 3, 1, 2, 3, 4, 5))
    kind = rng.random()
    if kind < 0.08:
        return port, other_frame(rng)
    if kind < 0.2:
        dst = 0x0A000001 + rng.choice((5, 6, 9, 0, 70000)) if rng.random() < 0.9 else 0x09000000
        payload = bytes(rng.getrandbits(8) for _ in range(rng.randrange(8, 40)))
        ip = ipv4_packet(rng, 0x0A00000C, dst, 17, 64, 0, payload)
        return 4, maybe_truncated(rng, ETHERNET + b"\x08\x00" + ip)
    return port, random_card_frame(rng)


def setup_card(pipeline: Pipeline) -> None:
    """The switch test's entries (card 7, hop limit 6, routes from ports 1-3, queues, host ports 4 and 7)
    plus routes for packets from the host port: to the other host port 7 and to a card port."""
    install_card(pipeline)
    for dst, params in {5: (7, 0), 6: (2, 1), 9: (511, 0)}.items():
        pipeline.table_insert(
            "MyIngress.route",
            {"standard_metadata.ingress_port": 4, "hdr.tw.dst_pe": dst, "hdr.tw.rclass": 0},
            "MyIngress.set_route",
            params,
        )


LPM, FWD = "MyIngress.ipv4_lpm", "MyIngress.ipv4_forward"


def setup_basic(pipeline: Pipeline) -> None:
    """test_target_forwarding's LPM entries, plus a drop and a NoAction (egress_spec 0) entry."""
    pipeline.table_insert(LPM, {"hdr.ipv4.dstAddr": (0x0A000000, 8)}, FWD, (0xAA, 1))
    pipeline.table_insert(LPM, {"hdr.ipv4.dstAddr": (0x0A010000, 16)}, FWD, (0xBB, 2))
    pipeline.table_insert(LPM, {"hdr.ipv4.dstAddr": (0x0A010200, 24)}, FWD, (0xCC, 3))
    pipeline.table_insert(LPM, {"hdr.ipv4.dstAddr": (0x0A090000, 16)}, "MyIngress.drop", ())
    pipeline.table_insert(LPM, {"hdr.ipv4.dstAddr": (0x0A080000, 16)}, "NoAction", ())


def basic_frames() -> list[tuple[int, bytes]]:
    """The frames of test_target_forwarding's basic-forwarder tests."""
    frames = [(5, bytes(ipv4_test_frame(dst))) for dst in ("10.9.9.9", "10.1.9.9", "10.1.2.9", "11.0.0.1")]
    bad = ipv4_test_frame("1.2.3.4")
    bad[IP].chksum = 0x1234
    return frames + [
        (5, bytes(ipv4_test_frame("11.0.0.1", ttl=0))),
        (1, bytes(Ether(type=0x86DD) / Raw(b"x" * 40))),
        (1, bytes(bad)),
    ]


def basic_frame(rng: random.Random) -> tuple[int, bytes]:
    """IPv4 to the entries' prefixes and elsewhere (TTL 0/1 wrap, bad checksums), others, truncated."""
    port = rng.choice((1, 2, 5))
    if rng.random() < 0.1:
        return port, other_frame(rng)
    dst = rng.choice((0x0A090909, 0x0A010909, 0x0A010209, 0x0A080001, 0x0B000001, rng.getrandbits(32)))
    payload = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 30)))
    ip = ipv4_packet(rng, 0xC0A80101, dst, 17, rng.choice((0, 1, 64, 255)), rng.getrandbits(8), payload)
    return port, maybe_truncated(rng, ETHERNET + b"\x08\x00" + ip)


ACL = "AclIngress.acl"


def setup_acl(pipeline: Pipeline) -> None:
    """test_target_forwarding's ACL entries: ternary source prefixes, a range, an optional DSCP."""
    pipeline.table_insert(
        ACL, {"hdr.ipv4.src_addr": (0x0A000000, 0xFF000000)}, "AclIngress.deny", (), priority=10
    )
    pipeline.table_insert(
        ACL,
        {"hdr.ipv4.src_addr": (0x0A000005, 0xFFFFFFFF), "hdr.l4.dport": (1000, 2000)},
        "AclIngress.allow",
        (),
        priority=20,
    )
    pipeline.table_insert(ACL, {"dscp": 46}, "AclIngress.deny", (), priority=5)


def acl_frames() -> list[tuple[int, bytes]]:
    """The frames of test_target_forwarding's ACL tests."""
    frames = [
        (1, ipv4_test_frame("1.1.1.1", src_ip="10.0.0.5", dport=1500)),
        (1, ipv4_test_frame("1.1.1.1", src_ip="10.0.0.5", dport=2001)),
        (1, ipv4_test_frame("1.1.1.1", src_ip="10.0.0.6", dport=1500)),
        (1, ipv4_test_frame("1.1.1.1", src_ip="11.0.0.6", dport=1500)),
        (1, ipv4_test_frame("1.1.1.1", src_ip="11.0.0.6", dport=1500, tos=46)),
        (2, ipv4_test_frame("1.1.1.1", proto=TCP)),
        (1, Ether() / IP(dst="1.1.1.1", proto=47) / Raw(b"gre")),
        (3, ipv4_test_frame("1.1.1.1")),
    ]
    return [(port, bytes(packet)) for port, packet in frames]


def acl_frame(rng: random.Random) -> tuple[int, bytes]:
    """IPv4 with sources, ports, DSCP and protocols around the ACL entries; others; truncated."""
    port = rng.choice((1, 2, 3))
    if rng.random() < 0.1:
        return port, other_frame(rng)
    src = rng.choice((0x0A000005, 0x0A000006, 0x0B000006, rng.getrandbits(32)))
    proto = rng.choice((6, 17, 17, 47))
    dport = rng.choice((999, 1000, 1500, 2000, 2001, 80))
    l4 = struct.pack("!HH", rng.getrandbits(16), dport) + bytes(rng.randrange(0, 12))
    tos = rng.choice((0, 46, rng.getrandbits(8)))
    ip = ipv4_packet(rng, src, 0x01010101, proto, 64, tos, l4)
    return port, maybe_truncated(rng, ETHERNET + b"\x08\x00" + ip)


def srcroute_frames() -> list[tuple[int, bytes]]:
    """The frames of test_target_forwarding's source-routing tests."""
    return [
        (1, bytes(routed([3, 7, 2]))),
        (1, bytes(routed([5]))),
        (1, bytes(routed([1, 2, 3, 4, 5]))),
        (1, bytes(routed([1, 2, 3, 4]))),
        (1, bytes(routed([1, 2]))[:16]),
    ]


def srcroute_frame(rng: random.Random) -> tuple[int, bytes]:
    """0-6 route entries (ports 0..2**15, bottom of stack sometimes missing), IPv4 or not; truncated."""
    port = rng.choice((1, 2))
    if rng.random() < 0.1:
        return port, other_frame(rng)
    hops = rng.choice((0, 1, 1, 2, 3, 4, 4, 5, 6))
    entries = b""
    for i in range(hops):
        bos = int(i == hops - 1 and rng.random() < 0.9)
        entries += struct.pack("!H", (bos << 15) | rng.choice((1, 2, 3, 4, 511, 600, rng.getrandbits(15))))
    payload = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 16)))
    rest = ipv4_packet(rng, 0xC0A80101, 0x0A000001, 17, rng.choice((0, 1, 9)), 0, payload)
    if rng.random() < 0.1:
        rest = payload
    return port, maybe_truncated(rng, ETHERNET + b"\x12\x34" + entries + rest)


def features_frames() -> list[tuple[int, bytes]]:
    """The frames of test_target_features (operands, exit, verify, setInvalid, other, truncated, empty)."""
    frames = [bytes(ops_packet(*operands)) for operands in OPERANDS]
    frames += [bytes(ops_packet(0x10, a, b, 0, 0, 0)) for a, b in ((0xFE, 1), (0xEE, 1), (5, 0xDD))]
    frames += [bytes(ops_packet(kind, a, 0, 0, 0, 0)) for kind, a in ((1, 10), (0x21, 20), (0x99, 40))]
    frames += [bytes(Ether(type=0x0800) / Raw(b"x" * 30)), bytes(ops_packet(0x10, 1, 2, 3, 4, 5))[:20], b""]
    return [(3, frame) for frame in frames]


def features_frame(rng: random.Random) -> tuple[int, bytes]:
    """ops headers with random operands and the kinds/values the program branches on; others; truncated."""
    port = rng.choice((1, 3, 4))
    if rng.random() < 0.1:
        return port, other_frame(rng)
    kind = rng.choice((0x01, 0x10, 0x25, 0x47, 0x7F, 0x90, rng.getrandbits(8)))
    a = rng.choice((0xFE, 0xEE, 0xAA, rng.getrandbits(8), rng.getrandbits(8)))
    b = rng.choice((0xDD, rng.getrandbits(8), rng.getrandbits(8)))
    ops = bytes((kind, a, b, rng.getrandbits(8), rng.getrandbits(8))) + rng.getrandbits(16).to_bytes(2, "big")
    ops += bytes(rng.getrandbits(8) for _ in range(23))  # result fields: overwritten by the program
    payload = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 12)))
    return port, maybe_truncated(rng, ETHERNET + b"\x88\xb6" + ops + payload)


def calc_frames() -> list[tuple[int, bytes]]:
    """The frames of test_target_calc."""
    requests = [("+", 7, 9), ("-", 3, 10), ("&", 0xF0F0, 0xFF00), ("|", 1, 6), ("^", 5, 5), ("*", 1, 2)]
    frames = [bytes(calc_request(op, a, b)) for op, a, b in requests]
    frames.append(bytes(calc_request("+", 1, 2, magic=b"Q4")))
    return [(4, frame) for frame in frames]


def calc_frame(rng: random.Random) -> tuple[int, bytes]:
    """Calculator requests (all operations, an unknown one, a wrong magic), others, truncated."""
    port = rng.choice((1, 2, 3, 4))
    if rng.random() < 0.1:
        return port, other_frame(rng)
    magic = b"P4" if rng.random() < 0.9 else rng.choice((b"Q4", b"P5"))
    op = rng.choice(b"+-&|^*")
    calc = (
        magic
        + bytes((rng.getrandbits(8), op))
        + struct.pack("!III", *(rng.getrandbits(32) for _ in range(3)))
    )
    return port, maybe_truncated(rng, ETHERNET + b"\x12\x34" + calc + b"end")


# ------------------------------------------------------------------ a program with a busy egress

#: Egress drops (mark_to_drop + exit, by a table, by queue depth), exits, and writes the
#: standard metadata it sees into an info header; the parser has a stack and verify();
#: checksums are verified and updated; registers and direct counters on both sides.
EGRESS_P4 = r"""
#include <core.p4>
#include <v1model.p4>

error { BadOp }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header ctl_t { bit<8> op; bit<8> prio; bit<16> port; bit<8> count; bit<16> csum; }
header item_t { bit<8> v; }
header info_t {
    bit<16> egress_port;
    bit<16> ingress_port;
    bit<32> enq_qdepth;
    bit<32> deq_qdepth;
    bit<32> deq_timedelta;
    bit<48> ingress_ts;
    bit<48> egress_ts;
    bit<32> enq_ts;
    bit<32> packet_length;
    bit<8>  priority;
    bit<8>  parser_ok;
    bit<8>  mark;
    bit<32> seen;
    bit<16> csum;
}
struct headers_t { ethernet_t ethernet; ctl_t ctl; item_t[3] items; info_t info; }
struct metadata_t { bit<8> remaining; bit<8> mark; bit<32> seen; }

parser FzParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x88B7: parse_ctl;
            default: accept;
        }
    }
    state parse_ctl {
        packet.extract(hdr.ctl);
        verify(hdr.ctl.op != 0xEE, error.BadOp);
        meta.remaining = hdr.ctl.count;
        transition select(hdr.ctl.count) {
            0: accept;
            default: parse_item;
        }
    }
    state parse_item {
        packet.extract(hdr.items.next);
        meta.remaining = meta.remaining - 1;
        transition select(meta.remaining) {
            0: accept;
            default: parse_item;
        }
    }
}

control FzVerify(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ctl.isValid(), { hdr.ctl.op, hdr.ctl.prio, hdr.ctl.port, hdr.ctl.count },
                        hdr.ctl.csum, HashAlgorithm.csum16);
    }
}

control FzIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    register<bit<32>>(2) seen;
    counter(16, CounterType.packets_and_bytes) by_op;
    direct_counter(CounterType.packets_and_bytes) steer_hits;

    action set_out(bit<9> port) { standard_metadata.egress_spec = port; }
    action deny() { mark_to_drop(standard_metadata); }
    action set_prio(bit<3> prio) { standard_metadata.priority = prio; }
    table steer {
        key = { hdr.ctl.op: ternary; hdr.ctl.prio: exact; }
        actions = { set_out; deny; set_prio; NoAction; }
        default_action = NoAction();
        counters = steer_hits;
    }

    apply {
        bit<32> n;
        seen.read(n, 0);
        n = n + 1;
        seen.write(0, n);
        meta.seen = n;
        if (standard_metadata.checksum_error == 1) {
            meta.mark = 0xCE;
        }
        if (standard_metadata.parser_error != error.NoError) {
            by_op.count(15);
            if (standard_metadata.parser_error == error.PacketTooShort) {
                mark_to_drop(standard_metadata);
                return;
            }
            standard_metadata.egress_spec = 9;
            exit;
        }
        if (!hdr.ctl.isValid()) {
            mark_to_drop(standard_metadata);
            return;
        }
        standard_metadata.egress_spec = (bit<9>) hdr.ctl.port;
        standard_metadata.priority = (bit<3>) hdr.ctl.prio;
        by_op.count((bit<32>) hdr.ctl.op[3:0]);
        if (hdr.ctl.op == 1) {
            exit;
        }
        steer.apply();
        if (hdr.items[0].isValid()) {
            hdr.items[0].v = hdr.items[0].v + 1;
        }
    }
}

control FzEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets) tx;
    register<bit<32>>(512) last_seen;
    direct_counter(CounterType.packets_and_bytes) egress_hits;

    action edrop() { mark_to_drop(standard_metadata); }
    action tag(bit<8> mark) { meta.mark = mark; }
    table eg {
        key = { standard_metadata.egress_port: exact; }
        actions = { edrop; tag; NoAction; }
        default_action = NoAction();
        counters = egress_hits;
    }

    apply {
        tx.count((bit<32>) standard_metadata.egress_port);
        last_seen.write((bit<32>) standard_metadata.egress_port, meta.seen);
        if (hdr.ctl.op == 2) {
            mark_to_drop(standard_metadata);
            exit;
        }
        if (hdr.ctl.op == 3 && standard_metadata.enq_qdepth > 2) {
            mark_to_drop(standard_metadata);
        }
        if (hdr.ctl.op == 4) {
            exit;
        }
        eg.apply();
        hdr.info.setValid();
        hdr.info.egress_port = (bit<16>) standard_metadata.egress_port;
        hdr.info.ingress_port = (bit<16>) standard_metadata.ingress_port;
        hdr.info.enq_qdepth = (bit<32>) standard_metadata.enq_qdepth;
        hdr.info.deq_qdepth = (bit<32>) standard_metadata.deq_qdepth;
        hdr.info.deq_timedelta = standard_metadata.deq_timedelta;
        hdr.info.ingress_ts = standard_metadata.ingress_global_timestamp;
        hdr.info.egress_ts = standard_metadata.egress_global_timestamp;
        hdr.info.enq_ts = standard_metadata.enq_timestamp;
        hdr.info.packet_length = standard_metadata.packet_length;
        hdr.info.priority = (bit<8>) standard_metadata.priority;
        hdr.info.parser_ok = standard_metadata.parser_error == error.NoError ? 8w1 : 8w0;
        hdr.info.mark = meta.mark;
        hdr.info.seen = meta.seen;
        if (hdr.ctl.op == 6) {
            hdr.items.pop_front(1);
        }
        if (hdr.ctl.op == 7) {
            hdr.ctl.setInvalid();
        }
    }
}

control FzCompute(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.info.isValid(), { hdr.info.egress_port, hdr.info.seen, hdr.info.egress_ts },
                        hdr.info.csum, HashAlgorithm.csum16);
    }
}

control FzDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ctl);
        packet.emit(hdr.items);
        packet.emit(hdr.info);
    }
}

V1Switch(FzParser(), FzVerify(), FzIngress(), FzEgress(), FzCompute(), FzDeparser()) main;
"""

STEER, EG = "FzIngress.steer", "FzEgress.eg"


def setup_egress(pipeline: Pipeline) -> None:
    """Steering by ternary op (to ports 5 and 6, deny, priority), egress tag/drop per port, a default."""
    pipeline.table_insert(
        STEER, {"hdr.ctl.op": (0x10, 0xF0), "hdr.ctl.prio": 0}, "FzIngress.set_out", (5,), 10
    )
    pipeline.table_insert(
        STEER, {"hdr.ctl.op": (0x10, 0xF0), "hdr.ctl.prio": 1}, "FzIngress.set_out", (6,), 10
    )
    pipeline.table_insert(STEER, {"hdr.ctl.op": (0x20, 0xF0), "hdr.ctl.prio": 0}, "FzIngress.deny", (), 10)
    pipeline.table_insert(
        STEER, {"hdr.ctl.op": (0x21, 0xFF), "hdr.ctl.prio": 0}, "FzIngress.set_prio", (6,), 20
    )
    pipeline.table_insert(
        STEER, {"hdr.ctl.op": (0x30, 0xF0), "hdr.ctl.prio": 2}, "FzIngress.set_prio", (5,), 10
    )
    pipeline.table_insert(EG, {"standard_metadata.egress_port": 5}, "FzEgress.tag", (0x55,))
    pipeline.table_insert(EG, {"standard_metadata.egress_port": 6}, "FzEgress.edrop", ())
    pipeline.table_insert(EG, {"standard_metadata.egress_port": 7}, "NoAction", ())
    pipeline.table_set_default(EG, "FzEgress.tag", (0x11,))


def egress_frame(rng: random.Random) -> tuple[int, bytes]:
    """ctl headers: the ops each block branches on, egress ports incl. the drop port and > 511,
    0-5 items (3 fit), right or wrong checksums, the verify() value; others; truncated."""
    port = rng.choice((1, 2, 3, 600))
    if rng.random() < 0.08:
        return port, other_frame(rng)
    op = rng.choice((0, 1, 2, 3, 3, 4, 5, 6, 7, 0x10, 0x15, 0x21, 0x2F, 0x30, 0xEE, rng.getrandbits(8)))
    prio = rng.choice((0, 0, 1, 2, 3, 7, rng.getrandbits(8)))
    egress_port = rng.choice((0, 2, 4, 5, 6, 7, 9, 300, 511, 1023, rng.getrandbits(16)))
    count = rng.choice((0, 0, 1, 2, 3, 4, 5))
    fields = struct.pack("!BBHB", op, prio, egress_port, count)
    checksum = internet_checksum(fields) if rng.random() < 0.7 else rng.getrandbits(16)
    items = bytes(rng.getrandbits(8) for _ in range(min(count, 6)))
    payload = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 10)))
    frame = ETHERNET + b"\x88\xb7" + fields + struct.pack("!H", checksum) + items + payload
    return port, maybe_truncated(rng, frame)


# ------------------------------------------------------------------ the cases


@dataclass(frozen=True)
class Case:
    """A program, its entries, its fixed frames and random-frame generator, what must occur."""

    name: str
    path: Path | None  # None: EGRESS_P4
    setup: Callable[[Pipeline], None] | None
    fixed: Callable[[], list[tuple[int, bytes]]]
    random_frame: Callable[[random.Random], tuple[int, bytes]]
    count: int
    kinds: frozenset[str]  # outcomes the frames must produce (those the admit policy allows)

    def frames(self) -> list[tuple[int, bytes]]:
        """The fixed frames, then ``count`` seeded random ones."""
        rng = random.Random(f"fused:{self.name}")
        return self.fixed() + [self.random_frame(rng) for _ in range(self.count)]


BASE_KINDS = frozenset({"sent", "ingress_drop", "queue", "parser_error", "drained_egress"})
CASES = [
    Case("card", None, setup_card, list, card_frame, 2500, BASE_KINDS),
    Case("basic", PROGS / "basic.p4", setup_basic, basic_frames, basic_frame, 600, BASE_KINDS),
    Case("acl", PROGS / "acl.p4", setup_acl, acl_frames, acl_frame, 600, BASE_KINDS),
    Case("srcroute", PROGS / "srcroute.p4", None, srcroute_frames, srcroute_frame, 600, BASE_KINDS),
    Case("features", PROGS / "features.p4", None, features_frames, features_frame, 600, BASE_KINDS),
    Case("calc", PROGS / "calc.p4", None, calc_frames, calc_frame, 600, BASE_KINDS),
    Case(
        "egress", None, setup_egress, list, egress_frame, 1200, BASE_KINDS | {"egress_drop", "drained_drop"}
    ),
]
CASE_PARAMS = [pytest.param(case, marks=needs_card if case.name == "card" else ()) for case in CASES]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[Case], Any]]:
    """Compiled programs by case (each compiled once for the module)."""
    folder = tmp_path_factory.mktemp("fused_p4")
    programs: dict[str, Any] = {}

    def get(case: Case) -> Any:
        if case.name not in programs:
            if case.name == "card":
                programs[case.name] = CARD
            elif case.path is None:
                path = folder / f"{case.name}.p4"
                path.write_text(EGRESS_P4)
                programs[case.name] = compile_program(path)
            else:
                programs[case.name] = compile_program(case.path)
        return programs[case.name]

    yield get


@pytest.fixture(scope="module")
def plain_compiled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[Case], Any]]:
    """The programs compiled with the fusion pass declining: run_fused as the code generator writes it."""
    folder = tmp_path_factory.mktemp("plain_p4")
    programs: dict[str, Any] = {}

    def refuse(python_source: str, table_actions: dict[str, list[str]]) -> str:
        raise FusionError("declined by the test")

    def get(case: Case) -> Any:
        if case.name not in programs:
            if case.name == "card":
                path = CARD_PROGRAM
            elif case.path is None:
                path = folder / f"{case.name}.p4"
                path.write_text(EGRESS_P4)
            else:
                path = case.path
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(compiler, "fuse", refuse)
                clear_memory_cache()  # the cache holds the fused programs under the same key
                try:
                    programs[case.name] = compile_program(path, use_disk_cache=False)
                finally:
                    clear_memory_cache()
        return programs[case.name]

    yield get


def required_kinds(case: Case, policy: str) -> set[str]:
    """The outcomes a case must produce under an admit policy."""
    kinds = set(case.kinds)
    if policy == "never":
        kinds -= {"sent", "egress_drop"}
    if policy == "always":
        kinds -= {"queue", "drained_egress", "drained_drop"}
    return kinds


# ------------------------------------------------------------------ tests


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("case", CASE_PARAMS, ids=[case.name for case in CASES])
def test_fused_driver_matches_ingress_plus_egress(
    case: Case, policy: str, compiled: Callable[[Case], Any]
) -> None:
    """Fixed and seeded random frames: same outcomes, hook calls, queued states and program state."""
    pair = new_pair(compiled(case), case.setup)
    tally = run_sequence(
        f"{case.name}/{policy}", pair, case.frames(), POLICIES[policy], seed=f"{case.name}:{policy}"
    )
    missing = required_kinds(case, policy) - set(tally)
    assert not missing, f"the frames never produced {sorted(missing)} (seen: {dict(tally)})"


@pytest.mark.parametrize("case", CASE_PARAMS, ids=[case.name for case in CASES])
def test_the_driver_as_generated_matches_too(case: Case, plain_compiled: Callable[[Case], Any]) -> None:
    """When the fusion pass declines a program, the switch runs run_fused as generated: it must agree too."""
    program = plain_compiled(case)
    driver = program.python_source[program.python_source.index("def run_fused") :]
    assert "hdr = " in driver and "ctl_" in driver  # the objects and the block calls are still there
    pair = new_pair(program, case.setup)
    run_sequence(f"{case.name}/plain", pair, case.frames(), POLICIES["coin"], seed=f"{case.name}:plain")


BROKEN_TABLES = [
    pytest.param("card", "MyIngress.route", id="card-ingress-route", marks=needs_card),
    pytest.param("card", "MyEgress.host_out", id="card-egress-host_out", marks=needs_card),
    pytest.param("egress", EG, id="egress-egress-eg"),
]


@pytest.mark.parametrize("policy", ["always", "coin"])
@pytest.mark.parametrize("case_name,table", BROKEN_TABLES)
def test_exceptions_are_the_same(
    case_name: str, table: str, policy: str, compiled: Callable[[Case], Any]
) -> None:
    """A table lookup that fails (as in the switch test: ``by_key = None``) raises the same
    exception type from run_fused as from the reference drivers, after the same side effects."""
    case = next(case for case in CASES if case.name == case_name)

    def setup(pipeline: Pipeline) -> None:
        if case.setup is not None:
            case.setup(pipeline)
        pipeline.tables[table].by_key = None

    pair = new_pair(compiled(case), setup)
    rng = random.Random(f"broken:{table}")
    frames = [case.random_frame(rng) for _ in range(300)]
    tally = run_sequence(f"{case_name}/{table}/{policy}", pair, frames, POLICIES[policy], seed=3)
    assert tally["raised"] + tally["drained_raised"] > 0, dict(tally)


class DualCard:
    """A vector runner's card (vectors.CardTarget) that runs every frame through both sides.

    The frame goes through run_fused on one pipeline and the reference drivers on the
    other; they must agree. A step whose egress runs later or behind a queue
    (egress_time_us != ingress_time_us or enq_qdepth != 0) is one that ``admit``
    refuses: its queued state then goes through run_egress with the step's queue
    depth and egress time. The outcome returned is run_fused's, so that the vector's
    expectations hold for it too.
    """

    def __init__(self, policy: Policy, where: str) -> None:
        """Two fresh cards (pipelines with the vector runner's parameter ordering)."""
        self.fused_card, self.reference_card = EmbeddedCard(CARD), EmbeddedCard(CARD)
        self.pair = Pair(self.fused_card.pipeline, self.reference_card.pipeline)
        self.policy = policy
        self.where = where
        self.sent = 0

    def set_default(self, table: str, action: str, params: Mapping[str, int]) -> None:
        """Set a default action on both pipelines."""
        self.fused_card.set_default(table, action, params)
        self.reference_card.set_default(table, action, params)

    def insert(self, table: str, match: Mapping[str, Any], action: str, params: Mapping[str, int]) -> None:
        """Insert an entry in both pipelines."""
        self.fused_card.insert(table, match, action, params)
        self.reference_card.insert(table, match, action, params)

    def send(
        self, frame: bytes, port: int, *, ingress_time_us: int, egress_time_us: int, enq_qdepth: int
    ) -> Outcome:
        """Both sides on one frame; run_fused's outcome."""
        number, self.sent = self.sent, self.sent + 1
        at_once = egress_time_us == ingress_time_us and enq_qdepth == 0
        policy = self.policy if at_once else admit_never
        result = send_both(self.pair, frame, port, ingress_time_us, lambda p, q: policy(number, p, q))
        where = f"{self.where}: frame {number} on port {port}"
        assert_same(where, frame, result.fused, result.reference)
        events = result.fused
        if events[-1][0] == "raised":
            raise AssertionError(f"{where}: both sides raised {events[-1][1]}")
        admitted = [event for event in events if event[0] == "admit"]
        priority = admitted[0][2] if admitted else None
        if result.fused_state is not None:
            queued_port = admitted[0][1]
            args = (queued_port, enq_qdepth, 0, 0, egress_time_us)
            fused, reference = egress_both(self.pair, result, args)
            assert_same(f"{where}: egress of the queued state {args}", frame, fused, reference)
            if fused[0] == "raised":
                raise AssertionError(f"{where}: egress of the queued state raised {fused[1]}")
            if fused[1] is None:
                return Outcome(dropped=True, priority=priority)
            return Outcome(dropped=False, port=queued_port, frame=fused[1], priority=priority)
        sent = events[-1][1]
        if sent is None:
            return Outcome(dropped=True, priority=priority)
        return Outcome(dropped=False, port=sent[0], frame=sent[1], priority=priority)

    def counter(self, name: str, index: int) -> tuple[int, int]:
        """A counter cell of run_fused's pipeline (the same as the reference's)."""
        fused = self.pair.fused.counter_read(name, index)
        assert fused == self.pair.reference.counter_read(name, index), (
            f"{self.where}: counter {name}[{index}]"
        )
        return fused


@needs_card
@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("vector", VECTORS, ids=VECTOR_IDS)
def test_card_vectors_through_the_fused_driver(vector: dict[str, Any], policy: str) -> None:
    """Every card vector: both sides agree frame by frame, run_fused meets the vector's expectations,
    and every card ends with the same program state on both sides."""
    cards: list[DualCard] = []

    def new_card() -> DualCard:
        cards.append(DualCard(POLICIES[policy], f"{vector['name']}/{policy}: card {len(cards)}"))
        return cards[-1]

    run_vector(vector, new_card)
    for card in cards:
        assert_same_program_state(card.where, card.pair)


def test_the_reference_side_follows_the_documented_protocol() -> None:
    """The comparison is only as good as its reference: on a tiny program, check the events by hand."""
    program = compile_program(PROGS / "basic.p4")
    pair = new_pair(program, setup_basic)
    frame = bytes(ipv4_test_frame("10.1.2.9"))
    sent = send_both(pair, frame, 5, 100, lambda port, priority: True)
    assert sent.fused == sent.reference
    assert sent.reference[0] == ("admit", 3, 0) and sent.reference[-1][0] == "result"
    assert sent.reference[-1][1][0] == 3 and sent.fused_state is None
    queued = send_both(pair, frame, 5, 101, lambda port, priority: False)
    assert queued.reference[:2] == [("admit", 3, 0), ("queue", 3, 0, 101)]
    assert queued.reference[-1] == ("result", None) and queued.fused_state is not None
    fused, reference = egress_both(pair, queued, (3, 3, 1, 5, 110))
    assert fused == reference == ("egress", sent.reference[-1][1][1])
    dropped = send_both(pair, bytes(ipv4_test_frame("10.9.0.1")), 5, 102, lambda port, priority: True)
    assert dropped.fused == dropped.reference == [("ingress_drop",), ("result", None)]
    short = send_both(pair, frame[:20], 5, 103, lambda port, priority: True)
    assert short.fused == short.reference and short.reference[0][0] == "parser_error"
