"""Lossless mode (PFC) of the switch on real veth pairs, in-process, with the stand-in pipeline.

XOFF/XON around a slow egress port: h1 -- s1 -- s2 -- h2 with s2's port to h2 rate-limited;
the sender in h1 obeys the pauses s1 sends it, s1 obeys s2's. Lossless, every frame
arrives; the same load lossy drops. A paused low priority does not hold a high one, and
PFC frames never reach the program.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator

import pytest
from test_switch_dataplane import Line, install_route
from test_switch_net import drain, frame, receive

from p4switch.daemon.pfc import PfcSettings, parse_pfc, pfc_frame
from p4switch.daemon.side_channel import request

pytestmark = pytest.mark.root

SLOW_PPS = 200.0
FRAMES = 300
SEND_PPS = 1000.0


class Net(Line):
    """test_switch_dataplane's line of switches, lossless or not."""

    def __init__(self, switches: int, lossless: bool) -> None:
        settings = PfcSettings() if lossless else None
        super().__init__(switches, lab_tag="p", queue_depth=None, lossless=settings)

    def stats(self, index: int) -> dict:
        return self.side(index, {"cmd": "stats"})


@pytest.fixture(params=[False, True], ids=["lossy", "lossless"])
def line(request: pytest.FixtureRequest) -> Iterator[Net]:
    net = Net(2, request.param)
    yield net
    net.close()


def send_obeying_pauses(sock: socket.socket, frames: list[bytes], pps: float) -> int:
    """Send `frames` at `pps`, holding while a PFC frame on the link pauses class 0; pauses counted.

    Paced from one frame to the next (a late frame does not make the next ones catch up): the
    host link is not rate-limited, so this bounds what is in flight when a pause is sent.
    """
    paused_until = 0.0
    pauses = 0
    next_send = time.monotonic()
    for data in frames:
        while True:
            now = time.monotonic()
            wait = max(next_send - now, paused_until - now, 0.0)
            if not select.select([sock], [], [], wait)[0]:
                if time.monotonic() >= paused_until:
                    break
                continue
            got = parse_pfc(sock.recv(65535))
            if got and 0 in got:
                # the test's hosts never hold longer than a second: the switch renews or releases
                pauses += bool(got[0])
                paused_until = time.monotonic() + (1.0 if got[0] else 0.0)
        sock.send(data)
        next_send = time.monotonic() + 1 / pps
    return pauses


def pauses_waiting(sock: socket.socket) -> int:
    """The PFC frames pausing class 0 already queued on `sock`, read without waiting.

    The switch may renew a pause after the sender's last frame, while that frame still waits
    in its queue; the sender no longer reads then, so the test collects those afterwards.
    """
    pauses = 0
    while select.select([sock], [], [], 0)[0]:
        got = parse_pfc(sock.recv(65535))
        pauses += bool(got and got.get(0))
    return pauses


def test_xoff_xon_around_a_slow_port_lossless_keeps_every_frame_lossy_drops(line: Net) -> None:
    (s1, c1), (s2, c2) = line.switches
    lossless = s1.dataplane.pfc is not None
    install_route(c1, 1, 0xAA, 2)
    install_route(c2, 1, 0xAA, 2)
    request(s2.control.port, {"cmd": "set_queue_rate", "rate_pps": SLOW_PPS, "port": 2})
    sent = [frame(0xAA, index.to_bytes(4, "big")) for index in range(FRAMES)]
    host_pauses = send_obeying_pauses(line.h1, sent, SEND_PPS)
    got = receive(line.h2, FRAMES, FRAMES / SLOW_PPS + 3.0)
    # every frame has left s1, so every pause s1 sent h1 is queued at h1 by now
    host_pauses += pauses_waiting(line.h1)
    s1_stats, s2_stats = line.stats(0), line.stats(1)
    drops = sum(q["tail_drops"] for s in (s1_stats, s2_stats) for p in s["ports"] for q in p["queues"])
    if not lossless:
        assert drops == FRAMES - len(got) > 0 and host_pauses == 0
        return
    headroom = [
        (s["device_id"], p["port"], row["priority"], row["headroom_drops"])
        for s in (s1_stats, s2_stats)
        for p in s["ports"]
        for row in p["pfc"]
        if row["headroom_drops"]
    ]
    assert (len(got), drops, headroom) == (FRAMES, 0, [])
    assert got == sent
    s2_in = next(p for p in s2_stats["ports"] if p["port"] == 1)["pfc"][0]
    s1_out = next(p for p in s1_stats["ports"] if p["port"] == 2)["pfc"][0]
    s1_in = next(p for p in s1_stats["ports"] if p["port"] == 1)["pfc"][0]
    assert s2_in["pause_frames_sent"] >= 1 and s2_in["resume_frames_sent"] >= 1
    assert s1_out["pause_frames_received"] == s2_in["pause_frames_sent"] and s1_out["paused_s"] > 0
    assert s1_in["pause_frames_sent"] >= 1 and host_pauses == s1_in["pause_frames_sent"]
    assert all(
        row["headroom_drops"] == 0 for s in (s1_stats, s2_stats) for p in s["ports"] for row in p["pfc"]
    )


@pytest.fixture
def single() -> Iterator[Net]:
    net = Net(1, lossless=True)
    yield net
    net.close()


def test_a_paused_low_priority_does_not_hold_a_high_one(single: Net) -> None:
    switch, client = single.switches[0]
    install_route(client, 1, 0x10, 2, prio=0)
    install_route(client, 1, 0x17, 2, prio=7)
    # 1000 frames/s of 84 bytes: 65535 quanta of 512 bits last about 50 s
    request(switch.control.port, {"cmd": "set_queue_rate", "rate_pps": 1000, "port": 2})
    drain(single.h2)
    single.h2.send(pfc_frame(bytes.fromhex("020000000002"), {0: 0xFFFF}))
    time.sleep(0.2)
    low = [frame(0x10, f"low {i}".encode()) for i in range(10)]
    high = [frame(0x17, f"high {i}".encode()) for i in range(10)]
    for data in low + high:
        single.h1.send(data)
    assert receive(single.h2, 20, 1.0) == high
    single.h2.send(pfc_frame(bytes.fromhex("020000000002"), {0: 0}))
    assert receive(single.h2, 10, 2.0) == low
    stats = request(switch.control.port, {"cmd": "stats"})
    port2 = next(p for p in stats["ports"] if p["port"] == 2)
    row = port2["pfc"][0]
    assert (row["pause_frames_received"], row["resume_frames_received"], row["paused"]) == (1, 1, False)
    assert row["paused_s"] >= 1.0
    assert port2["pfc"][7]["pause_frames_received"] == 0
    assert stats["counters"]["ingress_drops"] == 0  # the PFC frames never reached the program
