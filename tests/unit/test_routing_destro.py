"""DESTRO tables on k-ary n-trees and twin fat trees against Villar 2011 (fat-tree notes §2 and §4)."""

from __future__ import annotations

from collections import Counter
from itertools import product

import pytest

from controller.analysis.metrics import fattree_paper_metric
from controller.analysis.paths import AllPairs
from controller.routing import compute_tables, walk
from topologies.fattree import kary_ntree, twin_fattree


def digits(value: int, k: int, count: int) -> list[int]:
    return [(value // k**i) % k for i in range(count)]


def logical_hops(tables, src: int, dst: int) -> list[tuple[int, tuple[int, ...], int, int]]:
    """(stage, o digits, logical in port, logical out port) per twin switch visited."""
    net, topo = tables.network, tables.topology
    twins = {name: twin for twin in topo.twins.values() for name in twin.cards}
    hops: list[list] = []
    for hop in walk(tables, src, dst).hops:
        twin = twins[net.card_names[hop.card_id]]
        in_name, out_name = (
            net.port_name(hop.card_id, hop.ingress_port),
            net.port_name(hop.card_id, hop.egress_port),
        )
        if not hops or hops[-1][0] != twin.name:
            hops.append([twin.name, twin.stage, tuple(twin.coords), int(in_name), None])
        if out_name.isdigit():
            hops[-1][4] = int(out_name)
    return [(stage, o, port_in, port_out) for _, stage, o, port_in, port_out in hops]


def closed_form_path(src: int, dst: int, k: int, n: int) -> list[tuple[int, tuple[int, ...], int, int]]:
    """Fat-tree notes §2.3: every DESTRO path from its turn stage t = FirstDifference(src, dst)."""
    s_d, d_d = digits(src, k, n), digits(dst, k, n)
    t = max(i for i in range(n) if s_d[i] != d_d[i])
    path = []
    for s in range(t):
        o = tuple(d_d[i] if i < s else s_d[i + 1] for i in range(n - 1))
        path.append((s, o, s_d[s], k + d_d[s]))
    o = tuple(d_d[i] if i < t else s_d[i + 1] for i in range(n - 1))
    path.append((t, o, s_d[t], d_d[t]))
    for s in range(t - 1, -1, -1):
        o = tuple(d_d[i] if i < s else d_d[i + 1] for i in range(n - 1))
        path.append((s, o, k + d_d[s], d_d[s]))
    return path


@pytest.mark.parametrize(
    "k,n,twin", [(2, 3, False), (4, 2, False), (4, 3, False), (4, 2, True), (4, 3, True), (6, 2, True)]
)
def test_every_path_follows_the_closed_form(k, n, twin):
    topology = twin_fattree(k, n) if twin else kary_ntree(k, n)
    tables = compute_tables(topology, "destro")
    for src, dst in product(range(k**n), repeat=2):
        if src != dst:
            hops = logical_hops(tables, src, dst)
            assert hops == closed_form_path(src, dst, k, n)
            t = max(i for i in range(n) if digits(src, k, n)[i] != digits(dst, k, n)[i])
            assert len(hops) == 2 * t + 1
            assert max(stage for stage, *_ in hops) == t


def o_of(text: str) -> tuple[int, ...]:
    """Switch digits written most significant first (as the paper does), least significant first here."""
    return tuple(int(c) for c in reversed(text))


@pytest.mark.parametrize(
    "k,n,src,dst,expected",
    [
        (2, 3, 0, 5, [(0, "00", 0, 3), (1, "01", 0, 2), (2, "01", 0, 1), (1, "11", 2, 0), (0, "10", 3, 1)]),
        (2, 3, 5, 0, [(0, "10", 1, 2), (1, "10", 0, 2), (2, "00", 1, 0), (1, "00", 2, 0), (0, "00", 2, 0)]),
        (2, 3, 1, 3, [(0, "00", 1, 3), (1, "01", 0, 1), (0, "01", 3, 1)]),
        (2, 3, 6, 7, [(0, "11", 0, 1)]),
        (4, 3, 5, 46, [(0, "01", 1, 6), (1, "02", 1, 7), (2, "32", 0, 2), (1, "22", 7, 3), (0, "23", 6, 2)]),
        (4, 3, 46, 5, [(0, "23", 2, 5), (1, "21", 3, 5), (2, "11", 2, 0), (1, "01", 5, 1), (0, "01", 5, 1)]),
    ],
)
def test_worked_examples_of_section_2_5(k, n, src, dst, expected):
    for topology in (kary_ntree(k, n), twin_fattree(k, n) if k >= 4 else None):
        if topology is None:
            continue
        hops = logical_hops(compute_tables(topology, "destro"), src, dst)
        assert hops == [(stage, o_of(o), port_in, port_out) for stage, o, port_in, port_out in expected]


def test_switch_reached_only_by_the_seeds_destinations():
    """Ex 1.3 / 1.4: 2-ary 3-tree, switch <1,01> is reached descending by {1,3}, ascending by {5,7}."""
    tables = compute_tables(kary_ntree(2, 3), "destro")
    switch = next(t for t in tables.topology.twins.values() if t.stage == 1 and tuple(t.coords) == (1, 0))
    card = tables.network.card_id_of_name[switch.cards[0]]
    destinations = {e.dst_pe for e in tables.entries() if e.card_id == card}
    assert destinations == {1, 3, 5, 7}


def crossings_formula(alpha: set[int], k: int, n: int, s: int) -> int:
    """F(p) + (split pairs) * (k^n - k^(s+1)) below roots, 2p(k-p)k^(n-1) at them: fat-tree notes §4.3."""
    p = sum(1 for port in alpha if port < k)
    if s == n - 1:
        return 2 * p * (k - p) * k ** (n - 1)
    forward_turn = (k ** (n - 1) - k**s) * (p**2 + (k - p) ** 2) + 2 * k**s * p * (k - p)
    split_pairs = sum(1 for j in range(k) if (j in alpha) != (k + j in alpha))
    return forward_turn + split_pairs * (k**n - k ** (s + 1))


@pytest.mark.parametrize(
    "k,n,config",
    [
        (4, 2, "pairs"),
        (4, 3, "pairs"),
        (6, 2, "pairs"),
        (8, 2, "pairs"),
        (2, 3, "pairs"),
        (4, 3, "alldown"),
        (4, 3, "unpaired"),
        (8, 2, [0, 1, 2, 3, 8, 9, 12, 13]),
        (6, 2, [0, 2, 4, 7, 9, 11]),
    ],
)
def test_internal_link_crossings_per_twin_match_section_4_3(k, n, config):
    topology = twin_fattree(k, n, config=config)
    pairs = AllPairs(compute_tables(topology, "destro"))
    metric = fattree_paper_metric(pairs)
    alpha = set(topology.params["alpha_ports"])
    root_alpha = set(topology.params["root_alpha_ports"])
    for stage in metric["per_stage"]:
        s = stage["stage"]
        expected = crossings_formula(root_alpha if s == n - 1 else alpha, k, n, s)
        assert stage["min"] == stage["max"] == expected
    if config == "pairs":
        assert all(st["min"] == k ** (n + 1) // 2 for st in metric["per_stage"][:-1])


@pytest.mark.parametrize(
    "k,n,distribution",
    [
        (2, 3, {0: 8, 1: 32, 2: 16}),
        (4, 3, {0: 960, 1: 2048, 2: 1024}),
        (8, 2, {0: 1984, 1: 2048}),
    ],
)
def test_network_totals_of_section_4_4(k, n, distribution):
    pairs = AllPairs(compute_tables(twin_fattree(k, n), "destro"))
    internal = pairs.internal()
    assert int(internal.sum()) == (n - 1) * k ** (2 * n) // 2
    assert dict(Counter(internal.tolist())) == distribution
    mean_switch_hops = sum((2 * t + 1) * (k - 1) * k**t for t in range(n)) / (k**n - 1)
    assert float((pairs.external() + 1).mean()) == pytest.approx(mean_switch_hops)


def test_each_up_link_carries_the_papers_path_count():
    """Up links out of stage s carry k^n - k^(s+1) paths (k-ary n-tree, uniform; fat-tree notes §4.2)."""
    k, n = 4, 3
    tables = compute_tables(kary_ntree(k, n), "destro")
    pairs = AllPairs(tables)
    loads = pairs.loads()
    net = tables.network
    per_link: Counter = Counter()
    for index in range(len(tables)):
        card, port = int(tables.card_id[index]), int(tables.egress_port[index])
        name = net.port_name(card, port)
        if name.isdigit() and int(name) >= k:
            per_link[card, port] += loads[index]
    stage_of = {net.card_id_of_name[t.cards[0]]: t.stage for t in tables.topology.twins.values()}
    for (card, _), load in per_link.items():
        assert load == k**n - k ** (stage_of[card] + 1)


def test_crossings_spread_evenly_over_r_internal_links():
    k, n, r = 8, 2, 2
    tables = compute_tables(twin_fattree(k, n, r=r), "destro")
    loads = AllPairs(tables).loads()
    net = tables.network
    per_link: Counter = Counter()
    for index in range(len(tables)):
        card, port = int(tables.card_id[index]), int(tables.egress_port[index])
        if (
            net.port_name(card, port).startswith("int")
            and tables.topology.twins[net.twin_of_card[card]].stage == 0
        ):
            per_link[card, port] += loads[index]
    assert len(per_link) == 2 * r * k ** (n - 1)
    assert len(set(per_link.values())) == 1


def test_descending_crossings_get_their_own_vc_and_stay_deadlock_free():
    from controller.analysis.deadlock import check_deadlock

    tables = compute_tables(twin_fattree(4, 3, config="unpaired"), "destro")
    assert set(tables.vc_names["internal"]) == {0, 1}
    uses = {e.use: e.vc for e in tables.entries() if e.use in ("ascend", "turn", "descend")}
    assert uses == {"ascend": 0, "turn": 0, "descend": 1}
    assert check_deadlock(AllPairs(tables)).deadlock_free
    optimal = compute_tables(twin_fattree(4, 3), "destro")
    assert optimal.vcs_per_link() == {"external": 1, "internal": 1, "host": 1}
    assert check_deadlock(AllPairs(optimal)).deadlock_free
