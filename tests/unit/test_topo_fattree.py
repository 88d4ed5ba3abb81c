"""k-ary n-trees and twin fat trees: counts, the butterfly wiring, Villar 2011's path and crossing numbers.

Expected values come from Villar 2011 / fat-tree notes: closed-form
counts, the butterfly definition of the wiring (A.3), the worked DESTRO paths
(2.5), Table 1 and the internal-link crossings of section 4.3-4.4. DESTRO is
re-implemented here from the spec (2.2) and walked port by port through the
built topology, so a wiring or port-placement error changes the numbers.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations
from math import comb

import pytest

from topologies.fattree import from_digits, kary_ntree, to_digits, twin_fattree
from topologies.model import PortRef, Topology, TopologyError
from topologies.scp import is_pair_config, pair_configs, pairs_config, parse_scp

# -- helpers: DESTRO on the logical switch, walked through the physical cards ----------


def destro_out_port(k: int, n: int, stage: int, o: tuple[int, ...], dst: int) -> int:
    """Fat-tree notes §2.2: down port dst_s when dst is below <stage, o>, else up port k + dst_s."""
    d = to_digits(dst, k, n)
    if all(d[j] == o[j - 1] for j in range(stage + 1, n)):
        return d[stage]
    return k + d[stage]


def walk(topo: Topology, src: int, dst: int) -> list[tuple[str, int, int, int]]:
    """Hops (twin, in switch port, out switch port, internal crossings) of the DESTRO path src -> dst.

    Inside a twin the packet leaves on the card that owns the out port; when that is
    the other card it crosses internal link int<dst mod r> first.
    """
    k, n = topo.params["k"], topo.params["n"]
    r = topo.params.get("r", 1)
    host = topo.host_of_pe(src)
    here = PortRef(host.card, host.port)
    hops = []
    for _ in range(2 * n + 2):
        card = topo.cards[here.node]
        twin = topo.twins[card.twin]
        in_port = int(topo.port_names[here])
        out_port = destro_out_port(k, n, twin.stage, twin.coords, dst)
        exit_ref = twin.ports[str(out_port)]
        crossings = 0
        if exit_ref.node != card.name:
            internal = topo.port_named(card.name, f"int{dst % r}")
            assert topo.link_at(internal).kind == "internal"
            assert topo.peer(internal).node == exit_ref.node
            crossings = 1
        hops.append((twin.name, in_port, out_port, crossings))
        far = topo.peer(exit_ref)
        if far.node.startswith("h"):
            assert far.node == f"h{dst}", f"{src}->{dst} delivered to {far.node}"
            return hops
        here = far
    raise AssertionError(f"{src}->{dst} did not arrive")


def all_walks(topo: Topology):
    pes = range(len(topo.hosts))
    return {(s, d): walk(topo, s, d) for s in pes for d in pes if s != d}


# -- counts and wiring -----------------------------------------------------------------


@pytest.mark.parametrize("k,n", [(2, 1), (2, 3), (3, 2), (4, 2), (4, 3), (5, 2)])
def test_kary_ntree_counts(k: int, n: int) -> None:
    topo = kary_ntree(k, n)
    counts = topo.counts()
    assert counts["twins"] == counts["cards"] == n * k ** (n - 1)
    assert counts["hosts"] == counts["host_links"] == k**n
    assert counts["external_links"] == (n - 1) * k**n
    assert counts["internal_links"] == 0
    assert len(topo.unused_ports) == k * k ** (n - 1)  # the roots' up ports
    assert topo.missing_ports() == []


@pytest.mark.parametrize("k,n", [(2, 3), (3, 3), (4, 2), (4, 3)])
def test_wiring_is_the_butterfly_of_seed_000(k: int, n: int) -> None:
    """Up global port L of stage s meets down global port beta_{s+1}(L) of stage s+1.

    Fat-tree notes §1.4; Villar 2011, App. A.3.
    """

    def beta(i: int, value: int) -> int:  # swap digit 0 and digit i
        digits = list(to_digits(value, k, n))
        digits[0], digits[i] = digits[i], digits[0]
        return from_digits(digits, k)

    topo = kary_ntree(k, n)
    by_position = {(t.stage, from_digits(t.coords, k)): t for t in topo.twins.values()}
    for stage in range(n - 1):
        for global_up in range(k**n):
            o_value, j = divmod(global_up, k)
            lower = by_position[stage, o_value].ports[str(k + j)]
            o_upper, down = divmod(beta(stage + 1, global_up), k)
            upper = by_position[stage + 1, o_upper].ports[str(down)]
            assert topo.peer(lower) == upper


def test_switches_are_linked_iff_seed_000_says_so() -> None:
    """<s,o> - <s',o'> linked iff s' = s+1 and o_i = o'_i for i != s, by exactly one link (brute force)."""
    k, n = 3, 3
    topo = kary_ntree(k, n)
    linked = Counter()
    for link in topo.links_of_kind("external"):
        a, b = (topo.twins[topo.cards[end.node].twin] for end in (link.a, link.b))
        linked[frozenset((a.name, b.name))] += 1
    twins = list(topo.twins.values())
    pairs = 0
    for first, second in combinations(twins, 2):
        low, high = sorted((first, second), key=lambda twin: twin.stage)
        expected = high.stage == low.stage + 1 and all(
            x == y for i, (x, y) in enumerate(zip(low.coords, high.coords, strict=True)) if i != low.stage
        )
        assert linked[frozenset((low.name, high.name))] == (1 if expected else 0)
        pairs += expected
    assert pairs == (n - 1) * k**n


def test_terminal_h_is_on_down_port_h0_of_leaf_h_div_k() -> None:
    k, n = 4, 3
    for topo in (kary_ntree(k, n), twin_fattree(k, n)):
        for host in topo.hosts:
            leaf = next(
                t for t in topo.twins.values() if t.stage == 0 and from_digits(t.coords, k) == host.pe // k
            )
            assert leaf.ports[str(host.pe % k)] == PortRef(host.card, host.port)


# -- DESTRO paths through the built networks -------------------------------------------


@pytest.mark.parametrize(
    "k,n,src,dst,expected",
    [  # fat-tree notes §2.5: <stage,o> in -> out, o written most significant digit first
        (2, 3, 0, 5, ["s0o00 0 3", "s1o01 0 2", "s2o01 0 1", "s1o11 2 0", "s0o10 3 1"]),
        (2, 3, 5, 0, ["s0o10 1 2", "s1o10 0 2", "s2o00 1 0", "s1o00 2 0", "s0o00 2 0"]),
        (2, 3, 1, 3, ["s0o00 1 3", "s1o01 0 1", "s0o01 3 1"]),
        (2, 3, 6, 7, ["s0o11 0 1"]),
        (4, 3, 5, 46, ["s0o01 1 6", "s1o02 1 7", "s2o32 0 2", "s1o22 7 3", "s0o23 6 2"]),
        (4, 3, 46, 5, ["s0o23 2 5", "s1o21 3 5", "s2o11 2 0", "s1o01 5 1", "s0o01 5 1"]),
    ],
)
def test_worked_destro_paths(k: int, n: int, src: int, dst: int, expected: list[str]) -> None:
    for topo in (kary_ntree(k, n), twin_fattree(k, n)):
        assert [f"{twin} {a} {b}" for twin, a, b, _ in walk(topo, src, dst)] == expected


def test_table_1_paths_per_switch_and_mean_hops() -> None:
    """k=4, n=3: paths through a switch 492 / 432 / 192 by stage; mean 4.4286 switch hops.

    Fat-tree notes §4.2, §4.4.
    """
    k, n = 4, 3
    walks = all_walks(kary_ntree(k, n))
    through = Counter(twin for hops in walks.values() for twin, *_ in hops)
    topo = kary_ntree(k, n)
    for twin in topo.twins.values():
        assert through[twin.name] == {0: 492, 1: 432, 2: 192}[twin.stage]
    mean = sum(len(hops) for hops in walks.values()) / len(walks)
    expected = sum((2 * t + 1) * (k - 1) * k**t for t in range(n)) / (k**n - 1)
    assert mean == pytest.approx(expected) and round(mean, 4) == 4.4286


# -- twin switches: port placement and internal-link crossings --------------------------


@pytest.mark.parametrize("k,n,r", [(4, 2, 1), (4, 3, 2), (6, 2, 1), (8, 2, 2)])
def test_twin_fattree_cards_and_ports(k: int, n: int, r: int) -> None:
    topo = twin_fattree(k, n, r=r)
    counts = topo.counts()
    switches = n * k ** (n - 1)
    assert counts["twins"] == switches and counts["cards"] == 2 * switches
    assert counts["internal_links"] == r * switches
    assert counts["external_links"] == (n - 1) * k**n and counts["hosts"] == k**n
    assert topo.missing_ports() == []
    for twin in topo.twins.values():
        alpha, beta = twin.cards
        owned = {name for name, ref in twin.ports.items() if ref.node == alpha}
        expected = pairs_config(k) if twin.stage < n - 1 else frozenset(range(k))
        assert {int(p) for p in owned} == expected
        assert all(topo.cards[c].num_ports == k + r for c in twin.cards)
        internal = [topo.port_named(alpha, f"int{j}") for j in range(r)]
        assert [topo.peer(ref) for ref in internal] == [topo.port_named(beta, f"int{j}") for j in range(r)]
        if twin.stage == n - 1:  # root beta: only unused up ports and the internal links
            assert all(ref in topo.unused_ports for ref in topo.card_ports(beta)[:k])


def crossings_by_stage(topo: Topology) -> tuple[dict[int, set[int]], Counter]:
    per_twin = Counter()
    per_path = Counter()
    for hops in all_walks(topo).values():
        per_path[sum(c for *_, c in hops)] += 1
        for twin, _, _, crossed in hops:
            per_twin[twin] += crossed
    by_stage: dict[int, set[int]] = {}
    for twin in topo.twins.values():
        by_stage.setdefault(twin.stage, set()).add(per_twin[twin.name])
    return by_stage, per_path


def test_optimal_configuration_crossings_k4_n3() -> None:
    """Pairs below the roots: k^(n+1)/2 = 128 paths cross per twin, 0 at the roots; distribution of 4.4."""
    by_stage, per_path = crossings_by_stage(twin_fattree(4, 3))
    assert by_stage == {0: {128}, 1: {128}, 2: {0}}
    assert per_path == {0: 960, 1: 2048, 2: 1024}
    mean = sum(c * m for c, m in per_path.items()) / per_path.total()
    assert round(mean, 4) == 1.0159  # (n-1)/2 * N/(N-1)


@pytest.mark.parametrize(
    "config,root_config,expected",
    [  # torus notes I §1.4 table (k=4, n=3)
        ("alldown", "alldown", {0: {480}, 1: {384}, 2: {0}}),
        ("unpaired", "alldown", {0: {248}, 1: {224}, 2: {0}}),
        ("pairs", "pairs", {0: {128}, 1: {128}, 2: {128}}),
    ],
)
def test_other_configurations_cost_what_the_papers_say(config: str, root_config: str, expected) -> None:
    by_stage, _ = crossings_by_stage(twin_fattree(4, 3, config=config, root_config=root_config))
    assert by_stage == expected


def test_k8_optimum_and_example_1_5() -> None:
    """k=8, n=2: pairs give 256 per leaf twin, Example 1.5's configuration 480 (fat-tree notes §4.3)."""
    by_stage, per_path = crossings_by_stage(twin_fattree(8, 2))
    assert by_stage == {0: {256}, 1: {0}} and per_path == {0: 1984, 1: 2048}
    by_stage, _ = crossings_by_stage(twin_fattree(8, 2, config="0,1,2,3,8,9,12,13"))
    assert by_stage[0] == {480}


def test_descending_packets_never_cross_with_pair_configurations() -> None:
    """Prop 1.12 + pairs: a descending hop (entering on an up port) stays on one card."""
    k, n = 4, 3
    for alpha in pair_configs(k)[:3]:
        topo = twin_fattree(k, n, config=sorted(alpha))
        for hops in all_walks(topo).values():
            assert all(crossed == 0 for _, in_port, _, crossed in hops if in_port >= k)


# -- configurations -----------------------------------------------------------------------


def test_scp_configurations_match_seed_examples() -> None:
    assert pairs_config(8) == {0, 1, 2, 3, 8, 9, 10, 11}  # Example 1.7, T_1
    assert is_pair_config({0, 2, 3, 4, 8, 10, 11, 12}, 8)  # Example 1.7, T_2
    assert not is_pair_config({0, 1, 2, 3, 8, 9, 12, 13}, 8)  # Example 1.5
    for k in (2, 4, 6, 8):
        configs = pair_configs(k)
        assert len(set(configs)) == len(configs) == comb(k, k // 2)
        assert all(is_pair_config(c, k) and len(c) == k for c in configs)


@pytest.mark.parametrize(
    "value,k,message",
    [
        ("pairs", 3, "even k"),
        ("unpaired", 6, "divisible by 4"),
        ("0,1,2", 4, "k=4 distinct"),
        ("0,1,2,9", 4, "0..7"),
        ("best", 4, "pairs, alldown, unpaired"),
    ],
)
def test_bad_configurations_name_the_problem(value: str, k: int, message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        parse_scp(value, k, parameter="config")


@pytest.mark.parametrize("k,n,r", [(1, 2, None), (4, 0, None), (4, 2, 0)])
def test_bad_tree_parameters(k: int, n: int, r) -> None:
    with pytest.raises(TopologyError, match="must be an integer"):
        twin_fattree(k, n, r=r)
