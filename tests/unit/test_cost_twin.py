"""Minkenberg 2010's cost model applied to twin switches, against Villar 2011's comparison.

Fat-tree notes §5.
"""

import pytest

from topologies.cost import (
    CostModelError,
    compare_designs,
    default_internal_links,
    discrete_optimum,
    evaluate,
    levels,
    monolithic_switch,
    switches,
    twin_switch,
)

# fat-tree notes §5: chips of radix m = 36, r = 8 internal links, so twins of 2k = 56 ports (k = 28), N = 28^3
NODES = 28**3  # 21952


def test_seed_000_example_twin_tree() -> None:
    twin = evaluate(twin_switch(56, 8), NODES, a=10, b=100)
    assert twin.design.chip_radix == 36
    assert twin.levels == 3  # stages
    assert twin.switches == 3 * 28**2 == 2352  # T-switches
    assert twin.chips == 4704
    assert twin.internal_links == 2352 * 8
    assert twin.inter_switch_links == NODES * 2


def test_seed_000_conventional_tree_of_the_same_chips() -> None:
    # Villar 2011: an 18-ary tree of radix-36 chips needs 4 levels and 4 * 18^3 = 23328 chips at 18^4 nodes
    assert levels(36, 18**4) == 4
    assert switches(36, 18**4) == 4 * 18**3 == 23328
    # at equal N (21952) Minkenberg 2010's count is 4 * ceil(21952 / 18) = 4880
    cards = compare_designs(56, NODES, 10, 100, internal_links=8).card_tree
    assert (cards.design.radix, cards.levels, cards.switches) == (36, 4, 4 * 1220)


def test_twin_cost_is_two_chips_plus_internal_links() -> None:
    comparison = compare_designs(56, NODES, 10, 100, internal_links=8)
    twin, mono = comparison.twin, comparison.monolithic
    per_twin = 2 * (36**2 + 100) + 10 * 8  # 2872
    assert twin.total_cost == 10 * 2 * NODES + 2352 * per_twin == 7_193_984
    assert mono.total_cost == 10 * 2 * NODES + 2352 * (56**2 + 100) == 8_050_112
    assert twin.crosspoints == 2352 * 2 * 36**2
    assert mono.crosspoints == 2352 * 56**2
    assert twin.inter_switch_links == mono.inter_switch_links  # internal links are not inter-switch links


def test_internal_link_cost_is_its_own_parameter() -> None:
    paid = evaluate(twin_switch(56, 8), NODES, 10, 100)  # a_int defaults to a
    free = evaluate(twin_switch(56, 8), NODES, 10, 100, internal_link_cost=0)
    assert paid.total_cost - free.total_cost == 10 * 2352 * 8


def test_half_radix_tree_and_missing_trees() -> None:
    comparison = compare_designs(56, NODES, 10, 100, internal_links=8)
    half = comparison.half_radix_tree
    # 14-ary: 14^3 = 2744 < N <= 14^4, so 4 levels of ceil(21952 / 14) = 1568 switches
    assert (half.design.radix, half.levels, half.switches) == (28, 4, 4 * 1568)
    tiny = compare_designs(4, 16, 10, 100)  # cards of radix 3 and switches of radix 2 are outside the model
    assert tiny.card_tree is None and tiny.half_radix_tree is None
    assert len(tiny.notes) == 2


def test_default_internal_links_follow_the_topology_rule() -> None:
    assert [default_internal_links(r) for r in (4, 8, 16, 32, 56)] == [1, 1, 2, 4, 7]


@pytest.mark.parametrize(("radix", "r", "message"), [(8, 4, "1 <= r < 4"), (8, 0, "1 <= r < 4"),
                                                     (10, 5, "1 <= r < 5"), (7, 1, "even radix"),
                                                     (2, 1, "even radix")])
def test_bad_twins(radix: int, r: int, message: str) -> None:
    with pytest.raises(CostModelError, match=message):
        twin_switch(radix, r)


def test_discrete_twin_optimum_skips_radices_without_room_for_r() -> None:
    best = discrete_optimum(4096, 10, 100, "twin", internal_links=8)
    assert best.design.radix // 2 > 8
    with pytest.raises(CostModelError, match="internal links"):
        discrete_optimum(4, 10, 100, "twin", internal_links=4)  # radix <= 8: k <= 4


def test_twin_of_a_single_switch_network() -> None:
    net = evaluate(twin_switch(32, 2), 16, 10, 100)
    assert (net.levels, net.switches, net.chips, net.inter_switch_links) == (1, 1, 2, 0)
    assert net.total_cost == 2 * (18**2 + 100) + 10 * 2
    assert monolithic_switch(32).cost(100, 10) == 32**2 + 100
