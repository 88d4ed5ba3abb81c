"""Lossless runs on a ring of 5 cards (1D torus): PFC keeps every probe; a single VC deadlocks.

Links run at 100 frames/s and every host offers 250 probes/s of tornado traffic (each
PE sends two hops along +), far above what the ring carries (each + link would carry
2 x 250/s): queues fill and PFC pauses cards and hosts. With DOR's dateline VCs nothing is dropped and every
probe arrives on the model's path; with dor-no-dateline (one VC) the ring's waits close a
cycle, which the run reports as a deadlock found in the model's dependency graph.
These runs take some seconds each: a deadlock needs the ring's queues to fill.
"""

from __future__ import annotations

import pytest
from run_checks import plan

from emulation.measure import EQUAL
from emulation.network import TwinnetNetwork, build_network
from emulation.run import lossless_switch_arguments, run_on_network
from emulation.run_settings import RunSettings
from topologies.build import build_topology

pytestmark = pytest.mark.root

RING = 5
LOAD = {"traffic": "tornado", "rate": 250.0, "duration": 1.0, "link_rate": 100.0, "lossless": True}


@pytest.fixture(scope="module")
def topology():
    return build_topology("torus", dims=str(RING))


@pytest.fixture(scope="module")
def network(topology, tmp_path_factory) -> TwinnetNetwork:
    built = build_network(
        topology,
        target="embedded",
        out_dir=tmp_path_factory.mktemp("ring"),
        lock_timeout=900,
        switch_arguments=lossless_switch_arguments(RunSettings(lossless=True)),
    )
    try:
        yield built
    finally:
        built.stop()


def test_dor_with_datelines_is_lossless_under_overload(network, topology, tmp_path) -> None:
    outcome = run_on_network(plan(topology, tmp_path, routing="dor", **LOAD), network, show_bars=False)
    assert outcome.deadlock is None
    assert outcome.queue_drops["total"] == 0, outcome.queue_drops["rows"][:5]
    assert outcome.accounting.lost == 0 and outcome.accounting.received == len(outcome.plan.schedule)
    assert all(result.verdict == EQUAL for result in outcome.results)
    assert outcome.channels.ok
    lossless = outcome.lossless
    assert lossless["cards"]["pause_frames_sent"] > 0  # the overload was real: PFC acted
    assert lossless["hosts"]["pause_frames_received"] > 0 and lossless["probes_held_by_pauses"] > 0


def test_dor_without_dateline_deadlocks_on_a_cycle_of_the_model(network, topology, tmp_path) -> None:
    settings = {**LOAD, "duration": 8.0, "deadlock_after": 1.0}
    outcome = run_on_network(
        plan(topology, tmp_path, routing="dor-no-dateline", **settings), network, show_bars=False
    )
    deadlock = outcome.deadlock
    assert deadlock is not None
    assert deadlock["cycle_in_dependency_graph"], deadlock
    assert not deadlock["model_acyclic"]
    cards = [channel["card"] for channel in deadlock["cycle"]]
    assert len(cards) == len(set(cards)) == RING  # one direction of the ring, every card once
    assert {channel["priority"] for channel in deadlock["cycle"]} == {0}
