"""The lossless run's deadlock detector on hand-built side-channel stats of a ring, and the host pauses."""

from __future__ import annotations

import time

import numpy as np
import pytest

from controller.analysis.paths import AllPairs
from controller.routing import compute_tables
from emulation.deadlock_watch import DeadlockWatch, compare_with_model, find_cycle, model_dependencies
from emulation.run import card_peers
from emulation.traffic import HostPauses, Schedule, TrafficEngine
from p4switch.daemon.pfc import pfc_frame
from topologies.torus import torus

RING = 4


def ring_stats(stalled_cards: set[str], dequeued: int, ring) -> dict[str, dict]:
    """Every card's d0+ queue (priority 0) holds frames that arrived on its d0- port; paused if stalled."""
    peers = card_peers(ring)
    stats = {}
    for name in ring.cards:
        plus = next(port for (card, port), (peer, _) in peers.items() if card == name and peer == nxt(name))
        minus = next(port for (card, port), (peer, _) in peers.items() if card == name and peer == prv(name))
        pfc = [{"paused": name in stalled_cards and prio == 0} for prio in range(8)]
        queues = [
            {
                "priority": p,
                "length": 5 if p == 0 else 0,
                "dequeued": dequeued,
                "held_from": [[minus, 0, 5]] if p == 0 else [],
            }
            for p in range(8)
        ]
        stats[name] = {"ports": [{"port": plus, "queues": queues, "pfc": pfc}]}
    return stats


def nxt(name: str) -> str:
    return f"c{(int(name[1:]) + 1) % RING}"


def prv(name: str) -> str:
    return f"c{(int(name[1:]) - 1) % RING}"


@pytest.fixture(scope="module")
def ring():
    return torus((RING,))


def test_a_ring_of_stalled_queues_is_a_deadlock_after_its_time(ring) -> None:
    everyone = set(ring.cards)
    feed = iter([ring_stats(everyone, 7, ring)] * 20)
    watch = DeadlockWatch(lambda: next(feed), card_peers(ring), after_s=2.0, interval_s=0.5)
    assert watch.poll(0.0) is None  # first poll: nothing to compare the dequeue counts with
    assert watch.poll(1.0) is None  # stalled since 1.0
    assert watch.poll(2.5) is None
    found = watch.poll(3.0)
    assert found is not None and found["stalled_for_s"] == 2.0
    cycle = [(c["card"], c["priority"]) for c in found["cycle"]]
    assert sorted(cycle) == sorted((name, 0) for name in ring.cards)
    order = [c["card"] for c in found["cycle"]]
    assert all(
        nxt(a) == b for a, b in zip(order, order[1:] + order[:1], strict=True)
    )  # each waits for the next


def test_moving_or_unpaused_queues_are_no_deadlock(ring) -> None:
    counts = iter(range(100))
    moving = DeadlockWatch(
        lambda: ring_stats(set(ring.cards), next(counts), ring), card_peers(ring), after_s=0.5
    )
    partial = DeadlockWatch(lambda: ring_stats({"c0", "c1", "c2"}, 7, ring), card_peers(ring), after_s=0.5)
    for now in np.arange(0.0, 5.0, 0.5):
        assert moving.poll(now) is None and partial.poll(now) is None


def test_in_a_with_block_the_watch_polls_in_its_own_thread_until_it_finds_the_deadlock(ring) -> None:
    """A run's injector only reads ``found``: the polls (one request per card) never block it."""
    polls = []

    def read_stats() -> dict[str, dict]:
        polls.append(time.monotonic())
        return ring_stats(set(ring.cards), 7, ring)

    watch = DeadlockWatch(read_stats, card_peers(ring), after_s=0.2, interval_s=0.05)
    with watch:
        deadline = time.monotonic() + 10.0
        while watch.found is None and time.monotonic() < deadline:
            time.sleep(0.01)
    assert watch.found is not None and len(watch.found["cycle"]) == RING
    assert watch.found["stalled_for_s"] >= 0.2 and len(polls) >= 0.2 / 0.05
    assert watch._thread is not None and not watch._thread.is_alive()  # it stops once found
    count = len(polls)
    time.sleep(0.2)
    assert len(polls) == count


def test_leaving_the_with_block_stops_the_polls(ring) -> None:
    polls = []
    watch = DeadlockWatch(lambda: polls.append(1) or {}, card_peers(ring), interval_s=0.02)
    with watch:
        time.sleep(0.1)
    count = len(polls)
    time.sleep(0.1)
    assert count >= 1 and len(polls) == count and watch.found is None


def test_the_observed_cycle_is_in_the_graph_of_the_cyclic_variant_only(ring) -> None:
    peers = card_peers(ring)
    cycle = [
        (f"c{i}", port, 0)
        for i in range(RING)
        for (card, port), (peer, _) in peers.items()
        if card == f"c{i}" and peer == nxt(card)
    ]  # every card's port towards the next: d0+
    assert len(cycle) == RING
    unsafe = model_dependencies(AllPairs(compute_tables(ring, "dor-no-dateline")))
    safe = model_dependencies(AllPairs(compute_tables(ring, "dor")))
    assert compare_with_model(cycle, unsafe) == {
        "cycle_in_dependency_graph": True,
        "waits_not_in_dependency_graph": [],
    }
    verdict = compare_with_model(cycle, safe)
    assert not verdict["cycle_in_dependency_graph"] and verdict["waits_not_in_dependency_graph"]


def test_find_cycle_on_small_graphs() -> None:
    assert find_cycle({"a": ["b"], "b": ["c"], "c": []}) == []
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["b"]}) == ["b", "c"]


class FakeSocket:
    def __init__(self, log: list, pe: int) -> None:
        self.log, self.pe = log, pe

    def send(self, frame: bytes) -> None:
        self.log.append(self.pe)


def test_a_paused_host_holds_its_probes_in_order_and_the_others_go_on() -> None:
    pauses = HostPauses(link_bps=1e6)  # a quantum: 512 us
    engine = TrafficEngine([], pauses)
    sent: list[int] = []
    engine.sockets = {0: FakeSocket(sent, 0), 1: FakeSocket(sent, 1)}
    schedule = Schedule(np.array([0, 1, 0, 1]), np.array([1, 0, 1, 0]), np.array([0.0, 0.01, 0.02, 0.03]))
    pauses.on_frame(0, pfc_frame(bytes(6), {3: 0xFFFF}), time.monotonic())  # about 33 s: held until resumed

    def tick(done: int, elapsed: float) -> bool:
        if done == 4 and elapsed > 0.1:
            pauses.on_frame(0, pfc_frame(bytes(6), {3: 0}), time.monotonic())
        return elapsed < 5

    record = engine.inject(schedule, 64, tick=tick, tick_every=0.05)
    assert sent == [1, 1, 0, 0] and record.held_probes == 2 and record.sent == 4
    summary = pauses.summary(time.monotonic())
    assert summary["pause_frames_received"] == 1 and summary["resume_frames_received"] == 1
    assert summary["paused_s_total"] > 0.1
