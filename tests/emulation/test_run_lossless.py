"""Lossless runs on a ring of 5 cards (1D torus): PFC keeps every probe; a single VC deadlocks.

Links run at 100 frames/s and every host offers 250 probes/s of tornado traffic (each
PE sends two hops along +), far above what the ring carries (each + link would carry
2 x 250/s): queues fill and PFC pauses cards and hosts. With DOR's dateline VCs nothing is dropped and every
probe arrives on the model's path; with dor-no-dateline (one VC) the ring's waits close a
cycle, which the run reports as a deadlock found in the model's dependency graph.
These runs take some seconds each: a deadlock needs the ring's queues to fill.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from run_checks import check_lossless, lossless_network, plan

from emulation.run import run_on_network

pytestmark = pytest.mark.root

RING = 5
LOAD = {"traffic": "tornado", "rate": 250.0, "duration": 1.0, "link_rate": 100.0, "lossless": True}


@pytest.fixture(scope="module")
def ring(tmp_path_factory) -> Iterator[tuple]:
    yield from lossless_network("torus", str(RING), tmp_path_factory.mktemp("ring"))


def test_dor_with_datelines_is_lossless_under_overload(ring, tmp_path) -> None:
    topology, network = ring
    outcome = run_on_network(plan(topology, tmp_path, routing="dor", **LOAD), network, show_bars=False)
    check_lossless(outcome)
    lossless = outcome.lossless
    assert lossless["hosts"]["pause_frames_received"] > 0 and lossless["probes_held_by_pauses"] > 0


def test_dor_without_dateline_deadlocks_on_a_cycle_of_the_model(ring, tmp_path) -> None:
    topology, network = ring
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


def test_an_all_to_all_on_lossless_links_delivers_every_packet(ring) -> None:
    """Blocks of 20 packets from every PE to every other one overload the ring's + links (each
    carries up to 3 flows at once): PFC must hold the senders back, not drop."""
    from controller.routing import compute_tables
    from emulation.card_access import open_cards
    from emulation.collectives import run_collective
    from emulation.run import queue_stats

    def pauses_sent() -> int:
        return sum(
            row["pause_frames_sent"]
            for answer in queue_stats(network).values()
            for port in answer.get("ports", [])
            for row in port.get("pfc", [])
        )

    topology, network = ring
    with open_cards(network) as cards:
        cards.install(compute_tables(topology, "dor"))
    network.set_link_rates(LOAD["link_rate"])
    before = pauses_sent()
    result = run_collective(network, "all-to-all", link_rate_pps=LOAD["link_rate"], block=20, lossless=True)
    assert pauses_sent() > before  # the load did need PFC
    assert result["packets"] == RING * (RING - 1) * 20
    assert result["missing_packets"] == 0
    # every PE puts 80 packets on its link, one per link time
    assert result["completion_time_s"] >= (4 * 20 - 1) / LOAD["link_rate"]
