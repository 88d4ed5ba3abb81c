"""Permutation families over PE indices from Chueh et al. (load-balanced Birkhoff-von Neumann switches).

A load-balanced BvN switch with N = 2**n ports only has to realise N
permutations P_1..P_N whose matrices sum to the all-ones matrix (every
input meets every output exactly once per frame of N slots). Chueh et al. build
such a family from the bit-reverse permutation pi (the n-bit string of x read
backwards) and its circular shifts, ``pi_i(x) = (pi(x) + i) mod N`` for
i = 1..N, and shows that every pi_i has the *uniform mapping property*, which
lets a fat tree with the reduced degrees of Lemma 1 (see ``topologies.bvn``)
realise all of them without contention.

A permutation is a list ``p`` with ``p[source] = destination`` over PE
indices 0..N-1. The rotators (plain shifts) are here too, since they are the
family the paper compares against.

Example (N = 16, the values worked out in the project spec, section 1.5)::

    >>> bit_reverse_permutation(4)
    [0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15]
    >>> family = bit_reverse_permutations(4)     # pi_1 .. pi_16, in that order
    >>> family[0]
    [1, 9, 5, 13, 3, 11, 7, 15, 2, 10, 6, 14, 4, 12, 8, 0]
    >>> family[-1] == bit_reverse_permutation(4)  # pi_N is pi itself
    True
    >>> sums_to_all_ones(family)
    True
"""

from __future__ import annotations

from collections.abc import Sequence

from topologies.errors import TwinnetError


class PermutationError(TwinnetError, ValueError):
    """A permutation family asked for with parameters that do not define one."""


def _check_bits(n_bits: int) -> None:
    """Reject a bit count that gives no PE set (N = 2**n_bits needs n_bits >= 1)."""
    if isinstance(n_bits, bool) or not isinstance(n_bits, int) or n_bits < 1:
        raise PermutationError(f"number of address bits must be an integer >= 1, got {n_bits!r}")


def bit_reverse(x: int, n_bits: int) -> int:
    """The n-bit string of ``x`` read backwards (Chueh et al., eq. 9: I_m(pi(x)) = I_{n+1-m}(x)).

    >>> bit_reverse(0b0001, 4), bit_reverse(0b0110, 4), bit_reverse(0b1101, 4)
    (8, 6, 11)
    """
    _check_bits(n_bits)
    if not 0 <= x < 1 << n_bits:
        raise PermutationError(f"PE index {x} is outside 0..{(1 << n_bits) - 1}")
    result = 0
    for _ in range(n_bits):
        result = (result << 1) | (x & 1)
        x >>= 1
    return result


def bit_reverse_permutation(n_bits: int) -> list[int]:
    """The bit-reverse permutation pi on N = 2**n_bits PEs, as ``p[source] = destination``.

    >>> bit_reverse_permutation(3)
    [0, 4, 2, 6, 1, 5, 3, 7]
    """
    _check_bits(n_bits)
    return [bit_reverse(x, n_bits) for x in range(1 << n_bits)]


def shifted_bit_reverse(n_bits: int, shift: int) -> list[int]:
    """pi_i of Chueh et al. (eq. 10): bit-reverse first, then shift circularly by ``shift`` (taken mod N).

    >>> shifted_bit_reverse(2, 1)      # pi = [0, 2, 1, 3], then + 1 mod 4
    [1, 3, 2, 0]
    >>> shifted_bit_reverse(2, 4) == shifted_bit_reverse(2, 0) == bit_reverse_permutation(2)
    True
    """
    _check_bits(n_bits)
    size = 1 << n_bits
    return [(y + shift) % size for y in bit_reverse_permutation(n_bits)]


def bit_reverse_permutations(n_bits: int) -> list[list[int]]:
    """Chueh et al.'s family pi_1, ..., pi_N (N = 2**n_bits), in the paper's order.

    List position ``i - 1`` holds pi_i, so the last entry is pi_N = pi. Slot i of
    a load-balanced BvN frame uses pi_i; over the N slots every source reaches
    every destination exactly once (fixed points of a pi_i are self-sends).

    >>> bit_reverse_permutations(1)
    [[1, 0], [0, 1]]
    >>> len(bit_reverse_permutations(5))
    32
    """
    _check_bits(n_bits)
    return [shifted_bit_reverse(n_bits, i) for i in range(1, (1 << n_bits) + 1)]


def rotator_permutations(size: int) -> list[list[int]]:
    """The rotators sigma_c^1..sigma_c^N, ``x -> (x + i) mod N``: the classic LB-BvN family.

    They also sum to the all-ones matrix, but (Chueh et al., Sect. II) need the
    full nonblocking fat-tree degrees.

    >>> rotator_permutations(3)
    [[1, 2, 0], [2, 0, 1], [0, 1, 2]]
    """
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise PermutationError(f"number of PEs must be an integer >= 1, got {size!r}")
    return [[(x + i) % size for x in range(size)] for i in range(1, size + 1)]


def is_permutation(mapping: Sequence[int]) -> bool:
    """True if ``mapping`` sends 0..N-1 one-to-one onto 0..N-1.

    >>> is_permutation([2, 0, 1]), is_permutation([0, 0, 1])
    (True, False)
    """
    return sorted(mapping) == list(range(len(mapping)))


def sums_to_all_ones(family: Sequence[Sequence[int]]) -> bool:
    """True if the permutation matrices of ``family`` add up to the all-ones matrix (Chueh et al., eq. 1).

    That holds exactly when there are N permutations of N elements and every
    (source, destination) pair occurs in exactly one of them.

    >>> sums_to_all_ones(rotator_permutations(4)), sums_to_all_ones([[0, 1], [0, 1]])
    (True, False)
    """
    size = len(family)
    if any(len(p) != size or not is_permutation(p) for p in family):
        return False
    pairs = {(source, destination) for p in family for source, destination in enumerate(p)}
    return len(pairs) == size * size


def subtree_leaves(n_bits: int, level: int, index: int) -> range:
    """S(j, k) of Chueh et al. (eq. 2): the leaves under node (j, k) of the binary tree, root at level 0.

    >>> list(subtree_leaves(4, 3, 2)), list(subtree_leaves(4, 2, 1))
    ([4, 5], [4, 5, 6, 7])
    """
    _check_bits(n_bits)
    if not 0 <= level <= n_bits or not 0 <= index < 1 << level:
        raise PermutationError(f"no node ({level}, {index}) in a tree of {1 << n_bits} leaves")
    width = 1 << (n_bits - level)
    return range(index * width, (index + 1) * width)


def has_uniform_mapping_property(mapping: Sequence[int], level: int | None = None) -> bool:
    """Chueh et al.'s uniform mapping property (Definition 3), for one level j or for all levels.

    For level j: the image of every level-j subtree meets every level-(n-j)
    subtree in exactly one leaf, |sigma(S(j,k)) ∩ S(n-j,l)| = 1. The paper's
    lemmas use it at every level, so ``level=None`` checks j = 0..n.

    >>> has_uniform_mapping_property(bit_reverse_permutation(4))
    True
    >>> has_uniform_mapping_property(list(range(16)), level=1)   # identity: no
    False
    """
    size = len(mapping)
    n_bits = size.bit_length() - 1
    if size < 2 or size != 1 << n_bits or not is_permutation(mapping):
        raise PermutationError("the uniform mapping property needs a permutation of 2**n PEs, n >= 1")
    levels = range(n_bits + 1) if level is None else [level]
    for j in levels:
        if not 0 <= j <= n_bits:
            raise PermutationError(f"level {j} is outside 0..{n_bits}")
        target_width = 1 << j  # |S(n-j, l)| = 2**j
        for k in range(1 << j):
            hit_subtrees = [mapping[x] // target_width for x in subtree_leaves(n_bits, j, k)]
            if sorted(hit_subtrees) != list(range(1 << (n_bits - j))):
                return False
    return True
