"""Lossless runs on a 1DT of 3 nodes (a ring of twin switches, 6 cards): DORT's internal VCs keep it
deadlock free; dort-merged-vcs (every internal hop on one VC) deadlocks on a cycle of the model's
dependency graph.

Neighbour traffic (every PE sends to the same card of the next node): PE1's probes
cross the internal link to reach d0+ on card 0 (a ring hop), PE0's arrive on card 1
and cross back to eject. With one internal VC the two share the channel, and the
waits close around the ring: IL(j) -> d0+(j) -> IL(j+1) -> ... (analysis: the
smallest nDT where dort-merged-vcs is cyclic). Links run at 100 frames/s and hosts
offer 250 probes/s, so queues fill and PFC pauses cards and hosts.
"""

from __future__ import annotations

import pytest
from run_checks import plan

from controller.analysis.deadlock import check_deadlock
from emulation.measure import EQUAL
from emulation.network import TwinnetNetwork, build_network
from emulation.run import lossless_switch_arguments, run_on_network
from emulation.run_settings import RunSettings
from topologies.build import build_topology

pytestmark = pytest.mark.root

NODES = 3
LOAD = {"traffic": "neighbour", "rate": 250.0, "duration": 1.0, "link_rate": 100.0, "lossless": True}


@pytest.fixture(scope="module")
def topology():
    return build_topology("ndt", dims=str(NODES))


@pytest.fixture(scope="module")
def network(topology, tmp_path_factory) -> TwinnetNetwork:
    built = build_network(
        topology,
        target="embedded",
        out_dir=tmp_path_factory.mktemp("twin-ring"),
        lock_timeout=900,
        switch_arguments=lossless_switch_arguments(RunSettings(lossless=True)),
    )
    try:
        yield built
    finally:
        built.stop()


def test_dort_is_lossless_and_deadlock_free_on_the_twin_ring(network, topology, tmp_path) -> None:
    outcome = run_on_network(plan(topology, tmp_path, routing="dort", **LOAD), network, show_bars=False)
    assert outcome.plan.acyclic and outcome.deadlock is None
    assert outcome.queue_drops["total"] == 0, outcome.queue_drops["rows"][:5]
    assert outcome.accounting.lost == 0 and outcome.accounting.received == len(outcome.plan.schedule)
    assert all(result.verdict == EQUAL for result in outcome.results)
    assert outcome.lossless["cards"]["pause_frames_sent"] > 0  # the overload was real: PFC acted


def test_dort_with_merged_internal_vcs_deadlocks_on_a_cycle_of_the_model(network, topology, tmp_path) -> None:
    settings = {**LOAD, "duration": 8.0, "deadlock_after": 1.0}
    run_plan = plan(topology, tmp_path, routing="dort-merged-vcs", **settings)
    assert not check_deadlock(run_plan.all_pairs).deadlock_free  # the analysis of the same tables
    outcome = run_on_network(run_plan, network, show_bars=False)
    deadlock = outcome.deadlock
    assert deadlock is not None
    assert deadlock["cycle_in_dependency_graph"] and not deadlock["waits_not_in_dependency_graph"], deadlock
    assert not deadlock["model_acyclic"]
    cards = [channel["card"] for channel in deadlock["cycle"]]
    assert len(cards) == len(set(cards)) == 2 * NODES  # around the ring: every card once
    assert 0 <= deadlock["deadlocked_after_s"] <= deadlock["found_after_s"]
    assert outcome.queue_drops["total"] == 0  # deadlocked, not dropping
