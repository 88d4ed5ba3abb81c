"""Chueh et al.'s Lemma 1 degree bounds and the bit-reverse family's loads on them.

BvN-radix notes §1.3, §1.5.
"""

import pytest

from topologies.bvn import (
    BvnTreeError,
    degree_table,
    lemma1_down_degree,
    lemma1_up_degree,
    link_loads,
    max_family_loads,
    nonblocking_up_degree,
    total_up_links,
    tree_bits,
)
from topologies.permutations import bit_reverse_permutations, rotator_permutations, shifted_bit_reverse

UP_BOUNDS = {  # Cu lb for j = 1..n
    2: [1, 1],
    3: [2, 2, 1],
    4: [4, 3, 2, 1],
    5: [8, 6, 4, 2, 1],
    6: [16, 12, 7, 4, 2, 1],
    8: [64, 48, 28, 15, 8, 4, 2, 1],
}
DOWN_BOUNDS = {4: [8, 6, 4, 2], 6: [32, 24, 14, 8, 4, 2], 8: [128, 96, 56, 30, 16, 8, 4, 2]}  # j = 0..n-1
TOTALS = {2: (8, 6), 3: (24, 20), 4: (64, 52), 5: (160, 136), 6: (384, 328), 8: (2048, 1808)}


@pytest.mark.parametrize("n_bits", sorted(UP_BOUNDS))
def test_upward_bounds(n_bits: int) -> None:
    assert [lemma1_up_degree(n_bits, j) for j in range(1, n_bits + 1)] == UP_BOUNDS[n_bits]


@pytest.mark.parametrize("n_bits", sorted(DOWN_BOUNDS))
def test_downward_bounds(n_bits: int) -> None:
    assert [lemma1_down_degree(n_bits, j) for j in range(n_bits)] == DOWN_BOUNDS[n_bits]


@pytest.mark.parametrize("n_bits", sorted(TOTALS))
def test_total_upward_links(n_bits: int) -> None:
    nonblocking, lemma1 = TOTALS[n_bits]
    assert total_up_links(n_bits, nonblocking=True) == nonblocking == n_bits * 2**n_bits
    assert total_up_links(n_bits) == lemma1


def test_n16_table_and_node_radices() -> None:
    rows = degree_table(4)
    assert [(r.nodes, r.up_nonblocking, r.up_lemma1, r.down_nonblocking, r.down_lemma1) for r in rows] == [
        (1, None, None, 16, 8),
        (2, 8, 4, 8, 6),
        (4, 4, 3, 4, 4),
        (8, 2, 2, 2, 2),
        (16, 1, 1, None, None),
    ]
    assert [r.radix_lemma1 for r in rows[:4]] == [8, 10, 7, 4]
    assert [r.radix_nonblocking for r in rows[:4]] == [16, 16, 8, 4]


def test_saving_is_two_to_minus_j_in_the_upper_half_and_none_below() -> None:
    n = 10
    for j in range(1, n + 1):
        nonblocking, bound = nonblocking_up_degree(n, j), lemma1_up_degree(n, j)
        if 2 * j <= n:
            assert bound * 2**j == nonblocking * (2**j - 1)
        else:
            assert bound == nonblocking


def test_loads_of_pi_1_for_16_nodes() -> None:
    pi_1 = shifted_bit_reverse(4, 1)
    assert link_loads(pi_1, 1)[0] == [4, 4]
    assert link_loads(pi_1, 2)[0] == [3, 3, 3, 3]
    assert link_loads(pi_1, 3)[0] == [1, 2, 2, 1, 2, 2, 1, 2]


@pytest.mark.parametrize("n_bits", [2, 3, 4, 5, 6])
def test_bit_reverse_family_meets_the_bound_exactly(n_bits: int) -> None:
    loads = max_family_loads(bit_reverse_permutations(n_bits), n_bits)
    assert [up for up, _ in loads] == UP_BOUNDS[n_bits]
    assert [down for _, down in loads] == UP_BOUNDS[n_bits]  # into (j, k) from its parent: C_d(j-1) / 2


def test_every_pi_i_hits_the_bound_at_every_level_for_even_n() -> None:
    n = 4
    for mapping in bit_reverse_permutations(n):
        assert [max(link_loads(mapping, j)[0]) for j in range(1, n + 1)] == UP_BOUNDS[n]
    # odd n: some pi_i stay below the bound at level (n + 1) / 2
    below = [m for m in bit_reverse_permutations(3) if max(link_loads(m, 2)[0]) < UP_BOUNDS[3][1]]
    assert below


def test_rotators_need_the_full_nonblocking_degrees() -> None:
    assert [up for up, _ in max_family_loads(rotator_permutations(16), 4)] == [8, 4, 2, 1]


@pytest.mark.parametrize("nodes", [0, 1, 12, 2.0, True])
def test_bad_tree_sizes(nodes) -> None:
    with pytest.raises(BvnTreeError, match="power of two"):
        tree_bits(nodes)


def test_bad_levels() -> None:
    with pytest.raises(BvnTreeError, match="level 0"):
        lemma1_up_degree(4, 0)
    with pytest.raises(BvnTreeError, match="level 4"):
        lemma1_down_degree(4, 4)
