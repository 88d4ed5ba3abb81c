"""emulation/packets.py: the twinnet layout in Python, checked against hand-packed bytes and card.p4."""

from __future__ import annotations

import re
import struct

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from emulation import packets
from emulation.packets import TraceEntry, TraceHop, Twinnet
from p4src import CARD_PROGRAM
from topologies.addressing import host_ip, host_mac

CARD_P4 = CARD_PROGRAM


def pack_header(dst, src, rclass, vc, hops, count, tc, next_type, probe_id, send_time) -> bytes:
    """The 20-byte twinnet header, packed from p4src/README.md's table."""
    return struct.pack(">HHBBBBHI", dst, src, (rclass << 4) | vc, hops, count, tc, next_type, probe_id) + (
        send_time.to_bytes(6, "big")
    )


def pack_entry(card, in_port, out_port, vc, prio, qdepth, timestamp) -> bytes:
    """One 16-byte trace entry, packed from p4src/README.md's table."""
    return (
        struct.pack(">HHHB", card, in_port, out_port, (vc << 4) | prio)
        + qdepth.to_bytes(3, "big")
        + (timestamp.to_bytes(6, "big"))
    )


def eth(dst_pe: int, src_pe: int, ether_type: int) -> bytes:
    return bytes.fromhex(host_mac(dst_pe).replace(":", "") + host_mac(src_pe).replace(":", "")) + struct.pack(
        ">H", ether_type
    )


def test_probe_bytes_match_documented_layout() -> None:
    frame = packets.encode(
        packets.probe(2, 300, probe_id=0xDEADBEEF, send_time=0x0123456789AB, payload=b"xy", tc=9)
    )
    expected = eth(300, 2, 0x88B5) + pack_header(300, 2, 0, 0, 0, 0, 9, 0, 0xDEADBEEF, 0x0123456789AB) + b"xy"
    assert frame == expected
    assert len(pack_header(0, 0, 0, 0, 0, 0, 0, 0, 0, 0)) == packets.TWINNET_HEADER_LEN == 20
    assert len(pack_entry(0, 0, 0, 0, 0, 0, 0)) == packets.TRACE_ENTRY_LEN == 16


def test_trace_entries_are_newest_first_and_path_reverses_them() -> None:
    first = dict(card=7, in_port=1, out_port=3, vc=0, prio=0, qdepth=0, timestamp=1000)
    second = dict(card=8, in_port=2, out_port=5, vc=1, prio=3, qdepth=0x07FFFF, timestamp=(1 << 48) - 1)
    frame = (
        eth(4, 0, 0x88B5)
        + pack_header(4, 0, 1, 1, 2, 2, 0, 0, 55, 123)
        + pack_entry(**second)
        + pack_entry(**first)
        + b"payload"
    )
    pkt = packets.decode(frame)
    header = pkt[Twinnet]
    assert (header.dst_pe, header.src_pe, header.rclass, header.vc, header.hop_count) == (4, 0, 1, 1, 2)
    assert header.trace_count == 2 and len(header.trace) == 2
    assert packets.path(pkt) == [
        TraceHop(7, 1, 3, 0, 0, 0, 1000),
        TraceHop(8, 2, 5, 1, 3, 0x07FFFF, (1 << 48) - 1),
    ]
    assert packets.payload_of(pkt) == b"payload"
    assert packets.encode(pkt) == frame


def test_encapsulated_ipv4_decodes_and_round_trips() -> None:
    inner = IP(src=host_ip(0), dst=host_ip(5), id=3) / UDP(sport=1234, dport=5001) / Raw(b"data")
    entry = TraceEntry(card_id=1, in_port=1, out_port=2, vc=0, prio=0, qdepth=0, timestamp=5)
    frame = packets.encode(
        Ether(dst=host_mac(5), src=host_mac(0)) / Twinnet(dst_pe=5, next_type=0x0800, trace=[entry]) / inner
    )
    assert frame[12:14] == b"\x88\xb5"
    assert frame[14 + 8 : 14 + 10] == b"\x08\x00"  # next_type at byte 8 of the header
    assert frame[14 + 6] == 1  # trace_count counted from the entries
    pkt = packets.decode(frame)
    assert pkt[IP].dst == host_ip(5) and pkt[UDP].dport == 5001
    assert packets.payload_of(pkt) == bytes(inner)
    assert packets.encode(packets.decode(frame)) == frame


def test_trace_count_can_be_forged() -> None:
    frame = packets.encode(Ether() / Twinnet(trace_count=3, trace=[TraceEntry()]))
    assert frame[14 + 6] == 3 and len(frame) == 14 + 20 + 16


def test_round_trip_of_every_field_at_its_limits() -> None:
    header = Twinnet(
        dst_pe=0xFFFF,
        src_pe=0xFFFE,
        rclass=15,
        vc=15,
        hop_count=255,
        escaped=1,
        tc=127,
        next_type=0xFFFF,
        probe_id=0xFFFFFFFF,
        send_time=(1 << 48) - 1,
    )
    header.trace = [
        TraceEntry(
            card_id=0xFFFF,
            in_port=511,
            out_port=511,
            vc=15,
            prio=7,
            adaptive=1,
            qdepth=(1 << 23) - 1,
            timestamp=(1 << 48) - 1,
        )
    ] * packets.MAX_TRACE
    frame = packets.encode(Ether() / header)
    assert len(frame) == 14 + 20 + 16 * packets.MAX_TRACE
    again = packets.decode(frame)[Twinnet]
    assert again.trace_count == packets.MAX_TRACE
    assert (again.dst_pe, again.rclass, again.vc, again.send_time) == (0xFFFF, 15, 15, (1 << 48) - 1)
    assert again.trace[-1].qdepth == (1 << 23) - 1 and again.trace[-1].prio == 7
    assert again.trace[-1].adaptive == 1 and (again.escaped, again.tc) == (1, 127)


@pytest.mark.parametrize("pe", [0, 1, 5, 254, 255, 4095, 65535])
def test_address_rule_matches_addressing(pe: int) -> None:
    address = int.from_bytes(bytes(int(part) for part in host_ip(pe).split(".")), "big")
    assert packets.pe_of_address(address) == pe


@pytest.mark.parametrize(
    "address", ["10.0.0.0", "10.1.0.1", "192.168.0.1", "9.255.255.255", "255.255.255.255"]
)
def test_addresses_without_a_pe_are_refused(address: str) -> None:
    value = int.from_bytes(bytes(int(part) for part in address.split(".")), "big")
    assert packets.pe_of_address(value) is None


def test_latency_wraps_modulo_2_48() -> None:
    assert packets.latency_us(100, 150) == 50
    assert packets.latency_us((1 << 48) - 10, 5) == 15
    assert 0 <= packets.latency_us(packets.now_us()) < 10_000_000


def test_port_vc_index() -> None:
    assert packets.port_vc_index(4, 1) == 65
    assert packets.port_vc_index(511, 15) == packets.CARD_COUNTERS[packets.COUNTER_TX_PORT_VC] - 1
    with pytest.raises(ValueError):
        packets.port_vc_index(3, 16)


def _p4_defines() -> dict[str, str]:
    source = CARD_P4.read_text()
    return dict(re.findall(r"^#define\s+(\w+)\s+(\S+)", source, re.MULTILINE))


def test_constants_agree_with_card_p4() -> None:
    defines = _p4_defines()
    source = CARD_P4.read_text()
    assert int(defines["TW_MAX_TRACE"]) == packets.MAX_TRACE
    assert defines["TW_DEFAULT_HOP_LIMIT"] == "TW_MAX_TRACE"
    assert int(defines["TW_UNSET_CARD_ID"], 16) == packets.UNSET_CARD_ID
    assert (
        int(defines["TW_PORTS"]) == packets.PORTS and int(defines["TW_VCS_PER_PORT"]) == packets.VCS_PER_PORT
    )
    assert int(defines["TW_DROP_REASONS"]) == packets.DROP_REASON_CELLS
    for reason, index in packets.DROP_REASONS.items():
        assert int(defines[f"DROP_{reason.upper()}"]) == index, reason
    assert re.search(r"ETHERTYPE_TWINNET\s*=\s*0x88B5;", source)
    assert re.search(r"TW_HOST_BASE\s*=\s*0x0A000001;", source)


def test_readme_documents_every_table_action_and_counter() -> None:
    readme = (CARD_P4.parent / "README.md").read_text()
    for table, spec in packets.CARD_TABLES.items():
        assert f"`{table}`" in readme, table
        for action, params in spec["actions"].items():
            assert action in readme, action
            for name, width in params:
                assert f"{name}: bit<{width}>" in readme, (action, name)
        for field, _width in spec["keys"]:
            assert field in readme, field
    for counter in packets.CARD_COUNTERS:
        assert f"`{counter}`" in readme, counter


def scapy_view(frame: bytes) -> packets.ProbeView | None:
    """What scapy's layers read from a frame, in decode_probe's terms: the reference it is held to."""
    pkt = packets.decode(frame)
    if Twinnet not in pkt:
        return None
    header = pkt[Twinnet]
    names = [name for name in packets.ProbeView._fields if name != "hops"]
    return packets.ProbeView(*(int(getattr(header, name)) for name in names), tuple(packets.path(pkt)))


def random_twinnet_frame(rng) -> bytes:
    """A twinnet frame with random header fields, 0-16 random trace entries and a random payload."""
    count = rng.randrange(17)
    header = rng.randbytes(4) + bytes([rng.randrange(256), rng.randrange(256), count]) + rng.randbytes(13)
    return eth(1, 2, packets.ETHERTYPE_TWINNET) + header + rng.randbytes(16 * count + rng.randrange(40))


def test_decode_probe_reads_what_scapy_reads_from_every_whole_twinnet_frame() -> None:
    import random

    rng = random.Random(11)
    for _ in range(2000):
        frame = random_twinnet_frame(rng)
        view = packets.decode_probe(frame)
        assert view is not None and view == scapy_view(frame), frame.hex()
    hop = packets.decode_probe(
        eth(1, 2, packets.ETHERTYPE_TWINNET)
        + pack_header(5, 0, 1, 2, 1, 1, 0, 0, 7, 2**48 - 1)
        + pack_entry(3, 1, 2, 1, 3, 2**23 - 1, 2**40)
    )
    assert hop.send_time == 2**48 - 1 and hop.hops == (TraceHop(3, 1, 2, 1, 3, 2**23 - 1, 2**40, 0),)


def test_decode_probe_leaves_cut_and_other_frames_to_scapy() -> None:
    import random

    rng = random.Random(12)
    for _ in range(500):
        frame = random_twinnet_frame(rng)
        count = frame[14 + 6]  # trace_count: after dst_pe, src_pe, rclass and vc, hop_count
        cut = frame[: rng.randrange(14 + 20 + 16 * count)]  # short of its header or of its trace
        assert packets.decode_probe(cut) is None
    ipv4 = bytes(Ether(dst=host_mac(1), src=host_mac(2)) / IP(dst=host_ip(1)) / UDP() / Raw(b"x" * 40))
    tagged = eth(1, 2, 0x8100) + b"\x00\x05" + struct.pack(">H", packets.ETHERTYPE_TWINNET) + b"\x00" * 40
    assert packets.decode_probe(ipv4) is None and packets.decode_probe(tagged) is None
