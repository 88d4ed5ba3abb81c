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

from collections.abc import Iterator

import pytest
from run_checks import check_lossless, lossless_network, plan

from controller.analysis.deadlock import check_deadlock
from emulation.run import run_on_network

pytestmark = pytest.mark.root

NODES = 3
LOAD = {"traffic": "neighbour", "rate": 250.0, "duration": 1.0, "link_rate": 100.0, "lossless": True}


@pytest.fixture(scope="module")
def ring(tmp_path_factory) -> Iterator[tuple]:
    yield from lossless_network("ndt", str(NODES), tmp_path_factory.mktemp("twin-ring"))


def test_dort_is_lossless_and_deadlock_free_on_the_twin_ring(ring, tmp_path) -> None:
    topology, network = ring
    outcome = run_on_network(plan(topology, tmp_path, routing="dort", **LOAD), network, show_bars=False)
    assert outcome.plan.acyclic
    check_lossless(outcome)


def test_dort_with_merged_internal_vcs_deadlocks_on_a_cycle_of_the_model(ring, tmp_path) -> None:
    topology, network = ring
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
