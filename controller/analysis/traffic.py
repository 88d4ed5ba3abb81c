"""Traffic patterns over PE indices (docs/contracts.md numbering), shared by the analysis and the emulation.

A pattern gives flows (src, dst, weight): `weight` is the fraction of the
source PE's injection bandwidth sent to `dst`, so a PE injects one unit in all
(the normalisation the throughput bound uses). Flows from a PE to itself are
left out (a fixed point of a permutation injects nothing). ``phase`` numbers
the permutation a flow belongs to for patterns that are a sequence of
permutations (the bit-reverse family); it is 0 otherwise.

Domains (each pattern refuses others with a TrafficError naming them):

=====================  ==========================================================
uniform, all-to-all    any PE count >= 2 (uniform: random destination per packet;
                       all-to-all: one message per pair; same flows and weights)
bit-reversal           N = 2^b: dst = the b bits of src reversed
bit-complement         N = 2^b: dst = src with every bit inverted
transpose              N = 2^b with b even: the two b/2-bit halves swapped
perfect-shuffle        N = 2^b: bits rotated left by one
butterfly              N = 2^b: most and least significant bits swapped
tornado                torus/nDT coordinates: o_i + ceil(k_i/2) - 1 in every dimension, same card
neighbour              torus/nDT coordinates: o_i + 1 in every dimension, same card
hotspot                any N: `fraction` of each PE's traffic to PE `hotspot`, the rest uniform
random-permutation     any N: a permutation drawn from numpy's generator seeded with `seed`
bit-reverse-shift      N = 2^b: Chueh et al.'s pi_i(x) = (bitrev(x) + i) mod N, i = `shift` (1..N)
bit-reverse-family     N = 2^b: all N permutations pi_1..pi_N of Chueh et al., weight 1/N each,
                       phase i-1 for pi_i (together every pair once: the all-ones matrix)
=====================  ==========================================================

>>> t = make_traffic("bit-complement", num_pes=8)
>>> t.flows()[:3]
[(0, 7, 1.0), (1, 6, 1.0), (2, 5, 1.0)]
>>> try:
...     make_traffic("transpose", num_pes=8)
... except TrafficError as error:
...     print(error)
transpose needs a power-of-two PE count with an even number of bits (4, 16, 64, ...); got 8 PEs
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from topologies.errors import TwinnetError
from topologies.model import Topology


class TrafficError(TwinnetError, ValueError):
    """A traffic pattern asked for with an unknown name or on PEs outside its domain."""


@dataclass(frozen=True)
class Traffic:
    """Flows of one pattern as parallel arrays; weights are fractions of each source's injection."""

    name: str
    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray
    phase: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def flows(self) -> list[tuple[int, int, float]]:
        """The flows as (src, dst, weight) tuples."""
        return list(zip(self.src.tolist(), self.dst.tolist(), self.weight.tolist(), strict=True))

    def injection(self, num_pes: int) -> np.ndarray:
        """Units each PE injects (1 for every PE with any flow)."""
        return np.bincount(self.src, weights=self.weight, minlength=num_pes)

    @property
    def num_flows(self) -> int:
        """Number of flows (src, dst, weight)."""
        return int(self.src.size)

    @cached_property
    def _by_destination(self) -> tuple[np.ndarray, np.ndarray]:
        """Flow order sorted by destination (stable) and the sorted destinations."""
        order = np.argsort(self.dst, kind="stable")
        return order, self.dst[order]

    def pair_weights(self, first: int, last: int, num_pes: int) -> np.ndarray:
        """Weight of every (src, dst) pair with dst in [first, last), as a num_pes x (last - first) matrix.

        Flows repeated for one pair add up (in flow order); flows from a PE to itself are left out.
        """
        order, dsts = self._by_destination
        a, b = np.searchsorted(dsts, [first, last])
        chosen = order[a:b]
        src, dst = self.src[chosen], self.dst[chosen]
        keep = src != dst
        matrix = np.zeros((num_pes, last - first))
        weight = np.asarray(self.weight, dtype=np.float64)[chosen]
        np.add.at(matrix, (src[keep], dst[keep] - first), weight[keep])
        return matrix


#: sources whose weights to every PE an AllPairsTraffic sums at once (rows that stay in the caches)
SOURCES_AT_ONCE = 64


class AllPairsTraffic(Traffic):
    """A pattern with a flow for (nearly) every ordered pair, kept as a rule instead of N^2 arrays.

    ``weight_of(src, dst)`` (vectorised, 0 for no flow) defines it; the flow
    arrays are made only when asked for, so that the analysis of thousands of
    PEs reads the weights one block of destinations at a time.
    """

    def __init__(self, name: str, num_pes: int, weight_of: Callable[[np.ndarray, np.ndarray], np.ndarray]):
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "num_pes", num_pes)
        object.__setattr__(self, "weight_of", weight_of)

    def pair_weights(self, first: int, last: int, num_pes: int) -> np.ndarray:
        src = np.arange(num_pes, dtype=np.int64)[:, None]
        dst = np.arange(first, last, dtype=np.int64)[None, :]
        return np.where(src != dst, self.weight_of(src, dst), 0.0)

    @cached_property
    def _flows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        src, dst = np.divmod(np.arange(self.num_pes * self.num_pes, dtype=np.int64), self.num_pes)
        weight = np.asarray(self.weight_of(src, dst), dtype=np.float64)
        keep = (src != dst) & (weight > 0)
        return src[keep], dst[keep], weight[keep]

    @property  # type: ignore[override]
    def src(self) -> np.ndarray:
        return self._flows[0]

    @property  # type: ignore[override]
    def dst(self) -> np.ndarray:
        return self._flows[1]

    @property  # type: ignore[override]
    def weight(self) -> np.ndarray:
        return self._flows[2]

    @property  # type: ignore[override]
    def phase(self) -> np.ndarray:
        return np.zeros(self.src.size, dtype=np.int64)

    @property
    def num_flows(self) -> int:
        return self._per_source[1]

    def injection(self, num_pes: int) -> np.ndarray:
        """Units each PE injects, summed in flow order (destinations ascending) as the flow arrays are."""
        total = np.zeros(num_pes)
        total[: self.num_pes] = self._per_source[0]
        return total

    @cached_property
    def _per_source(self) -> tuple[np.ndarray, int]:
        """(units each PE injects, number of flows), in one pass over the weights, a few sources at once."""
        total = np.zeros(self.num_pes)
        count = 0
        dst = np.arange(self.num_pes, dtype=np.int64)[:, None]
        for first in range(0, self.num_pes, SOURCES_AT_ONCE):
            src = np.arange(first, min(self.num_pes, first + SOURCES_AT_ONCE), dtype=np.int64)[None, :]
            columns = np.where(src != dst, self.weight_of(src, dst), 0.0)  # a column per source
            count += int(np.count_nonzero(columns))
            # a sum over the outer axis adds the rows one after the other: per source, destinations
            # ascending, as a running sum (a sum along the inner axis would add pairwise)
            total[first : first + columns.shape[1]] = np.add.reduce(columns, axis=0)
        return total, count


def _permutation(name: str, mapping: np.ndarray) -> Traffic:
    src = np.arange(mapping.size, dtype=np.int64)
    keep = mapping != src
    return Traffic(
        name,
        src[keep],
        mapping[keep].astype(np.int64),
        np.ones(int(keep.sum())),
        np.zeros(int(keep.sum()), dtype=np.int64),
    )


def _bits(name: str, num_pes: int, even: bool = False) -> int:
    """Number of address bits of a power-of-two PE count (refuses other counts)."""
    bits = num_pes.bit_length() - 1
    if num_pes < 2 or num_pes != 1 << bits or (even and bits % 2):
        need = "with an even number of bits (4, 16, 64, ...)" if even else "(2, 4, 8, ...)"
        raise TrafficError(f"{name} needs a power-of-two PE count {need}; got {num_pes} PEs")
    return bits


def _all_pairs(name: str, num_pes: int) -> Traffic:
    if num_pes < 2:
        raise TrafficError(f"{name} needs at least 2 PEs, got {num_pes}")
    share = 1.0 / (num_pes - 1)
    return AllPairsTraffic(name, num_pes, lambda src, dst: np.full(np.broadcast(src, dst).shape, share))


def uniform(num_pes: int) -> Traffic:
    """Every PE sends to every other PE, 1/(N-1) of its traffic each."""
    return _all_pairs("uniform", num_pes)


def all_to_all(num_pes: int) -> Traffic:
    """The all-to-all exchange: one message per ordered pair, normalised like uniform."""
    return _all_pairs("all-to-all", num_pes)


def bit_reversal(num_pes: int) -> Traffic:
    """dst = src's address bits reversed."""
    bits = _bits("bit-reversal", num_pes)
    src = np.arange(num_pes, dtype=np.int64)
    dst = np.zeros_like(src)
    for bit in range(bits):
        dst |= ((src >> bit) & 1) << (bits - 1 - bit)
    return _permutation("bit-reversal", dst)


def bit_complement(num_pes: int) -> Traffic:
    """dst = src with every address bit inverted."""
    _bits("bit-complement", num_pes)
    return _permutation("bit-complement", (num_pes - 1) ^ np.arange(num_pes, dtype=np.int64))


def transpose(num_pes: int) -> Traffic:
    """dst = src with its high and low halves of bits swapped (a matrix transpose)."""
    half = _bits("transpose", num_pes, even=True) // 2
    src = np.arange(num_pes, dtype=np.int64)
    return _permutation("transpose", ((src & ((1 << half) - 1)) << half) | (src >> half))


def perfect_shuffle(num_pes: int) -> Traffic:
    """dst = src's bits rotated left by one (the perfect shuffle, Villar 2011 and Massini 2022; k = 2)."""
    bits = _bits("perfect-shuffle", num_pes)
    src = np.arange(num_pes, dtype=np.int64)
    return _permutation("perfect-shuffle", ((src << 1) | (src >> (bits - 1))) & (num_pes - 1))


def butterfly(num_pes: int) -> Traffic:
    """dst = src with its most and least significant bits swapped."""
    bits = _bits("butterfly", num_pes)
    src = np.arange(num_pes, dtype=np.int64)
    top, low = (src >> (bits - 1)) & 1, src & 1
    return _permutation("butterfly", (src & ~((1 << (bits - 1)) | 1)) | (low << (bits - 1)) | top)


def _torus_coordinates(
    name: str, topology: Topology | None
) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
    """(node coordinates per PE, card side per PE, dims) of a torus or nDT; refuses other topologies."""
    if topology is None or topology.family not in ("torus", "ndt"):
        family = topology.family if topology is not None else "none given"
        raise TrafficError(f"{name} needs torus coordinates (a torus or ndt topology), got {family}")
    from controller.routing.network import CardNetwork
    from controller.routing.torus_view import TorusView

    view = TorusView(CardNetwork(topology))
    return view.coords_of_pe, view.side_of_pe, view.dims


def _shifted(name: str, topology: Topology | None, shift_of: Callable[[int], int]) -> Traffic:
    coords, side, dims = _torus_coordinates(name, topology)
    target = np.stack([(coords[:, i] + shift_of(k)) % k for i, k in enumerate(dims)], axis=1)
    node = np.zeros(coords.shape[0], dtype=np.int64)
    for i in reversed(range(len(dims))):
        node = node * dims[i] + target[:, i]
    twin = topology is not None and topology.family == "ndt"
    return _permutation(name, 2 * node + side if twin else node)


def tornado(topology: Topology | None) -> Traffic:
    """Every PE sends ceil(k_i/2) - 1 hops along every dimension i (same card of the node)."""
    return _shifted("tornado", topology, lambda k: (k + 1) // 2 - 1)


def neighbour(topology: Topology | None) -> Traffic:
    """Every PE sends to the next node in every dimension (o_i + 1), same card."""
    return _shifted("neighbour", topology, lambda k: 1)


def hotspot(num_pes: int, hotspot: int = 0, fraction: float = 1.0) -> Traffic:
    """Each PE sends `fraction` of its traffic to PE `hotspot` and the rest uniformly to the others."""
    if not 0 <= hotspot < num_pes:
        raise TrafficError(f"hotspot must be a PE index in 0..{num_pes - 1}, got {hotspot}")
    if not 0.0 <= fraction <= 1.0:
        raise TrafficError(f"hotspot fraction must be in [0, 1], got {fraction}")
    if num_pes < 2:
        raise TrafficError(f"hotspot needs at least 2 PEs, got {num_pes}")
    share = 1.0 / (num_pes - 1)

    def weight_of(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        weight = np.full(np.broadcast(src, dst).shape, share) * (1.0 - fraction)
        weight = np.where(dst == hotspot, weight + fraction, weight)
        return np.where(src == hotspot, share, weight)

    return AllPairsTraffic("hotspot", num_pes, weight_of)


def random_permutation(num_pes: int, seed: int = 0) -> Traffic:
    """A random permutation from numpy's default generator seeded with `seed` (fixed points send nothing)."""
    if num_pes < 2:
        raise TrafficError(f"random-permutation needs at least 2 PEs, got {num_pes}")
    return _permutation(
        "random-permutation", np.random.default_rng(seed).permutation(num_pes).astype(np.int64)
    )


def bit_reverse_shift(num_pes: int, shift: int = 1) -> Traffic:
    """Chueh et al.'s pi_shift: dst = (bitrev(src) + shift) mod N, 1 <= shift <= N."""
    from topologies.permutations import shifted_bit_reverse

    bits = _bits("bit-reverse-shift", num_pes)
    if not 1 <= shift <= num_pes:
        raise TrafficError(f"bit-reverse-shift: shift must be in 1..{num_pes}, got {shift}")
    return _permutation("bit-reverse-shift", np.array(shifted_bit_reverse(bits, shift), dtype=np.int64))


def bit_reverse_family(num_pes: int) -> Traffic:
    """All N permutations pi_1..pi_N of Chueh et al. (weight 1/N each, phase i-1 for pi_i)."""
    from topologies.permutations import bit_reverse_permutations

    bits = _bits("bit-reverse-family", num_pes)
    src, dst, phase = [], [], []
    for index, mapping in enumerate(bit_reverse_permutations(bits)):
        member = np.array(mapping, dtype=np.int64)
        keep = member != np.arange(num_pes)
        src.append(np.arange(num_pes)[keep])
        dst.append(member[keep])
        phase.append(np.full(int(keep.sum()), index))
    source = np.concatenate(src)
    return Traffic(
        "bit-reverse-family",
        source,
        np.concatenate(dst),
        np.full(source.size, 1.0 / num_pes),
        np.concatenate(phase),
    )


#: pattern name -> builder taking (num_pes, topology, options)
PATTERNS: dict[str, Callable[..., Traffic]] = {
    "uniform": lambda n, topo, o: uniform(n),
    "all-to-all": lambda n, topo, o: all_to_all(n),
    "bit-reversal": lambda n, topo, o: bit_reversal(n),
    "bit-complement": lambda n, topo, o: bit_complement(n),
    "transpose": lambda n, topo, o: transpose(n),
    "perfect-shuffle": lambda n, topo, o: perfect_shuffle(n),
    "butterfly": lambda n, topo, o: butterfly(n),
    "tornado": lambda n, topo, o: tornado(topo),
    "neighbour": lambda n, topo, o: neighbour(topo),
    "hotspot": lambda n, topo, o: hotspot(n, o.get("hotspot", 0), o.get("fraction", 1.0)),
    "random-permutation": lambda n, topo, o: random_permutation(n, o.get("seed", 0)),
    "bit-reverse-shift": lambda n, topo, o: bit_reverse_shift(n, o.get("shift", 1)),
    "bit-reverse-family": lambda n, topo, o: bit_reverse_family(n),
}


def make_traffic(
    name: str, topology: Topology | None = None, num_pes: int | None = None, **options
) -> Traffic:
    """Flows of pattern `name` for `topology` (or a PE count); options: seed, hotspot, fraction, shift."""
    key = name.strip().lower().replace("_", "-")
    key = {"neighbor": "neighbour", "bitrev": "bit-reversal", "shuffle": "perfect-shuffle"}.get(key, key)
    if key not in PATTERNS:
        raise TrafficError(f"traffic pattern must be one of {', '.join(PATTERNS)}, got {name!r}")
    if num_pes is None:
        if topology is None:
            raise TrafficError("make_traffic needs a topology or num_pes")
        num_pes = len(topology.hosts)
    return PATTERNS[key](num_pes, topology, options)
