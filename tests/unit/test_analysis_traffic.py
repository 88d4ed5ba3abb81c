"""Traffic patterns: definitions checked on bit strings, domains refused clearly."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from controller.analysis.traffic import PATTERNS, TrafficError, make_traffic
from topologies.fattree import kary_ntree
from topologies.torus import ndt_torus, torus


def as_bits(x: int, bits: int) -> str:
    return format(x, f"0{bits}b")


@pytest.mark.parametrize(
    "name,rule",
    [
        ("bit-reversal", lambda b: b[::-1]),
        ("bit-complement", lambda b: "".join("1" if c == "0" else "0" for c in b)),
        ("transpose", lambda b: b[len(b) // 2 :] + b[: len(b) // 2]),
        ("perfect-shuffle", lambda b: b[1:] + b[0]),
        ("butterfly", lambda b: b[-1] + b[1:-1] + b[0]),
    ],
)
def test_bit_permutations_follow_their_definition(name, rule):
    bits = 4
    flows = {src: (dst, w) for src, dst, w in make_traffic(name, num_pes=16).flows()}
    for src in range(16):
        dst = int(rule(as_bits(src, bits)), 2)
        if dst == src:
            assert src not in flows
        else:
            assert flows[src] == (dst, 1.0)


@pytest.mark.parametrize("name", ["uniform", "all-to-all"])
def test_all_pairs_patterns_inject_one_unit(name):
    traffic = make_traffic(name, num_pes=6)
    assert len(traffic.flows()) == 30
    assert np.allclose(traffic.injection(6), 1.0)


def test_hotspot_sends_the_fraction_to_the_hot_pe():
    traffic = make_traffic("hotspot", num_pes=5, hotspot=2, fraction=0.5)
    received = Counter()
    for _, dst, weight in traffic.flows():
        received[dst] += weight
    assert np.allclose(traffic.injection(5), 1.0)
    assert received[2] == pytest.approx(4 * (0.5 + 0.5 / 4))


def test_random_permutation_is_a_seeded_permutation():
    first = make_traffic("random-permutation", num_pes=50, seed=7).flows()
    assert first == make_traffic("random-permutation", num_pes=50, seed=7).flows()
    assert first != make_traffic("random-permutation", num_pes=50, seed=8).flows()
    assert len({d for _, d, _ in first}) == len(first)


def test_bit_reverse_family_of_seed_001_covers_every_pair_once():
    n = 16
    traffic = make_traffic("bit-reverse-family", num_pes=n)
    pairs = Counter(zip(traffic.src.tolist(), traffic.dst.tolist(), strict=True))
    assert set(pairs.values()) == {1}
    assert len(pairs) == n * (n - 1)  # every ordered pair of distinct PEs, self pairs left out
    assert set(traffic.phase.tolist()) == set(range(n))
    shift3 = make_traffic("bit-reverse-shift", num_pes=n, shift=3).flows()
    assert all(dst == (int(as_bits(src, 4)[::-1], 2) + 3) % n for src, dst, _ in shift3)


def test_tornado_and_neighbour_use_torus_coordinates():
    flows = dict((s, d) for s, d, _ in make_traffic("tornado", torus((5, 4))).flows())
    assert flows[0] == 2 + 1 * 5  # (0,0) -> (ceil(5/2)-1, ceil(4/2)-1) = (2, 1)
    flows = dict((s, d) for s, d, _ in make_traffic("neighbour", ndt_torus((3, 3, 3))).flows())
    assert flows[1] == 2 * (1 + 3 + 9) + 1  # PE1 of node (0,0,0) -> PE1 of node (1,1,1)


@pytest.mark.parametrize(
    "name,kwargs,message",
    [
        ("bit-reversal", {"num_pes": 12}, "power-of-two"),
        ("transpose", {"num_pes": 32}, "even number of bits"),
        ("tornado", {"topology": kary_ntree(2, 2)}, "torus coordinates"),
        ("hotspot", {"num_pes": 4, "hotspot": 9}, "hotspot must be a PE index"),
        ("bit-reverse-shift", {"num_pes": 8, "shift": 0}, "shift must be in 1..8"),
        ("zipf", {"num_pes": 8}, "must be one of"),
    ],
)
def test_domains_are_refused_clearly(name, kwargs, message):
    with pytest.raises(TrafficError, match=message):
        make_traffic(name, **kwargs)


def test_every_pattern_is_documented_and_available():
    topology = ndt_torus((2, 4, 2))  # 32 PEs: power of two, 5 bits
    for name in PATTERNS:
        if name == "transpose":
            continue
        traffic = make_traffic(name, topology)
        assert traffic.src.size > 0 and np.all(traffic.src != traffic.dst)
        assert np.all(traffic.injection(32) <= 1.0 + 1e-9)
