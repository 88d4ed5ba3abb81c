"""Shared parts of the test_run_* modules: a plan on a running network, and the all-pairs checks.

Expected values come from the model, not from the run: the model's path of a
pair from the route tables' walker (controller.routing.walk), internal-link
crossings from the analysis (controller.analysis.paths.AllPairs).
"""

from __future__ import annotations

from collections import Counter

from controller.routing import walk
from emulation.measure import EQUAL, hop_kinds
from emulation.run import RunOutcome, RunPlan, RunSettings, plan_run, run_on_network


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
