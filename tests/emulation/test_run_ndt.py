"""``twinnet run`` on a 3DT 2x4x2 with CBest, under DORT and under TS-DOR, on one network (embedded target).

The even middle dimension exercises ties (distance 2 of 4), parallel links (the
radix-2 dimensions) and the ring VCs of the split dimension. For each routing,
an all-pairs run: every probe arrives along the model's path, hop by hop;
internal-link crossings counted from the traces equal the analysis's figure.
"""

from __future__ import annotations

import pytest
from run_checks import check_all_pairs, run

from emulation.network import TwinnetNetwork, build_network
from topologies.build import build_topology

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def topology():
    return build_topology("ndt", dims="2x4x2", config="cbest")


@pytest.fixture(scope="module")
def network(topology, tmp_path_factory) -> TwinnetNetwork:
    built = build_network(
        topology, target="embedded", out_dir=tmp_path_factory.mktemp("ndt"), lock_timeout=900
    )
    try:
        yield built
    finally:
        built.stop()


@pytest.mark.parametrize("routing", ["dort", "ts-dor"])
def test_all_pairs_follow_the_model_hop_by_hop(network, topology, tmp_path, routing) -> None:
    outcome = run(network, topology, tmp_path, routing=routing, traffic="all-to-all")
    check_all_pairs(outcome)
    classes = {result.arrival.routing_class for result in outcome.results}
    assert classes == ({0, 1} if routing == "ts-dor" else {0})
    # the run used more than one queue somewhere: the ring / internal-link VCs
    assert len({hop.prio for result in outcome.results for hop in result.arrival.hops}) > 1
