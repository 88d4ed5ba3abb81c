"""Expression semantics of the embedded P4 target (tests/p4progs/features.p4) against Python arithmetic.

Each packet carries operands in an `ops` header; the program writes results of
P4 operators into the same header. The expected results are computed here with
plain Python integer arithmetic from the P4 specification's rules.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.fields import ByteField, ShortField, SignedByteField
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw, bind_layers

from p4switch import compile_program

PROGRAM = Path(__file__).resolve().parents[1] / "p4progs" / "features.p4"
ETHERTYPE_OPS = 0x88B6


class Ops(Packet):
    """The ops_t header of features.p4."""

    name = "Ops"
    fields_desc = [
        ByteField("kind", 0),
        ByteField("a", 0),
        ByteField("b", 0),
        SignedByteField("s", 0),
        SignedByteField("t", 0),
        ShortField("w", 0),
        ByteField("sum", 0),
        ByteField("diff", 0),
        ByteField("prod", 0),
        ByteField("shl", 0),
        ByteField("shr", 0),
        SignedByteField("ssum", 0),
        SignedByteField("sshr", 0),
        ByteField("s2b", 0),
        ShortField("ext", 0),
        ShortField("sext", 0),
        ByteField("hilo", 0),
        ShortField("cat", 0),
        ByteField("satadd", 0),
        ByteField("satsub", 0),
        ByteField("neg", 0),
        ByteField("cpl", 0),
        ByteField("mx", 0),
        ByteField("flags", 0),
        ByteField("path", 0),
        ByteField("peek", 0),
    ]


class Extra(Packet):
    """The extra_t header of features.p4."""

    name = "Extra"
    fields_desc = [ByteField("v", 0)]


bind_layers(Ether, Ops, type=ETHERTYPE_OPS)


def signed8(value: int) -> int:
    """Two's complement reading of the low 8 bits."""
    value &= 0xFF
    return value - 256 if value >= 128 else value


def expected_results(kind: int, a: int, b: int, s: int, t: int, w: int) -> dict:
    """The ops fields features.p4 computes, by P4 rules (bit<W> modulo 2**W, int<W> two's complement)."""
    flags = (w >> 8) & 0xF
    if a == b:
        flags |= 0x80
    if s < t:
        flags |= 0x40
    if a >= b:
        flags |= 0x20
    if (a & b) != 0 and kind != 0x7F:
        flags |= 0x10
    if kind == 1:
        path = 1
    elif kind & 0xF0 == 0x20:
        path = 2
    elif 0x40 <= kind <= 0x4F:
        path = 3
    elif a == 0xAA:
        path = 5
    else:
        path = 4
    return {
        "sum": (a + b) % 256,
        "diff": (a - b) % 256,
        "prod": (a * b) % 256,
        "shl": (a * 8) % 256,
        "shr": a // 4,
        "ssum": signed8(s + t),
        "sshr": s // 2,
        "s2b": s % 256,
        "ext": a,
        "sext": s % 65536,
        "hilo": ((a // 16) << 4) | (b % 16),
        "cat": a * 256 + b,
        "satadd": min(a + b, 255),
        "satsub": max(a - b, 0),
        "neg": (256 - a) % 256,
        "cpl": 255 - a,
        "mx": max(a, b),
        "flags": flags,
        "path": path,
        "peek": kind,
    }


@pytest.fixture(scope="module")
def program():
    """features.p4, compiled once."""
    return compile_program(PROGRAM, use_disk_cache=False)


def ops_packet(kind, a, b, s, t, w, payload=b"payload") -> Packet:
    """An Ethernet frame with an ops header and a payload."""
    return (
        Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
        / Ops(kind=kind, a=a, b=b, s=s, t=t, w=w)
        / Raw(payload)
    )


OPERANDS = [
    (0x10, 200, 100, -112, 80, 0x0ABC),
    (0x01, 3, 3, 5, -5, 0xF123),
    (0x25, 0, 255, -128, -1, 0x0000),
    (0x47, 255, 1, 127, 1, 0x0F00),
    (0x7F, 0x0F, 0x0F, -1, -1, 0x0100),
    (0x90, 0xAA, 7, 64, 64, 0x1234),
    (0x33, 17, 200, -3, 2, 0x0500),
]


@pytest.mark.parametrize("kind,a,b,s,t,w", OPERANDS)
def test_operators_follow_p4_width_rules(program, kind, a, b, s, t, w):
    """Every result field equals the independently computed value."""
    pipeline = program.new_pipeline()
    sent = ops_packet(kind, a, b, s, t, w)
    out = pipeline.process(bytes(sent), 3)
    assert len(out) == 1 and out[0][0] == 1
    expected = ops_packet(kind, a, b, s, t, w)
    for name, value in expected_results(kind, a, b, s, t, w).items():
        setattr(expected[Ops], name, value)
    if kind == 1:  # the program adds the extra header after ops (setValid on an unparsed header)
        expected = Ether(bytes(expected[Ether])[:14]) / expected[Ops].copy()
        expected[Ops].remove_payload()
        expected = expected / Extra(v=0xAB) / Raw(b"payload")
    assert out[0][1] == bytes(expected)


def test_exit_skips_the_rest_of_ingress(program):
    """exit leaves ingress at once: the packet goes out unchanged on port 2."""
    sent = ops_packet(0x10, 0xFE, 1, 0, 0, 0)
    out = program.new_pipeline().process(bytes(sent), 3)
    assert out == [(2, bytes(sent))]


def test_verify_failure_reaches_ingress_as_parser_error(program):
    """A failed verify() sets parser_error, which ingress sees."""
    sent = ops_packet(0x10, 0xEE, 1, 0, 0, 0)
    expected = ops_packet(0x10, 0xEE, 1, 0, 0, 0)
    expected[Ops].path = 99
    assert program.new_pipeline().process(bytes(sent), 3) == [(1, bytes(expected))]


def test_invalidated_header_is_not_emitted(program):
    """setInvalid() removes the header from the output."""
    sent = ops_packet(0x10, 5, 0xDD, 0, 0, 0)
    out = program.new_pipeline().process(bytes(sent), 3)
    assert out == [(1, bytes(sent[Ether])[:14] + b"payload")]


def test_register_accumulates_and_counter_counts_paths(program):
    """Registers keep state across packets (wrapping); counters count packets and bytes."""
    pipeline = program.new_pipeline()
    sizes = []
    for kind, a in ((0x01, 10), (0x21, 20), (0x22, 30), (0x99, 40)):
        packet = bytes(ops_packet(kind, a, 0, 0, 0, 0))
        sizes.append(len(packet))
        pipeline.process(packet, 3)
    assert pipeline.register_read("OpsIngress.total", 0) == 100
    assert pipeline.counter_read("OpsIngress.paths", 1) == (1, sizes[0])
    assert pipeline.counter_read("OpsIngress.paths", 2) == (2, sizes[1] + sizes[2])
    assert pipeline.counter_read("OpsIngress.paths", 4) == (1, sizes[3])
    assert pipeline.counter_read("OpsIngress.paths", 3) == (0, 0)
    pipeline.counter_reset("OpsIngress.paths")
    assert pipeline.counter_read("OpsIngress.paths", 2) == (0, 0)
    pipeline.register_write("OpsIngress.total", 0, 0xFFFFFFFF)
    pipeline.process(bytes(ops_packet(0x10, 2, 0, 0, 0, 0)), 3)
    assert pipeline.register_read("OpsIngress.total", 0) == 1  # bit<32> wraps


def test_non_ops_frame_is_dropped_and_truncated_frame_never_crashes(program):
    """Other and truncated frames are handled without exceptions."""
    pipeline = program.new_pipeline()
    other = Ether(type=0x0800) / Raw(b"x" * 30)
    assert pipeline.process(bytes(other), 3) == []
    truncated = bytes(ops_packet(0x10, 1, 2, 3, 4, 5))[:20]
    assert pipeline.process(truncated, 3) == []  # PacketTooShort: ops invalid, ingress drops
    assert pipeline.process(b"", 3) == []
