"""Shared parts of the test_run_* modules: a plan on a running network, and the all-pairs checks.

Expected values come from the model, not from the run: the model's path of a
pair from the route tables' walker (controller.routing.walk), internal-link
crossings from the analysis (controller.analysis.paths.AllPairs).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from controller.routing import walk
from emulation.measure import EQUAL, hop_kinds
from emulation.network import build_network
from emulation.run import (
    RunOutcome,
    RunPlan,
    RunSettings,
    lossless_switch_arguments,
    plan_run,
    run_on_network,
)
from topologies.build import build_topology


def lossless_network(family: str, dims: str, out_dir: Path) -> Iterator[tuple]:
    """(topology, running network) of embedded cards with PFC on, stopped afterwards (a fixture's body)."""
    topology = build_topology(family, dims=dims)
    built = build_network(
        topology,
        target="embedded",
        out_dir=out_dir,
        lock_timeout=900,
        switch_arguments=lossless_switch_arguments(RunSettings(lossless=True)),
    )
    try:
        yield topology, built
    finally:
        built.stop()


def check_lossless(outcome: RunOutcome) -> None:
    """An overloaded lossless run: no deadlock, PFC acted, no drops, every probe on the model's path."""
    assert outcome.deadlock is None
    assert outcome.queue_drops["total"] == 0, outcome.queue_drops["rows"][:5]
    assert outcome.accounting.lost == 0 and outcome.accounting.received == len(outcome.plan.schedule)
    assert all(result.verdict == EQUAL for result in outcome.results)
    assert outcome.channels.ok
    assert outcome.lossless["cards"]["pause_frames_sent"] > 0  # the overload was real: PFC acted


def plan(topology, out, **settings) -> RunPlan:
    settings.setdefault("target", "embedded")
    settings.setdefault("rate", 40.0)
    return plan_run(topology, RunSettings(out=out, check_capacity=False, **settings))


def run(network, topology, out, **settings) -> RunOutcome:
    return run_on_network(plan(topology, out, **settings), network, show_bars=False)


def check_all_pairs(outcome: RunOutcome) -> None:
    """Every pair sent once and arrived along the model's path; crossings as the analysis says."""
    tables, num_pes = outcome.plan.tables, outcome.plan.topology.counts()["hosts"]
    pairs = Counter((r.src, r.dst) for r in outcome.results)
    assert len(pairs) == num_pes * (num_pes - 1) and set(pairs.values()) == {1}
    assert outcome.accounting.lost == 0, outcome.accounting.to_json()["lost_probes"][:5]
    bad = [
        (r.probe_id, r.src, r.dst, r.verdict, str(r.divergence))
        for r in outcome.results
        if r.verdict != EQUAL
    ]
    assert not bad, bad[:5]
    for result in outcome.results:
        model = walk(tables, result.src, result.dst)
        measured = [(h.card_id, h.in_port, h.out_port, h.vc) for h in result.arrival.hops]
        assert measured == [(h.card_id, h.ingress_port, h.egress_port, h.vc) for h in model.hops]
    # internal-link crossings counted from the traces vs the analysis of the same pairs
    all_pairs = outcome.plan.all_pairs
    measured_internal = sum(Counter(hop_kinds(r.arrival.hops, tables))["internal"] for r in outcome.results)
    assert measured_internal == int(all_pairs.internal().sum()) == outcome.crossings.analysis_internal
    assert outcome.crossings.equal and outcome.channels.ok and outcome.channels.used > 0
    assert outcome.accounting.to_json()["all_accounted"] and not outcome.dead_cards
