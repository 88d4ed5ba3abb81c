"""Packet tests of the embedded P4 target on small programs: IPv4 LPM forwarder, ternary ACL, source routing.

Packets are built with scapy; expected outputs are built with scapy too, from
what each program is written to do (scapy recomputes IPv4 checksums).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.fields import BitField
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw, bind_layers

from p4switch import compile_program

PROGS = Path(__file__).resolve().parents[1] / "p4progs"


def frame(
    dst_ip: str, ttl: int = 64, proto=UDP, dport: int = 80, src_ip: str = "192.168.1.1", tos: int = 0
) -> Packet:
    """An Ethernet/IPv4/L4 frame."""
    return (
        Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02")
        / IP(src=src_ip, dst=dst_ip, ttl=ttl, tos=tos)
        / proto(sport=1234, dport=dport)
        / Raw(b"data")
    )


def rebuilt(packet: Packet) -> bytes:
    """Bytes of a packet with the IPv4 checksum recomputed by scapy."""
    packet = packet.copy()
    del packet[IP].chksum
    return bytes(packet)


# ---------------------------------------------------------------- basic IPv4 forwarder
@pytest.fixture(scope="module")
def basic():
    """The basic forwarder, compiled once."""
    return compile_program(PROGS / "basic.p4", use_disk_cache=False)


def test_lpm_picks_longest_prefix_decrements_ttl_and_fixes_checksum(basic):
    """Longest prefix wins; TTL and checksum are updated as the program says."""
    pipe = basic.new_pipeline()
    table, action = "MyIngress.ipv4_lpm", "MyIngress.ipv4_forward"
    pipe.table_insert(table, {"hdr.ipv4.dstAddr": (0x0A000000, 8)}, action, (0x0000000000AA, 1))
    pipe.table_insert(table, {"hdr.ipv4.dstAddr": (0x0A010000, 16)}, action, (0x0000000000BB, 2))
    pipe.table_insert(table, {"hdr.ipv4.dstAddr": (0x0A010200, 24)}, action, (0x0000000000CC, 3))
    for dst, port, mac in (
        ("10.9.9.9", 1, "00:00:00:00:00:aa"),
        ("10.1.9.9", 2, "00:00:00:00:00:bb"),
        ("10.1.2.9", 3, "00:00:00:00:00:cc"),
    ):
        sent = frame(dst, ttl=64)
        expected = sent.copy()
        expected[Ether].src = sent[Ether].dst
        expected[Ether].dst = mac
        expected[IP].ttl = 63
        assert pipe.process(bytes(sent), 5) == [(port, rebuilt(expected))]


def test_lpm_miss_drops_by_default_action_and_ttl_wraps(basic):
    """A miss runs the default drop; a TTL of 0 wraps to 255."""
    pipe = basic.new_pipeline()
    assert pipe.process(bytes(frame("11.0.0.1")), 5) == []
    pipe.table_insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0, 0)}, "MyIngress.ipv4_forward", (1, 7))
    sent = frame("11.0.0.1", ttl=0)
    out = pipe.process(bytes(sent), 5)
    assert out[0][0] == 7 and Ether(out[0][1])[IP].ttl == 255


def test_non_ipv4_is_dropped_and_bad_checksum_is_flagged(basic):
    """verify_checksum sets checksum_error without dropping."""
    pipe = basic.new_pipeline()
    assert pipe.process(bytes(Ether(type=0x86DD) / Raw(b"x" * 40)), 1) == []
    pipe.table_insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0, 0)}, "MyIngress.ipv4_forward", (1, 7))
    good = frame("1.2.3.4")
    result = pipe.ingress(bytes(good), 1)
    assert result.state[2].f_checksum_error == 0
    bad = good.copy()
    bad[IP].chksum = 0x1234
    result = pipe.ingress(bytes(bad), 1)
    assert result.state[2].f_checksum_error == 1 and not result.dropped


def test_ingress_egress_split_reports_spec_and_priority(basic):
    """ingress() reports what the traffic manager needs; egress() finishes the packet."""
    pipe = basic.new_pipeline()
    pipe.table_insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0, 0)}, "MyIngress.ipv4_forward", (1, 4))
    sent = bytes(frame("1.2.3.4"))
    result = pipe.ingress(sent, 2, timestamp_us=1000)
    assert (result.dropped, result.egress_spec, result.priority, result.packet_length) == (
        False,
        4,
        0,
        len(sent),
    )
    replica = result.copy()
    first, second = pipe.egress(result, 4), pipe.egress(replica, 6)
    assert first == second and first is not None  # no egress logic: both replicas leave unchanged


# ---------------------------------------------------------------- ternary ACL
@pytest.fixture(scope="module")
def acl():
    """The ACL program, compiled once."""
    return compile_program(PROGS / "acl.p4", use_disk_cache=False)


def test_acl_priorities_ranges_and_optional(acl):
    """Higher priority wins; ranges and optional keys match as written; counters follow."""
    pipe = acl.new_pipeline()
    table = "AclIngress.acl"
    # deny 10.0.0.0/8 -> anything (priority 10), but allow 10.0.0.5 to ports 1000..2000 (priority 20)
    pipe.table_insert(
        table, {"hdr.ipv4.src_addr": (0x0A000000, 0xFF000000)}, "AclIngress.deny", (), priority=10
    )
    pipe.table_insert(
        table,
        {"hdr.ipv4.src_addr": (0x0A000005, 0xFFFFFFFF), "hdr.l4.dport": (1000, 2000)},
        "AclIngress.allow",
        (),
        priority=20,
    )
    # deny dscp 46 from anywhere with lower priority than both
    pipe.table_insert(table, {"dscp": 46}, "AclIngress.deny", (), priority=5)
    cases = [
        (frame("1.1.1.1", src_ip="10.0.0.5", dport=1500), True),
        (frame("1.1.1.1", src_ip="10.0.0.5", dport=2001), False),
        (frame("1.1.1.1", src_ip="10.0.0.6", dport=1500), False),
        (frame("1.1.1.1", src_ip="11.0.0.6", dport=1500), True),
        (frame("1.1.1.1", src_ip="11.0.0.6", dport=1500, tos=46), False),
    ]
    for sent, allowed in cases:
        out = pipe.process(bytes(sent), 1)
        if allowed:
            expected = sent.copy()
            expected[IP].tos = 8  # classify: UDP
            assert out == [(2, rebuilt(expected))]
        else:
            assert out == []
    assert pipe.counter_read("AclIngress.verdicts", 0) == (2, 0)
    assert pipe.counter_read("AclIngress.verdicts", 1) == (3, 0)
    hits = pipe.direct_counter_read(table, {"hdr.ipv4.src_addr": (0x0A000000, 0xFF000000)}, priority=10)
    assert hits == (2, 2 * len(bytes(cases[1][0])))


def test_const_entries_and_switch_on_action_run(acl):
    """Const entries forward and classify; switch picks the branch of the action that ran."""
    pipe = acl.new_pipeline()
    sent = frame("1.1.1.1", proto=TCP)
    expected = sent.copy()
    expected[IP].tos = 4
    assert pipe.process(bytes(sent), 2) == [(1, rebuilt(expected))]
    sent = Ether() / IP(dst="1.1.1.1", proto=47) / Raw(b"gre")
    out = pipe.process(bytes(sent), 1)
    assert out == [(2, rebuilt(sent))]  # no classify entry: diffserv 0
    # ingress port 3 has no fwd entry: egress_spec stays 0
    assert pipe.process(bytes(frame("1.1.1.1")), 3)[0][0] == 0
    assert {e.match["standard_metadata.ingress_port"] for e in pipe.table_entries("AclIngress.fwd")} == {1, 2}


# ---------------------------------------------------------------- source routing with a header stack
class SourceRoute(Packet):
    """One source-routing stack entry."""

    name = "SourceRoute"
    fields_desc = [BitField("bos", 0, 1), BitField("port", 0, 15)]


bind_layers(Ether, SourceRoute, type=0x1234)
bind_layers(SourceRoute, SourceRoute, bos=0)
bind_layers(SourceRoute, IP, bos=1)


@pytest.fixture(scope="module")
def srcroute():
    """The source-routing program, compiled once."""
    return compile_program(PROGS / "srcroute.p4", use_disk_cache=False)


def routed(ports: list[int]) -> Packet:
    """A frame with a source route and an IPv4 payload."""
    packet = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02", type=0x1234)
    for i, port in enumerate(ports):
        packet = packet / SourceRoute(bos=int(i == len(ports) - 1), port=port)
    return packet / IP(dst="10.0.0.1", ttl=9) / UDP() / Raw(b"sr")


def test_source_routing_pops_one_hop_per_card(srcroute):
    """The first entry is consumed and its port used."""
    pipe = srcroute.new_pipeline()
    sent = routed([3, 7, 2])
    out = pipe.process(bytes(sent), 1)
    expected = Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02", type=0x1234)
    expected = (
        expected
        / SourceRoute(bos=0, port=7)
        / SourceRoute(bos=1, port=2)
        / IP(dst="10.0.0.1", ttl=8)
        / UDP()
        / Raw(b"sr")
    )
    assert out == [(3, rebuilt(expected))]
    assert pipe.register_read("SrIngress.last_depth", 0) == 2  # three entries parsed: lastIndex 2


def test_last_hop_restores_ipv4(srcroute):
    """The bottom-of-stack hop restores the IPv4 EtherType."""
    out = srcroute.new_pipeline().process(bytes(routed([5])), 1)
    expected = (
        Ether(dst="02:00:00:00:00:01", src="02:00:00:00:00:02", type=0x0800)
        / IP(dst="10.0.0.1", ttl=8)
        / UDP()
        / Raw(b"sr")
    )
    assert out == [(5, rebuilt(expected))]


def test_stack_overflow_is_a_parser_error_and_is_counted(srcroute):
    """Too many entries: StackOutOfBounds; too few bytes: PacketTooShort."""
    pipe = srcroute.new_pipeline()
    assert pipe.process(bytes(routed([1, 2, 3, 4, 5])), 1) == []  # 5 entries, stack of 4
    assert pipe.counter_read("SrIngress.parser_errors", 1) == (1, 0)
    assert pipe.process(bytes(routed([1, 2, 3, 4])), 1)[0][0] == 1  # exactly 4 fits
    truncated = bytes(routed([1, 2]))[:16]
    assert pipe.process(truncated, 1) == []
    assert pipe.counter_read("SrIngress.parser_errors", 2) == (1, 0)
