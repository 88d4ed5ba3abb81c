"""Frames a hostile or careless host sends: VLAN tags, tagged runts, frames of the largest MTU.

One ``twinnet-switch`` process with the card program on veth pairs. The kernel takes the
outer 802.1Q/802.1ad tag off a received frame before a packet socket sees it; the switch
must put it back so that the program sees the frame as sent (card.p4 drops EtherType
0x8100/0x88A8 as ``unknown_type``, p4src/README.md). Tagged frames under 20 bytes are freed
by the kernel's untagging before any socket sees them; the switch counts them from the
interface's own receive counter. Frames longer than 65,535 bytes (a link of MTU 65,535
carries up to 65,549) are handled whole, not cut to a receive buffer of 65,535.
"""

from __future__ import annotations

import select
import subprocess
import time
from collections.abc import Iterator

import pytest
from test_switch_cards import DROP_UNKNOWN_TYPE, TWINNET, Network, parse, probe, twinnet_target
from test_switch_net import drain, receive

from p4switch.daemon.side_channel import request

pytestmark = pytest.mark.root

QINQ_TPID, DOT1Q_TPID = 0x88A8, 0x8100


def tagged(frame: bytes, *tags: tuple[int, int]) -> bytes:
    """``frame`` with VLAN tags (TPID, TCI), outermost first, after the MAC addresses."""
    inserted = b"".join(tpid.to_bytes(2, "big") + tci.to_bytes(2, "big") for tpid, tci in tags)
    return frame[:12] + inserted + frame[12:]


@pytest.fixture
def card_line() -> Iterator[Network]:
    network = Network(twinnet_target(), 1)
    (card,) = network.cards
    card.configure(card_id=17)
    card.insert(card.route(1, dst_pe=1, out_port=2))
    drain(network.b)
    yield network
    network.close()


def port_stats(network: Network, number: int) -> dict:
    stats = request(network.cards[0].side_channel_port, {"cmd": "stats"})
    return next(port for port in stats["ports"] if port["port"] == number)


def test_tagged_probes_reach_the_program_tagged_and_are_dropped_as_unknown_type(card_line: Network) -> None:
    (card,) = card_line.cards
    frames = [
        tagged(probe(1, 1), (DOT1Q_TPID, 100)),
        tagged(probe(1, 2), (DOT1Q_TPID, 0)),  # priority tag, VLAN 0
        tagged(probe(1, 3), (QINQ_TPID, 200), (DOT1Q_TPID, 100)),
    ]
    for frame in frames:
        card_line.a.send(frame)
    card_line.a.send(probe(1, 99))  # untagged: forwarded
    got = [parse(frame) for frame in receive(card_line.b, 4, 3.0, TWINNET)]
    assert [p.probe_id for p in got] == [99]
    assert card.counter("MyIngress.drops", DROP_UNKNOWN_TYPE)[0] == len(frames)
    assert card.process.poll() is None


def test_tagged_runts_are_counted_as_unseen(card_line: Network) -> None:
    before = port_stats(card_line, 1)
    runts = [
        tagged(bytes.fromhex("0200000000aa020000000001"), (DOT1Q_TPID, 5)) + bytes(size) for size in (2, 3)
    ]
    for _ in range(10):
        for runt in runts:
            card_line.a.send(runt)  # 18 and 19 bytes: the kernel frees them while untagging
    card_line.a.send(probe(1, 7))
    assert [parse(frame).probe_id for frame in receive(card_line.b, 1, 3.0, TWINNET)] == [7]
    after = port_stats(card_line, 1)
    assert after["rx_frames"] - before["rx_frames"] == 1
    assert after["unseen_frames"] - before["unseen_frames"] == 20
    assert after["interface_rx_frames"] - before["interface_rx_frames"] == 21


def set_mtu(network: Network, mtu: int) -> None:
    for interface in network.lab.root_interfaces:
        subprocess.run(["ip", "link", "set", interface, "mtu", str(mtu)], check=True)
    for namespace in network.lab.namespaces:
        subprocess.run(
            ["ip", "netns", "exec", namespace, "ip", "link", "set", "eth0", "mtu", str(mtu)], check=True
        )


def test_frames_above_65535_bytes_are_counted_by_their_real_size(card_line: Network) -> None:
    set_mtu(card_line, 65535)
    (card,) = card_line.cards
    # the card appends a 16-byte trace entry: 65,533 bytes leave as 65,549, the largest frame a
    # link of MTU 65,535 carries; 65,549 bytes arrive whole, are counted, and cannot leave
    sizes = [65533, 65549]
    for index, size in enumerate(sizes):
        frame = probe(1, 500 + index)
        card_line.a.send(frame + bytes(size - len(frame)))
    got: list[bytes] = []
    deadline = time.monotonic() + 3.0
    while select.select([card_line.b], [], [], max(0.0, deadline - time.monotonic()))[0]:
        data = card_line.b.recv(1 << 17)
        if data[12:14] == TWINNET.to_bytes(2, "big"):
            got.append(data)
    assert [(parse(frame).probe_id, len(frame)) for frame in got] == [(500, 65549)]
    assert card.counter("MyIngress.rx_port", 1) == (len(sizes), sum(sizes))
    assert port_stats(card_line, 2)["tx_errors"] == 1
