"""All-pairs analysis against brute-force walks, loads, and the detection of broken tables."""

from __future__ import annotations

from collections import Counter
from itertools import product

import numpy as np
import pytest

from controller.analysis.paths import AllPairs
from controller.analysis.report import analyze, link_loads
from controller.analysis.traffic import make_traffic
from controller.routing import (
    BlackHoleError,
    MisdeliveryError,
    MissingEntryError,
    RoutingLoopError,
    RoutingTables,
    compute_tables,
    walk,
)
from topologies.fattree import kary_ntree, twin_fattree
from topologies.torus import ndt_torus, torus

SMALL = [
    (torus((4, 3)), "dor"),
    (ndt_torus((3, 2, 3)), "dort"),
    (ndt_torus((2, 4, 2)), "ts-dor"),
    (twin_fattree(4, 2), "destro"),
    (kary_ntree(3, 2), "destro"),
]


@pytest.mark.parametrize("topology,algorithm", SMALL)
def test_all_pairs_agree_with_walking_every_pair(topology, algorithm):
    tables = compute_tables(topology, algorithm)
    pairs = AllPairs(tables)
    n = len(topology.hosts)
    assert pairs.num_paths == n * (n - 1)
    by_pair = {
        (s, d): (e, i)
        for s, d, e, i in zip(
            pairs.src.tolist(),
            pairs.dst.tolist(),
            pairs.external().tolist(),
            pairs.internal().tolist(),
            strict=True,
        )
    }
    entries_used = set()
    for src, dst in product(range(n), repeat=2):
        if src == dst:
            continue
        path = walk(tables, src, dst)
        assert by_pair[src, dst] == (path.external_hops, path.internal_hops)
        entries_used.update((h.card_id, h.ingress_port, dst, path.routing_class) for h in path.hops)
    assert len(entries_used) == len(tables)  # exactly the triples on the paths, nothing else


@pytest.mark.parametrize(
    "topology,algorithm,pattern",
    [
        (torus((4, 4)), "dor", "uniform"),
        (ndt_torus((4, 4, 2)), "ts-dor", "transpose"),
        (twin_fattree(4, 2), "destro", "bit-reversal"),
        (ndt_torus((3, 3, 3)), "dort", "tornado"),
    ],
)
def test_link_loads_agree_with_brute_force(topology, algorithm, pattern):
    tables = compute_tables(topology, algorithm)
    traffic = make_traffic(pattern, topology)
    link_load: Counter = Counter()
    channel_load: Counter = Counter()
    for src, dst, weight in traffic.flows():
        for hop in walk(tables, src, dst).hops:
            link_load[hop.card_id, hop.egress_port] += weight
            channel_load[hop.card_id, hop.egress_port, hop.queue] += weight
    report = analyze(tables, traffic)
    computed = link_loads(AllPairs(tables), traffic)
    assert computed.keys() == link_load.keys()
    assert all(computed[link] == pytest.approx(load) for link, load in link_load.items())
    worst = max(max(link_load.values()), max(traffic.injection(len(topology.hosts))))
    assert report["max_link_load"] == pytest.approx(worst)
    assert report["max_channel_load"] == pytest.approx(max(channel_load.values()))
    assert report["throughput_bound"] == pytest.approx(1 / worst)


def test_uniform_dor_bound_on_a_ring_matches_the_closed_form():
    """8-node ring, ties +: a + link carries the paths of length d = 1..k/2 that cover it, d of each."""
    k = 8
    tables = compute_tables(torus((k,)), "dor")
    report = analyze(tables, make_traffic("uniform", tables.topology))
    assert report["max_link_load"] == pytest.approx(sum(range(1, k // 2 + 1)) / (k - 1))


def edited(tables: RoutingTables, drop=(), change=None, add=()) -> RoutingTables:
    """Tables with entries dropped (indices), egress ports changed ({index: port}) or rows added."""
    columns = {
        name: getattr(tables, name).copy()
        for name in ("card_id", "ingress_port", "dst_pe", "routing_class", "egress_port", "vc", "use")
    }
    for index, port in (change or {}).items():
        columns["egress_port"][index] = port
    keep = np.ones(len(tables), dtype=bool)
    keep[list(drop)] = False
    for name in columns:
        columns[name] = columns[name][keep]
    for row in add:
        for name, value in zip(columns, row, strict=True):
            columns[name] = np.append(columns[name], np.array(value, dtype=columns[name].dtype))
    return tables.replaced(**columns)


def ring_tables():
    tables = compute_tables(torus((4,)), "dor")
    net = tables.network
    middle = tables.find(1, net.port_number(1, "d0-"), 2, 0)  # node 1, arrived moving +, towards PE 2
    return tables, net, middle


def test_missing_entry_is_reported():
    tables, _, middle = ring_tables()
    broken = edited(tables, drop=[middle])
    with pytest.raises(MissingEntryError, match="no entry at card c1"):
        walk(broken, 0, 2)
    with pytest.raises(MissingEntryError, match="c1"):
        AllPairs(broken)


def test_loop_is_reported():
    tables, net, middle = ring_tables()
    back = net.port_number(1, "d0-")
    loop_at_0 = (0, net.port_number(0, "d0+"), 2, 0, net.port_number(0, "d0+"), 0, 0)
    broken = edited(tables, change={middle: back}, add=[loop_at_0])
    with pytest.raises(RoutingLoopError, match="loops"):
        walk(broken, 0, 2)
    with pytest.raises(RoutingLoopError):
        AllPairs(broken)


def test_black_hole_is_reported():
    tables = compute_tables(kary_ntree(2, 2), "destro")
    net = tables.network
    root = next(c for c in range(net.num_cards) if tables.topology.twins[net.twin_of_card[c]].stage == 1)
    index = int(np.flatnonzero(tables.card_id == root)[0])
    unused = net.port_number(root, "2")  # a root's up port has no link
    broken = edited(tables, change={index: unused})
    with pytest.raises(BlackHoleError, match="no link"):
        AllPairs(broken)


def test_misdelivery_is_reported():
    tables = compute_tables(kary_ntree(2, 2), "destro")
    net = tables.network
    index = tables.find(int(net.pe_card[1]), int(net.pe_port[0]), 1, 0)  # PE 0 -> PE 1 on their leaf
    broken = edited(tables, change={index: int(net.pe_port[0])})
    with pytest.raises(MisdeliveryError, match="PE 0"):
        walk(broken, 0, 1)
    with pytest.raises(MisdeliveryError):
        AllPairs(broken)


def test_walk_refuses_bad_pe_indices():
    tables = compute_tables(torus((3,)), "dor")
    with pytest.raises(ValueError, match="src_pe"):
        walk(tables, 5, 0)
    with pytest.raises(ValueError, match="distinct"):
        walk(tables, 1, 1)


def test_report_fields_and_units():
    tables = compute_tables(twin_fattree(4, 2), "destro")
    report = analyze(tables, make_traffic("uniform", tables.topology))
    for name in (
        "paths",
        "hops",
        "internal_link_crossings",
        "paper_metric",
        "deadlock_free",
        "vcs_per_link",
        "max_channel_load",
        "throughput_bound",
        "switch_hops",
    ):
        assert name in report and name in report["units"]
    assert report["paths"] == 16 * 15
    torus_report = analyze(compute_tables(torus((3, 3)), "dor"))
    assert torus_report["paper_metric"] is None and torus_report["paper_metric_reason"]
