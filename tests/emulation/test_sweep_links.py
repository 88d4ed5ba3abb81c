"""Rate-limited links on a real network (embedded target, an 8-ring with DOR): a link carries its rate
and no more; the ring offered more than its throughput bound saturates near the bound; collectives
deliver every message, with their completion time.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from run_checks import plan

from emulation.network import TwinnetNetwork, build_network
from emulation.run import run_on_network
from emulation.sweep import Configuration, SweepSettings, plan_sweep, run_point
from emulation.traffic import Schedule
from emulation.workload import MessageSizes
from topologies.build import build_topology

pytestmark = pytest.mark.root

LINK_RATE = 100.0


@pytest.fixture(scope="module")
def topology():
    return build_topology("torus", dims="8")


@pytest.fixture(scope="module")
def network(topology, tmp_path_factory) -> TwinnetNetwork:
    built = build_network(
        topology, target="embedded", out_dir=tmp_path_factory.mktemp("ring"), lock_timeout=900
    )
    try:
        yield built
    finally:
        built.stop()


def test_a_rate_limited_link_carries_its_rate_and_no_more(network, topology, tmp_path) -> None:
    # PE 0 offers 3x the link rate to PE 1 for 4 s: the card links (and the ejection link) limit it
    offered, seconds = 3 * LINK_RATE, 4.0
    count = int(offered * seconds)
    schedule = Schedule(
        np.zeros(count, dtype=np.int64), np.ones(count, dtype=np.int64), np.arange(count) / offered
    )
    base = plan(topology, tmp_path, routing="dor", traffic="uniform", packets=1)
    network.set_link_rates(LINK_RATE)
    try:
        outcome = run_on_network(dataclasses.replace(base, schedule=schedule), network, show_bars=False)
    finally:
        network.set_link_rates(None)
    received = np.sort([r.arrival.receive_us for r in outcome.results if r.arrival is not None])
    start = min(r.send_us for r in outcome.results if r.send_us >= 0)
    window_s = 2.0  # from 1 s (queues full) to 3 s (still backlogged)
    in_window = np.count_nonzero((received >= start + 1_000_000) & (received < start + 3_000_000))
    carried = in_window / window_s
    # a token bucket of burst 4 sends at most rate x window + 4 in a window (receive-time jitter at
    # the window's two edges adds a few more); a backlogged port keeps its rate unless a wake-up is
    # later than the bucket's 3-packet catch-up, which a busy shared machine can cause now and then
    assert carried <= LINK_RATE + 10 / window_s, carried
    assert carried >= 0.85 * LINK_RATE, carried
    assert outcome.accounting.lost > 0  # the rest was dropped at the full queue, and said so


def test_a_ring_offered_more_than_its_bound_saturates_near_it(network, topology) -> None:
    # tornado on the 8-ring: PE i sends to i + 3, so every + link carries 3 flows: bound 1/3. No
    # packet can do better (8 links x rate / 3 links per packet): accepted <= bound. Links drop (not
    # lossless yet), and a packet dropped after a hop wasted it: offered 1.2 x the bound, a fluid model
    # of proportional drops (survival s = 1 / (0.4 (1 + s + s^2)) per hop) gives 0.91 x the bound
    configuration = Configuration("8-ring", topology, "dor", "tornado")
    load = 0.4
    settings = SweepSettings(
        link_rate_pps=LINK_RATE,
        loads=(load,),
        duration_s=6.0,
        warmup_s=1.5,
        sizes=MessageSizes.parse("1"),
        target="embedded",
        cpu_capacity=1e5,
    )
    (sweep_plan,) = plan_sweep([configuration], settings)
    assert sweep_plan.bound == pytest.approx(1 / 3, abs=1e-6)  # reported to 6 places
    point = run_point(network, sweep_plan, settings, load, lambda message: None)
    network.set_link_rates(None)
    assert point["offered"] > sweep_plan.bound
    assert 0.75 * sweep_plan.bound <= point["accepted"] <= 1.03 * sweep_plan.bound, point


@pytest.mark.parametrize("name", ["broadcast", "reduce", "allgather", "all-to-all"])
def test_collectives_deliver_every_message_with_their_completion_time(network, topology, name) -> None:
    from controller.routing import compute_tables
    from emulation.card_access import open_cards
    from emulation.collectives import collective_steps, run_collective

    with open_cards(network) as cards:
        cards.install(compute_tables(topology, "dor"))
    network.set_link_rates(LINK_RATE)
    try:
        result = run_collective(network, name, link_rate_pps=LINK_RATE, block=2)
    finally:
        network.set_link_rates(None)
    steps = collective_steps(name, 8, 2)
    assert result["missing_packets"] == 0 and len(result["step_times_s"]) == len(steps)
    # no step ends before its busiest sender has put its packets on its link, one per link time
    for step, seconds in zip(steps, result["step_times_s"], strict=True):
        busiest = max(sum(m[2] for m in step if m[0] == src) for src in {m[0] for m in step})
        assert seconds >= (busiest - 1) / LINK_RATE
    assert result["completion_time_s"] == pytest.approx(sum(result["step_times_s"]))
