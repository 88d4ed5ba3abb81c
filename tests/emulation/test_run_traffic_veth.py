"""The injector/receiver on veth pairs in namespaces of its own (names start with ``ttr``), no cards.

The engine sends from a process of its own (emulation.sender) unless told otherwise.

Three namespaces stand for hosts: A and B joined by one veth pair, C alone.
One TrafficEngine opens a socket in each namespace (setns) from this process.
A probe from A arrives at B untouched (no card adds a trace), so what the
receiver keeps is exactly what the injector sent; C must see nothing.
"""

from __future__ import annotations

import os
import subprocess
import time

import numpy as np
import pytest

from controller.analysis.traffic import Traffic
from emulation.measure import decode_arrival
from emulation.sender import SENDER_RT_PRIORITY
from emulation.traffic import (
    HostEndpoint,
    HostPauses,
    Schedule,
    TrafficEngine,
    make_schedule,
    open_host_socket,
)
from p4switch.daemon.pfc import MAC_CONTROL_ETHERTYPE, pfc_frame

pytestmark = pytest.mark.root


def run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True)


@pytest.fixture(scope="module")
def hosts():
    """Namespaces ttr<pid>a, b, c; A-B joined by a veth pair (eth0 both ends); C: eth0 to its eth1."""
    prefix = f"ttr{os.getpid() % 100000}"
    names = {pe: f"{prefix}{letter}" for pe, letter in enumerate("abc")}
    created = []
    try:
        for name in names.values():
            run("ip", "netns", "add", name)
            created.append(name)
        run("ip", "link", "add", f"{prefix}x", "type", "veth", "peer", "name", f"{prefix}y")
        run("ip", "link", "set", f"{prefix}x", "netns", names[0])
        run("ip", "link", "set", f"{prefix}y", "netns", names[1])
        for pe, old in ((0, f"{prefix}x"), (1, f"{prefix}y")):
            run("ip", "-n", names[pe], "link", "set", old, "name", "eth0")
        run("ip", "-n", names[2], "link", "add", "eth0", "type", "veth", "peer", "name", "eth1")
        for name in names.values():
            run("ip", "netns", "exec", name, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
            run("ip", "-n", name, "link", "set", "eth0", "up")
        yield [HostEndpoint(pe, f"/run/netns/{name}", "eth0") for pe, name in names.items()]
    finally:
        for name in created:
            subprocess.run(("ip", "netns", "del", name), capture_output=True)


def one_way(src: int, dst: int, count: int, rate: float) -> Schedule:
    traffic = Traffic("pair", np.array([src]), np.array([dst]), np.ones(1))
    return make_schedule(traffic, 3, count, rate)


def test_sockets_stay_in_their_namespaces(hosts) -> None:
    own = os.stat("/proc/thread-self/ns/net").st_ino
    with TrafficEngine(hosts) as engine:
        assert os.stat("/proc/thread-self/ns/net").st_ino == own
        assert set(engine.sockets) == {0, 1, 2}


def test_probes_arrive_paced_by_the_clock_with_their_ids_and_times(hosts) -> None:
    schedule = one_way(0, 1, 200, rate=400.0)
    with TrafficEngine(hosts) as engine:
        record = engine.inject(schedule, size=128)
        took = (record.finished_us - record.started_us) / 1e6
        engine.wait_for(len(schedule), quiet_s=0.5, limit_s=5)
        frames = engine.take_received()
    assert record.sent == 200 and not record.errors
    # paced: 200 probes at 400/s take ~0.5 s whatever the CPU
    assert schedule.duration == pytest.approx(199 / 400)
    assert schedule.duration <= took < schedule.duration + 0.5
    assert {frame.pe for frame in frames} == {1}, "only B receives; A does not see its own frames"
    arrivals = [decode_arrival(frame.pe, frame.frame, frame.receive_us) for frame in frames]
    assert sorted(a.probe_id for a in arrivals) == [schedule.probe_id(i) for i in range(200)]
    by_id = {a.probe_id: a for a in arrivals}
    for index in range(200):
        arrival = by_id[schedule.probe_id(index)]
        assert (arrival.src, arrival.dst, arrival.hops) == (0, 1, ())
        assert arrival.send_us == record.send_us[index]
        assert 0 <= arrival.receive_us - arrival.send_us < 200_000
    assert all(len(frame.frame) == 128 for frame in frames)


def test_at_high_rates_probes_leave_in_bursts_never_before_their_time(hosts) -> None:
    """2,000 probes 50 us apart (20k/s): the sender wakes at most every PACING_QUANTUM_S and sends what
    is due then, so most probes leave right after the one before, none before its time; every probe
    arrives with a kernel receive time after its send time, in one-system-call batches."""
    schedule = one_way(0, 1, 2000, rate=20_000.0)
    with TrafficEngine(hosts) as engine:
        record = engine.inject(schedule, size=64)
        engine.wait_for(len(schedule), quiet_s=0.5, limit_s=5)
        frames = engine.take_received()
    assert record.sent == 2000 and not record.errors
    due_us = record.started_us + np.round(schedule.at * 1e6).astype(np.int64)
    assert (record.send_us >= due_us - 5).all(), "a probe left before its time"
    gaps = np.diff(record.send_us)
    assert np.count_nonzero(gaps < 25) >= 1000, f"sent one by one: median gap {np.median(gaps)} us"
    arrivals = {a.probe_id: a for a in (decode_arrival(f.pe, f.frame, f.receive_us) for f in frames)}
    assert len(arrivals) == 2000 and engine.cut_frames == 0
    assert all(0 <= a.receive_us - a.send_us < 200_000 for a in arrivals.values())


def test_a_tick_can_stop_injection(hosts) -> None:
    schedule = one_way(1, 0, 1000, rate=1000.0)
    with TrafficEngine(hosts) as engine:
        record = engine.inject(schedule, size=64, tick=lambda sent, elapsed: elapsed < 0.2, tick_every=0.05)
    assert 100 <= record.sent < 500


def test_in_process_sending_delivers_the_same(hosts) -> None:
    """The sender in this process (``own_process=False``) and in its own (the default; real-time or not)
    send alike."""
    schedule = one_way(0, 1, 100, rate=500.0)
    outcomes = []
    for own_process, real_time in ((False, True), (True, True), (True, False)):
        with TrafficEngine(hosts) as engine:
            record = engine.inject(schedule, size=64, own_process=own_process, real_time=real_time)
            engine.wait_for(len(schedule), quiet_s=0.5, limit_s=5)
            arrivals = [decode_arrival(f.pe, f.frame, f.receive_us) for f in engine.take_received()]
        assert record.sent == 100 and not record.errors and record.started_us <= record.finished_us
        assert record.sender == (
            "in the run process"
            if not own_process
            else f"own process, SCHED_FIFO {SENDER_RT_PRIORITY}"
            if real_time
            else "own process, normal scheduling (asked for)"
        )
        assert {a.probe_id: a.send_us for a in arrivals} == {
            schedule.probe_id(i): int(record.send_us[i]) for i in range(100)
        }
        outcomes.append(sorted(a.probe_id for a in arrivals))
    assert outcomes[0] == outcomes[1] == outcomes[2]


def test_the_sender_process_obeys_pauses_and_hands_back_their_accounting(hosts) -> None:
    """A PFC pause sent to A's interface while the sender process sends holds A's probes until the resume."""
    pauses = HostPauses(link_bps=1e6)  # a quantum: 512 us; 0xFFFF quanta: ~33 s, so only the resume ends it
    peer = open_host_socket(hosts[1].netns, hosts[1].interface, MAC_CONTROL_ETHERTYPE)
    sent_frames: list[str] = []

    def tick(done: int, elapsed: float) -> bool:
        if not sent_frames and elapsed >= 0.1:
            peer.send(pfc_frame(bytes(6), {0: 0xFFFF}))
            sent_frames.append("pause")
        elif sent_frames == ["pause"] and elapsed >= 0.6:
            peer.send(pfc_frame(bytes(6), {0: 0}))
            sent_frames.append("resume")
        return elapsed < 10

    schedule = one_way(0, 1, 200, rate=400.0)  # 0.5 s of sending: the pause holds the rest
    try:
        with TrafficEngine(hosts, pauses) as engine:
            record = engine.inject(schedule, size=64, tick=tick, tick_every=0.02)
            engine.wait_for(len(schedule), quiet_s=0.5, limit_s=5)
            received = engine.take_received()
    finally:
        peer.close()
    assert sent_frames == ["pause", "resume"], (record, pauses.summary(time.monotonic()))
    assert record.sent == 200 and record.held_probes > 50 and record.never_released == 0
    assert len(received) == 200
    summary = pauses.summary(time.monotonic())
    assert summary["pause_frames_received"] == 1 and summary["resume_frames_received"] == 1
    assert summary["paused_s_total"] > 0.3


def test_the_sender_process_takes_hundreds_of_sockets(hosts) -> None:
    """300 hosts with their PFC sockets (600 descriptors, more than one SCM_RIGHTS message carries)."""
    extra = [HostEndpoint(pe, hosts[2].netns, hosts[2].interface) for pe in range(3, 300)]
    schedule = one_way(0, 1, 50, rate=500.0)
    with TrafficEngine([*hosts, *extra], HostPauses(link_bps=1e9)) as engine:
        assert len(engine.sockets) + len(engine.control_sockets) == 600
        record = engine.inject(schedule, size=64)
        engine.wait_for(len(schedule), quiet_s=0.5, limit_s=5)
        received = engine.take_received()
    assert record.sent == 50 and not record.errors
    assert sorted(decode_arrival(f.pe, f.frame, f.receive_us).probe_id for f in received) == [
        schedule.probe_id(i) for i in range(50)
    ]
