"""Link degrees of a fat tree that only realises a load-balanced BvN switch's permutations (Chueh et al.).

Chueh et al. (Chueh, Lien, Chang, Cheng, Lee) use Leiserson's fat tree: a
binary tree of N = 2**n leaves, root at level 0, leaves at level n, every
inner node one nonblocking crossbar joined to its parent by C_u parallel
links and to its two children by C_d links (C_d / 2 per child).

* Nonblocking (all N! permutations): C_u(j) = 2**(n-j), C_d(j) = 2**(n-j) (eq. 6-7).
* Lemma 1, for any N permutations summing to the all-ones matrix (what a
  load-balanced Birkhoff-von Neumann switch needs): C_u(j) >=
  ceil(2**(n-j) (1 - 2**-j)) and C_d(j) >= 2 ceil(2**(n-j-1) (1 - 2**-(j+1))).
  Below the middle (j > n/2) the bound equals the nonblocking degree; above
  it the saving is a fraction 2**-j of the links.
* Corollary 6: the bit-reverse family pi_1..pi_N (``topologies.permutations``)
  meets the bound, so it is tight.

:func:`link_loads` counts, for one permutation routed up to the lowest common
ancestor and down, the packets on each node's up and down bundles, so the
bound can be checked against a family.

All degree arithmetic is in integers. Example (N = 16, the tree of the
paper's Fig. 3)::

    >>> [lemma1_up_degree(4, j) for j in range(1, 5)]
    [4, 3, 2, 1]
    >>> total_up_links(4), total_up_links(4, nonblocking=True)
    (52, 64)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from topologies.errors import TwinnetError


class BvnTreeError(TwinnetError, ValueError):
    """A tree size or level outside Chueh et al.'s binary fat tree."""


def tree_bits(nodes: int) -> int:
    """n for N = 2**n end nodes; anything else is rejected.

    >>> tree_bits(256)
    8
    """
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 2 or nodes & (nodes - 1):
        raise BvnTreeError(f"Chueh et al.'s fat tree needs a power of two >= 2 end nodes, got {nodes!r}")
    return nodes.bit_length() - 1


def _check_level(n_bits: int, level: int, low: int, high: int) -> None:
    if isinstance(n_bits, bool) or not isinstance(n_bits, int) or n_bits < 1:
        raise BvnTreeError(f"number of address bits must be an integer >= 1, got {n_bits!r}")
    if not low <= level <= high:
        raise BvnTreeError(f"level {level} is outside {low}..{high} for a tree of {2**n_bits} leaves")


def nonblocking_up_degree(n_bits: int, level: int) -> int:
    """C_u(j) = 2**(n-j) for 1 <= j <= n (eq. 6): every leaf below may leave at once.

    >>> nonblocking_up_degree(4, 1)
    8
    """
    _check_level(n_bits, level, 1, n_bits)
    return 1 << (n_bits - level)


def nonblocking_down_degree(n_bits: int, level: int) -> int:
    """C_d(j) = 2**(n-j) for 0 <= j <= n-1 (eq. 7), over both children.

    >>> nonblocking_down_degree(4, 0)
    16
    """
    _check_level(n_bits, level, 0, n_bits - 1)
    return 1 << (n_bits - level)


def lemma1_up_degree(n_bits: int, level: int) -> int:
    """Lemma 1's bound ceil(2**(n-j) - 2**(n-2j)) for 1 <= j <= n, in integers.

    It is ceil of 2**(n-j) (2**n - 2**(n-j)) / 2**n: the packets that leave the
    subtree in a frame of N slots, divided by the N slots.

    >>> [lemma1_up_degree(8, j) for j in range(1, 9)]
    [64, 48, 28, 15, 8, 4, 2, 1]
    """
    _check_level(n_bits, level, 1, n_bits)
    leaves = 1 << (n_bits - level)
    frame_packets = leaves * ((1 << n_bits) - leaves)
    return -(-frame_packets >> n_bits)


def lemma1_down_degree(n_bits: int, level: int) -> int:
    """Lemma 1's bound 2 ceil(2**(n-j-1) (1 - 2**-(j+1))) for 0 <= j <= n-1, over both children.

    It is twice the upward bound of a child (level j+1).

    >>> [lemma1_down_degree(4, j) for j in range(4)]
    [8, 6, 4, 2]
    """
    _check_level(n_bits, level, 0, n_bits - 1)
    return 2 * lemma1_up_degree(n_bits, level + 1)


def total_up_links(n_bits: int, nonblocking: bool = False) -> int:
    """Sum over levels 1..n of (nodes at level j) * C_u(j): all upward links, leaf links included.

    Nonblocking it is n * 2**n.

    >>> total_up_links(8), total_up_links(8, nonblocking=True)
    (1808, 2048)
    """
    degree = nonblocking_up_degree if nonblocking else lemma1_up_degree
    return sum((1 << j) * degree(n_bits, j) for j in range(1, n_bits + 1))


@dataclass(frozen=True)
class LevelDegrees:
    """One level j of the tree (root = 0): its node count and the four degrees.

    Degrees are link counts per node; ``None`` where the level has no such
    links (the root has no parent, leaves no children).
    """

    level: int
    nodes: int
    up_nonblocking: int | None
    up_lemma1: int | None
    down_nonblocking: int | None
    down_lemma1: int | None

    @property
    def radix_nonblocking(self) -> int:
        """Ports of a node of this level in the nonblocking tree (up plus down)."""
        return (self.up_nonblocking or 0) + (self.down_nonblocking or 0)

    @property
    def radix_lemma1(self) -> int:
        """Ports of a node of this level with Lemma 1's degrees."""
        return (self.up_lemma1 or 0) + (self.down_lemma1 or 0)


def degree_table(n_bits: int) -> list[LevelDegrees]:
    """The degrees of every level 0..n, nonblocking against Lemma 1.

    >>> row = degree_table(4)[1]
    >>> row.nodes, row.up_nonblocking, row.up_lemma1, row.down_lemma1, row.radix_lemma1
    (2, 8, 4, 6, 10)
    """
    rows = []
    for j in range(n_bits + 1):
        has_up, has_down = j >= 1, j <= n_bits - 1
        rows.append(
            LevelDegrees(
                level=j,
                nodes=1 << j,
                up_nonblocking=nonblocking_up_degree(n_bits, j) if has_up else None,
                up_lemma1=lemma1_up_degree(n_bits, j) if has_up else None,
                down_nonblocking=nonblocking_down_degree(n_bits, j) if has_down else None,
                down_lemma1=lemma1_down_degree(n_bits, j) if has_down else None,
            )
        )
    return rows


def link_loads(mapping: Sequence[int], level: int) -> tuple[list[int], list[int]]:
    """Packets on the up and down bundles of each level-j node when ``mapping`` is realised.

    Routing goes up to the lowest common ancestor and down, so a packet uses
    the up bundle of (j, k) when its source is under (j, k) and its
    destination is not, and the bundle from (j, k)'s parent down to (j, k)
    in the opposite case. Returns (up loads, down loads), one entry per node
    k = 0..2**j - 1, for 1 <= j <= n.

    >>> from topologies.permutations import shifted_bit_reverse
    >>> link_loads(shifted_bit_reverse(4, 1), 3)[0]
    [1, 2, 2, 1, 2, 2, 1, 2]
    """
    size = len(mapping)
    n_bits = tree_bits(size)
    _check_level(n_bits, level, 1, n_bits)
    shift = n_bits - level  # leaf x lies under node (level, x >> shift)
    up = [0] * (1 << level)
    down = [0] * (1 << level)
    for source, destination in enumerate(mapping):
        source_node, destination_node = source >> shift, destination >> shift
        if source_node != destination_node:
            up[source_node] += 1
            down[destination_node] += 1
    return up, down


def max_family_loads(family: Sequence[Sequence[int]], n_bits: int) -> list[tuple[int, int]]:
    """For levels 1..n: the largest (up, down) bundle load over all nodes and all permutations of ``family``.

    >>> from topologies.permutations import bit_reverse_permutations, rotator_permutations
    >>> [up for up, _ in max_family_loads(bit_reverse_permutations(4), 4)]
    [4, 3, 2, 1]
    >>> [up for up, _ in max_family_loads(rotator_permutations(16), 4)]
    [8, 4, 2, 1]
    """
    result = []
    for j in range(1, n_bits + 1):
        up_max = down_max = 0
        for mapping in family:
            up, down = link_loads(mapping, j)
            up_max, down_max = max(up_max, *up), max(down_max, *down)
        result.append((up_max, down_max))
    return result
