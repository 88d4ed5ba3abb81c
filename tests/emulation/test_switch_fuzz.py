"""Seeded, bounded fuzzing of one ``twinnet-switch`` (card program) on veth pairs.

20,000 frames of the kinds a hostile host sends (random bytes, cut and inconsistent twinnet
headers, absurd trace counts, IPv4 with garbage, VLAN-tagged and double-tagged variants,
tagged runts the kernel frees, frames up to the MTU, valid probes) go in on port 1. Checked
afterwards: the switch still runs; its memory did not grow after the warm-up; every frame
is accounted for, received = dropped by reason + forwarded (and the tagged runts the kernel
freed are exactly the port's ``unseen_frames``); a valid probe is still forwarded.
"""

from __future__ import annotations

import random
import select
import socket
import struct
import time
from collections import Counter
from pathlib import Path

import pytest
from test_switch_cards import TWINNET, Network, parse, probe, twinnet_target
from test_switch_net import drain, receive

from p4switch.daemon.side_channel import request

pytestmark = pytest.mark.root

SEED = 20260118
FRAMES = 20_000
BATCH = 500
WARM_UP_FRAMES = 5_000
#: RSS growth allowed after the warm-up (allocator noise; a leak of even 100 bytes a frame shows)
RSS_SLACK_KB = 1024
MTU_FRAME = 1514
MACS = bytes.fromhex("0200000000aa020000000001")


def ethernet(ethertype: int, payload: bytes) -> bytes:
    return MACS + ethertype.to_bytes(2, "big") + payload


def tagged(frame: bytes, tags: list[tuple[int, int]]) -> bytes:
    return frame[:12] + b"".join(struct.pack("!HH", tpid, tci) for tpid, tci in tags) + frame[12:]


def fuzz_frame(rng: random.Random) -> tuple[str, bytes]:
    """One frame and its kind; every kind fits the link (14..1514 bytes, tags included)."""
    kind = rng.choice(
        ["random", "cut_twinnet", "twinnet_fields", "ipv4_garbage", "large", "probe", "tagged", "tagged_runt"]
    )
    if kind == "tagged_runt":  # 18 or 19 bytes: the kernel frees it while untagging
        return kind, tagged(MACS + rng.randbytes(2), [(rng.choice([0x8100, 0x88A8]), rng.randrange(4096))])[
            : rng.choice([18, 19])
        ]
    if kind == "tagged":
        tags = [(rng.choice([0x8100, 0x88A8]), rng.randrange(1 << 16)) for _ in range(rng.choice([1, 1, 2]))]
        _, inner = fuzz_frame_of(rng, rng.choice(["random", "cut_twinnet", "twinnet_fields", "probe"]))
        return kind, tagged(inner, tags)[:MTU_FRAME]
    return fuzz_frame_of(rng, kind)


def fuzz_frame_of(rng: random.Random, kind: str) -> tuple[str, bytes]:
    if kind == "random":
        return kind, rng.randbytes(rng.randrange(14, 200))
    if kind == "cut_twinnet":
        return kind, probe(rng.randrange(4), rng.randrange(1 << 32), trace_count=rng.randrange(8))[
            : rng.randrange(14, 60)
        ]
    if kind == "twinnet_fields":
        header = rng.randbytes(20)
        body = rng.randbytes(rng.randrange(0, 16 * rng.randrange(0, 20) + 1))
        return kind, ethernet(TWINNET, header + body)
    if kind == "ipv4_garbage":
        return kind, ethernet(0x0800, bytes([0x45]) + rng.randbytes(rng.randrange(0, 80)))
    if kind == "large":
        return kind, ethernet(
            rng.choice([TWINNET, 0x0800, rng.randrange(1 << 16)]), rng.randbytes(MTU_FRAME - 14)
        )
    return kind, probe(1, rng.randrange(1 << 32), payload=rng.randbytes(rng.randrange(0, 64)))


def stats(network: Network) -> dict:
    return request(network.cards[0].side_channel_port, {"cmd": "stats"})


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def wait_until_read(network: Network, expected: int, freed_by_kernel: int) -> dict:
    """Stats once port 1 has read ``expected`` frames (or lost them before its socket), or after 10 s.

    ``unseen_frames`` also counts frames still waiting in the socket's buffer, so it is not
    used to decide: the frames the socket will never see are the ``freed_by_kernel`` ones.
    """
    deadline = time.monotonic() + 10
    while True:
        answer = stats(network)
        port = answer["ports"][0]
        if (
            port["rx_frames"] + freed_by_kernel + port["socket_drops"] >= expected
            or time.monotonic() > deadline
        ):
            return answer
        time.sleep(0.02)


def drain_until_quiet(sock: socket.socket, quiet: float = 0.5) -> None:
    """Drop what arrives until nothing has for ``quiet`` seconds: the frames the last batch left
    in the card's queues or on the link, which would otherwise come before the final probe."""
    while select.select([sock], [], [], quiet)[0]:
        sock.recv(65535)


def test_twenty_thousand_hostile_frames(tmp_path: Path) -> None:
    network = Network(twinnet_target(), 1)
    try:
        (card,) = network.cards
        card.configure(card_id=3)
        card.insert(card.route(1, dst_pe=1, out_port=2))
        drain(network.b)
        rng = random.Random(SEED)
        kinds: Counter[str] = Counter()
        tagged_runts = 0  # frames the kernel frees while untagging: outer TPID 0x8100/0x88A8, under 20 bytes
        sent = 0
        rss_after_warm_up = 0
        while sent < FRAMES:
            for _ in range(BATCH):
                kind, frame = fuzz_frame(rng)
                network.a.send(frame)
                tagged_runts += frame[12:14] in (b"\x81\x00", b"\x88\xa8") and len(frame) < 20
                kinds[kind] += 1
                sent += 1
            wait_until_read(network, sent, tagged_runts)
            drain(network.b)
            if sent == WARM_UP_FRAMES:
                rss_after_warm_up = rss_kb(card.process.pid)
        final = wait_until_read(network, sent, tagged_runts)
        rss_end = rss_kb(card.process.pid)
        assert card.process.poll() is None, card.errors()

        port_in = final["ports"][0]
        counters = final["counters"]
        queues = [queue for port in final["ports"] for queue in port["queues"]]
        dropped = (
            sum(counters[name] for name in counters if name not in ("parser_errors",))
            + sum(queue["tail_drops"] for queue in queues)
            + sum(port["priority_out_of_range_drops"] for port in final["ports"])
        )
        forwarded = sum(port["tx_frames"] + port["tx_errors"] for port in final["ports"])
        backlog = sum(port["backlog"] for port in final["ports"])
        assert port_in["socket_drops"] == 0, port_in  # paced: the accounting below is exact
        assert port_in["rx_frames"] + port_in["unseen_frames"] == sent, (port_in, kinds)
        assert port_in["unseen_frames"] == tagged_runts >= kinds["tagged_runt"], (port_in, kinds)
        assert port_in["rx_frames"] == dropped + forwarded + backlog, (final, kinds)
        assert forwarded >= kinds["probe"]  # every untagged valid probe left on port 2
        assert final["dataplane"]["alive"] and final["dataplane"]["failure"] is None
        assert rss_end - rss_after_warm_up < RSS_SLACK_KB, (rss_after_warm_up, rss_end)

        drain_until_quiet(network.b)
        network.a.send(probe(1, 0xC0FFEE))
        assert [parse(frame).probe_id for frame in receive(network.b, 1, 3.0, TWINNET)] == [0xC0FFEE]
        print(
            f"fuzz: {sent} frames {dict(kinds)}; rss {rss_after_warm_up} -> {rss_end} kB; counters {counters}"
        )
    finally:
        network.close()
