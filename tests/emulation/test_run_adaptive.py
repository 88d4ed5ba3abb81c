"""``twinnet run --routing adaptive`` on a 3DT 2x2x2 (CBest) with lossless links, embedded target.

All pairs once, for two selection functions on one network: every probe
arrives, every measured hop is one the candidate tables allow (checked here
again, hop by hop, against the adaptive tables' entries), the channels are
those of the tables. With round-robin the cards spread probes over the
candidates, so some paths leave DORT's (the escape's) path: the check is not
an equality with one model path.
"""

from __future__ import annotations

import pytest
from run_checks import lossless_network, run

from controller.routing import walk
from controller.routing.adaptive_check import path_problems
from emulation.measure import ALLOWED
from emulation.report import outcome_ok, report_data

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    yield from lossless_network("ndt", "2x2x2", tmp_path_factory.mktemp("adaptive"))


@pytest.mark.parametrize("selection", ["round-robin", "3-priority"])
def test_every_probe_arrives_on_a_path_the_candidate_tables_allow(setup, tmp_path, selection) -> None:
    topology, network = setup
    outcome = run(
        network,
        topology,
        tmp_path,
        routing="adaptive",
        selection=selection,
        traffic="all-to-all",
        lossless=True,
        link_rate=60.0,
    )
    num_pes = len(topology.hosts)
    assert len(outcome.results) == num_pes * (num_pes - 1)
    assert outcome.accounting.lost == 0, outcome.accounting.to_json()["lost_probes"][:5]
    assert outcome.deadlock is None
    adaptive = outcome.plan.adaptive
    for result in outcome.results:
        assert result.verdict == ALLOWED, (result.src, result.dst, str(result.divergence))
        hops = [(h.card_id, h.in_port, h.out_port, h.vc, h.adaptive) for h in result.arrival.hops]
        assert path_problems(adaptive.model, result.src, result.dst, hops) == []
    assert outcome.channels.ok and outcome_ok(outcome)
    data = report_data(outcome)
    kinds = data["adaptive"]["vc_kinds"]
    assert data["verdicts"]["allowed"] == len(outcome.results) and data["adaptive"]["deadlock_free"]
    links = sum(len(r.arrival.hops) - 1 for r in outcome.results)
    assert kinds["adaptive_hops"] + kinds["escape_hops"] == links and kinds["adaptive_hops"] > 0
    if selection == "round-robin":
        off_escape = [
            r
            for r in outcome.results
            if [(h.card_id, h.out_port) for h in r.arrival.hops]
            != [(h.card_id, h.egress_port) for h in walk(adaptive.escape, r.src, r.dst).hops]
        ]
        assert off_escape, "round-robin took DORT's path for every pair"
