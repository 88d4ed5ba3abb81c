"""Chueh et al.'s bit-reverse permutations pi_1..pi_N and the uniform mapping property.

BvN-radix notes §1.4-1.5.
"""

import pytest

from topologies.permutations import (
    PermutationError,
    bit_reverse,
    bit_reverse_permutation,
    bit_reverse_permutations,
    has_uniform_mapping_property,
    is_permutation,
    rotator_permutations,
    shifted_bit_reverse,
    subtree_leaves,
    sums_to_all_ones,
)

PI_16 = [0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15]
PI_1_16 = [1, 9, 5, 13, 3, 11, 7, 15, 2, 10, 6, 14, 4, 12, 8, 0]


def test_the_papers_16_node_examples() -> None:
    assert bit_reverse_permutation(4) == PI_16
    assert {x for x, y in enumerate(PI_16) if x == y} == {0, 6, 9, 15}  # the bit palindromes
    family = bit_reverse_permutations(4)
    assert family[0] == PI_1_16
    assert family[-1] == PI_16  # pi_N = pi
    assert shifted_bit_reverse(4, 1) == PI_1_16


def test_bit_reverse_reads_the_bits_backwards() -> None:
    assert bit_reverse(0b10110, 5) == 0b01101
    assert bit_reverse(1, 8) == 128
    for x in range(64):
        assert bit_reverse(bit_reverse(x, 6), 6) == x


@pytest.mark.parametrize("n_bits", range(1, 7))
def test_family_size_permutations_and_sum_to_all_ones(n_bits: int) -> None:
    family = bit_reverse_permutations(n_bits)
    assert len(family) == 2**n_bits
    assert all(is_permutation(p) for p in family)
    assert sums_to_all_ones(family)
    assert all(has_uniform_mapping_property(p) for p in family)  # Lemma 4 (and pi_N = pi)


def test_images_of_subtrees() -> None:
    assert sorted(PI_16[x] for x in subtree_leaves(4, 2, 1)) == [2, 6, 10, 14]
    assert sorted(PI_16[x] for x in subtree_leaves(4, 1, 0)) == list(range(0, 16, 2))
    assert list(subtree_leaves(4, 3, 2)) == [4, 5] and list(subtree_leaves(4, 3, 3)) == [6, 7]


def test_rotators_sum_to_all_ones_but_lack_the_uniform_mapping_property() -> None:
    rotators = rotator_permutations(16)
    assert sums_to_all_ones(rotators)
    for shift in (0, 1, 8):
        mapping = [(x + shift) % 16 for x in range(16)]
        assert [has_uniform_mapping_property(mapping, j) for j in (1, 2, 3)] == [False, False, False]


def test_sums_to_all_ones_rejects_incomplete_families() -> None:
    assert not sums_to_all_ones(bit_reverse_permutations(3)[:-1])
    assert not sums_to_all_ones([PI_16] * 16)
    assert not is_permutation([0, 2])


def test_bad_input() -> None:
    with pytest.raises(PermutationError, match=">= 1"):
        bit_reverse_permutations(0)
    with pytest.raises(PermutationError, match="outside"):
        bit_reverse(16, 4)
    with pytest.raises(PermutationError, match="2\\*\\*n"):
        has_uniform_mapping_property([0, 1, 2])
    with pytest.raises(PermutationError, match="no node"):
        subtree_leaves(4, 2, 4)
