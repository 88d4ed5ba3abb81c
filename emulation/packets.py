"""The twinnet packet layout in Python: the one definition senders and receivers use.

This module mirrors the headers of ``p4src/card.p4`` (documented byte by byte
in ``p4src/README.md``): the twinnet routing header (20 bytes, EtherType
0x88B5) and the trace entries every card appends (16 bytes each, the newest
first on the wire). It also names the card program's drop reasons and counter
indices, so that tests and the controller read counters by meaning.

Build a probe from PE 0 to PE 5, as a host's traffic generator sends it, and
decode what a receiver gets back (here: the same frame after one card added
its entry)::

    >>> frame = encode(probe(0, 5, probe_id=7, send_time=1000, payload=b"hi"))
    >>> frame[:6].hex(), len(frame)
    ('020000000006', 36)
    >>> pkt = decode(frame)
    >>> pkt[Twinnet].dst_pe, pkt[Twinnet].probe_id, pkt[Twinnet].trace_count
    (5, 7, 0)
    >>> hop = TraceEntry(card_id=3, in_port=1, out_port=2, vc=1, prio=1, qdepth=0, timestamp=50)
    >>> pkt[Twinnet].trace.insert(0, hop)   # a card pushes its entry in front
    >>> pkt[Twinnet].trace_count = None     # recomputed when encoded
    >>> [h.card_id for h in path(decode(encode(pkt)))]
    [3]
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from scapy.fields import (
    BitField,
    ByteField,
    FieldLenField,
    IntField,
    PacketListField,
    ShortField,
    ThreeBytesField,
    XShortField,
)
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw, bind_layers

from topologies.addressing import host_mac

#: EtherType of the twinnet header (IEEE 802 Local Experimental EtherType 1).
ETHERTYPE_TWINNET = 0x88B5
ETHERTYPE_IPV4 = 0x0800
#: ``next_type`` of a probe: what follows the trace is the sender's opaque payload.
NEXT_PROBE = 0x0000

TWINNET_HEADER_LEN = 20
TRACE_ENTRY_LEN = 16
#: Trace entries a packet can carry (``TW_MAX_TRACE`` in card.p4).
MAX_TRACE = 24
#: Default hop limit of a card (``TW_DEFAULT_HOP_LIMIT`` in card.p4).
DEFAULT_HOP_LIMIT = MAX_TRACE
#: Card id in the trace of a card whose ``MyIngress.card_config`` was not set.
UNSET_CARD_ID = 0xFFFF
#: Hosts' addresses: PE p is 10.0.0.0 + p + 1 (topologies/addressing.py).
HOST_BASE = 0x0A000001
#: The card program's 48-bit time fields wrap at this value (microseconds).
TIME_MODULUS = 1 << 48

#: Drop reasons: index of the ``MyIngress.drops`` counter cell each one counts in.
DROP_REASONS: dict[str, int] = {
    "malformed": 1,  # parser error: truncated frame, more trace entries than the stack holds
    "unknown_type": 2,  # not twinnet (from a card port), neither twinnet nor IPv4 (from a host port)
    "bad_address": 3,  # IPv4 from a host whose destination is no PE's address
    "no_route": 4,  # MyIngress.route missed
    "hop_limit": 5,  # hop_count reached the card's hop limit
    "trace_full": 6,  # TW_MAX_TRACE entries already: this card could not append its own
    "no_queue": 7,  # MyIngress.vc_queue has no entry for (routing class, VC)
}
DROP_REASON_CELLS = 8

#: Counters of the card program (P4Info names) and their sizes.
COUNTER_RX_PORT = "MyIngress.rx_port"  # index: ingress port
COUNTER_DROPS = "MyIngress.drops"  # index: DROP_REASONS[reason]
COUNTER_TX_PORT_VC = "MyEgress.tx_port_vc"  # index: port_vc_index(egress port, vc)
PORTS = 512
VCS_PER_PORT = 16


#: The card program's control-plane interface, as P4Info names it: for each
#: table its match fields (name, bit width; all exact) and its actions with
#: their parameters (name, bit width). ``NoAction`` is p4c's built-in.
CARD_TABLES: dict[str, dict[str, Any]] = {
    "MyIngress.card_config": {
        "keys": [],
        "actions": {"MyIngress.set_card": [("card_id", 16), ("hop_limit", 8)]},
        "default": ("MyIngress.set_card", {"card_id": UNSET_CARD_ID, "hop_limit": DEFAULT_HOP_LIMIT}),
    },
    "MyIngress.host_in": {
        "keys": [("standard_metadata.ingress_port", 9)],
        "actions": {"MyIngress.from_host": [("pe", 16), ("rclass", 4)], "NoAction": []},
        "default": ("NoAction", {}),
    },
    "MyIngress.route": {
        "keys": [("standard_metadata.ingress_port", 9), ("hdr.tw.dst_pe", 16), ("hdr.tw.rclass", 4)],
        "actions": {"MyIngress.set_route": [("port", 9), ("vc", 4)], "MyIngress.drop_no_route": []},
        "default": ("MyIngress.drop_no_route", {}),
    },
    "MyIngress.vc_queue": {
        "keys": [("hdr.tw.rclass", 4), ("hdr.tw.vc", 4)],
        "actions": {"MyIngress.set_queue": [("prio", 3)], "MyIngress.drop_no_queue": []},
        "default": ("MyIngress.drop_no_queue", {}),
    },
    "MyEgress.host_out": {
        "keys": [("standard_metadata.egress_port", 9)],
        "actions": {"MyEgress.to_host": [], "NoAction": []},
        "default": ("NoAction", {}),
    },
}
#: Indexed counters (P4Info name -> number of cells); all count packets and bytes.
CARD_COUNTERS: dict[str, int] = {
    COUNTER_RX_PORT: PORTS,
    COUNTER_DROPS: DROP_REASON_CELLS,
    COUNTER_TX_PORT_VC: PORTS * VCS_PER_PORT,
}


def port_vc_index(port: int, vc: int) -> int:
    """Cell of ``MyEgress.tx_port_vc`` counting packets sent on ``port`` with VC ``vc``."""
    if not (0 <= port < PORTS and 0 <= vc < VCS_PER_PORT):
        raise ValueError(f"port {port} / vc {vc} out of range (ports < {PORTS}, vcs < {VCS_PER_PORT})")
    return port * VCS_PER_PORT + vc


class TraceEntry(Packet):
    """One card's trace entry (16 bytes)."""

    name = "TwinnetTrace"
    fields_desc = [
        ShortField("card_id", 0),
        ShortField("in_port", 0),
        ShortField("out_port", 0),
        BitField("vc", 0, 4),
        BitField("prio", 0, 4),
        ThreeBytesField("qdepth", 0),
        BitField("timestamp", 0, 48),
    ]

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        # An entry has no payload: the bytes after it are the next entry's.
        return b"", s


class Twinnet(Packet):
    """The twinnet routing header (20 bytes) followed by its ``trace_count`` trace entries.

    ``trace`` is in wire order, the newest entry (the last card) first; use
    :func:`path` for the hops in the order the packet took them. Leave
    ``trace_count`` unset to have it counted from ``trace``; set it to forge
    a header that disagrees with its entries.
    """

    name = "Twinnet"
    fields_desc = [
        ShortField("dst_pe", 0),
        ShortField("src_pe", 0),
        BitField("rclass", 0, 4),
        BitField("vc", 0, 4),
        ByteField("hop_count", 0),
        FieldLenField("trace_count", None, fmt="B", count_of="trace"),
        ByteField("tc", 0),
        XShortField("next_type", NEXT_PROBE),
        IntField("probe_id", 0),
        BitField("send_time", 0, 48),
        PacketListField("trace", [], TraceEntry, count_from=lambda pkt: pkt.trace_count),
    ]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        if self.next_type == ETHERTYPE_IPV4:
            return IP
        return Raw


bind_layers(Ether, Twinnet, type=ETHERTYPE_TWINNET)


@dataclass(frozen=True)
class Hop:
    """One card on a packet's path, as its trace entry recorded it."""

    card_id: int
    in_port: int
    out_port: int
    vc: int
    prio: int
    qdepth: int
    timestamp: int


def now_us() -> int:
    """The sender's clock for ``send_time``: microseconds since the epoch, modulo 2**48."""
    return (time.time_ns() // 1000) % TIME_MODULUS


def latency_us(send_time: int, receive_time_us: int | None = None) -> int:
    """One-way latency of a probe: receiver clock minus send time, modulo 2**48 (hosts share the clock)."""
    received = now_us() if receive_time_us is None else receive_time_us % TIME_MODULUS
    return (received - send_time) % TIME_MODULUS


def pe_of_address(address: int) -> int | None:
    """The PE the first card derives from an IPv4 destination (as an int), or None (dropped, bad_address)."""
    offset = (address - HOST_BASE) % (1 << 32)
    return offset if offset < 0x10000 else None


def probe(
    src_pe: int,
    dst_pe: int,
    probe_id: int = 0,
    send_time: int | None = None,
    payload: bytes = b"",
    tc: int = 0,
) -> Packet:
    """A probe as a host sends it: host MACs from topologies/addressing.py, no trace.

    ``send_time`` defaults to :func:`now_us`. The first card overwrites
    ``src_pe``, ``rclass``, ``vc`` and ``hop_count`` and discards any trace.
    """
    header = Twinnet(
        dst_pe=dst_pe,
        src_pe=src_pe,
        tc=tc,
        next_type=NEXT_PROBE,
        probe_id=probe_id,
        send_time=now_us() if send_time is None else send_time,
    )
    return Ether(dst=host_mac(dst_pe), src=host_mac(src_pe), type=ETHERTYPE_TWINNET) / header / Raw(payload)


def encode(pkt: Packet) -> bytes:
    """Bytes of a frame (``trace_count`` filled in when left unset)."""
    return bytes(pkt)


def decode(frame: bytes) -> Packet:
    """Parse an Ethernet frame; twinnet frames decode into :class:`Twinnet` with its trace."""
    return Ether(frame)


def path(pkt: Packet) -> list[Hop]:
    """The trace of a twinnet frame in path order: the first card first."""
    header = pkt[Twinnet]
    return [
        Hop(e.card_id, e.in_port, e.out_port, e.vc, e.prio, e.qdepth, e.timestamp)
        for e in reversed(header.trace)
    ]


def payload_of(pkt: Packet) -> bytes:
    """The bytes after the twinnet header and its trace (a probe's payload, or the carried IPv4 packet)."""
    return bytes(pkt[Twinnet].payload)
