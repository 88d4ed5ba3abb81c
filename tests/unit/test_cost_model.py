"""Minkenberg 2010's fat-tree cost model: exact counts, integer levels, optimum radix, Table I, bad input.

Expected values are the paper's own figures and the notes' recomputations
(BvN-radix notes §3.2-3.5, §3.7).
"""

import math

import pytest

from topologies.cost import (
    TABLE_I,
    TABLE_I_PRINTED,
    CostModelError,
    check_costs,
    check_radix,
    discrete_optimum,
    inter_switch_links,
    inter_switch_links_double,
    levels,
    levels_double,
    optimum_equation,
    optimum_radix,
    optimum_radix_b_estimate,
    optimum_radix_b_only,
    optimum_radix_lambert,
    parse_sweep,
    smoothed_cost,
    switches,
    switches_double,
    tree_cost,
)

# -- integer levels where floating-point logarithms fail -------------------------------------------


@pytest.mark.parametrize(("radix", "nodes", "expected"), [(10, 125, 3), (12, 216, 3), (50, 15625, 3),
                                                         (72, 46656, 3)])
def test_levels_of_the_spec_float_pitfalls(radix: int, nodes: int, expected: int) -> None:
    k = radix // 2
    assert math.ceil(math.log(nodes) / math.log(k)) == expected + 1  # the pitfall is real here
    assert levels(radix, nodes) == expected


def test_every_exact_power_gets_its_exponent_including_the_21_float_failures() -> None:
    failures = 0
    for radix in range(4, 200, 2):
        k = radix // 2
        for exponent in range(1, 6):
            nodes = k**exponent
            assert levels(radix, nodes) == exponent
            assert levels(radix, nodes + 1) == exponent + 1
            if math.ceil(math.log(nodes) / math.log(k)) != exponent:
                failures += 1
    assert failures == 21  # BvN-radix notes §3.7: 21 (r, n) cases for even r < 200, n = (r/2)^l, l <= 5


def test_double_sized_levels_use_integers_too() -> None:
    # n = r * k^e exactly: log(n/r)/log(k) can round above e
    for radix in (10, 12, 50, 72):
        k = radix // 2
        for exponent in range(0, 4):
            assert levels_double(radix, radix * k**exponent) == 1 + exponent


# -- exact costs (BvN-radix notes §3.3 examples) ---------------------------------------------------


@pytest.mark.parametrize(
    ("radix", "nodes", "a", "b", "counts", "cost"),
    [
        (4, 16, 10, 100, (4, 32, 48), 4192),  # binary 4-tree of Fig. 1(b)
        (16, 4096, 10, 100, (4, 2048, 12288), 851_968),
        (8, 512, 1, 1, (5, 640, 2048), 43_648),
    ],
)
def test_exact_cost_examples(radix, nodes, a, b, counts, cost) -> None:
    assert (levels(radix, nodes), switches(radix, nodes), inter_switch_links(radix, nodes)) == counts
    assert tree_cost(radix, nodes, a, b) == cost


def test_cost_row_for_1024_nodes() -> None:
    expected = {4: 686_080, 8: 250_880, 12: 197_616, 16: 212_992, 20: 236_720, 24: 194_888, 32: 236_288,
                64: 278_784}
    assert {r: tree_cost(r, 1024, 10, 100) for r in expected} == expected


def test_single_switch_at_radix_2n() -> None:
    assert (levels(32, 16), switches(32, 16), inter_switch_links(32, 16)) == (1, 1, 0)
    assert tree_cost(32, 16, 10, 100) == 32 * 32 + 100


@pytest.mark.parametrize(("radix", "nodes", "expected"), [(4, 8, (2, 6, 8)), (4, 32, (4, 56, 96)),
                                                          (8, 128, (3, 80, 256))])
def test_double_sized_counts(radix, nodes, expected) -> None:
    assert levels_double(radix, nodes) == expected[0]
    assert switches_double(radix, nodes) == expected[1]
    assert inter_switch_links_double(radix, nodes) == expected[2]


# -- smoothed model and optimum radix --------------------------------------------------------------

SMOOTHED_OPTIMA = {  # BvN-radix notes §3.3 test vectors: rows a, columns b
    1: [6.23, 8.24, 16.86, 44.31, 127.88],
    10: [9.48, 10.84, 18.42, 45.28, 128.55],
    100: [29.59, 30.00, 33.66, 55.26, 135.38],
    1000: [150.56, 150.63, 151.36, 158.35, 210.33],
    10000: [965.37, 965.38, 965.49, 966.57, 977.27],
}


@pytest.mark.parametrize("a", sorted(SMOOTHED_OPTIMA))
def test_smoothed_optimum_table(a: int) -> None:
    for b, expected in zip([1, 10, 100, 1000, 10000], SMOOTHED_OPTIMA[a], strict=True):
        root = optimum_radix(a, b)
        assert root == pytest.approx(expected, abs=0.006)
        assert abs(optimum_equation(root, a, b)) < 1e-6 * root * root


def test_lambert_closed_form_for_b_zero() -> None:
    for a, expected in zip([1, 10, 100, 1000, 10000], [5.92, 9.30, 29.54, 150.55, 965.37], strict=True):
        assert optimum_radix_lambert(a) == pytest.approx(expected, abs=0.006)
        assert optimum_radix(a, 0) == pytest.approx(optimum_radix_lambert(a), rel=1e-9)
    assert optimum_radix_lambert(0) == pytest.approx(2 * math.e)  # a = b = 0


def test_a_zero_optimum_and_its_crude_estimate() -> None:
    for b, expected in zip([1, 10, 100, 1000, 10000], [5.78, 7.93, 16.68, 44.21, 127.81], strict=True):
        root = optimum_radix_b_only(b)
        assert root == pytest.approx(expected, abs=0.006)
        log_half = math.log(root / 2)
        assert root**2 * (log_half - 1) / (log_half + 1) == pytest.approx(b)  # eq. 16
    assert optimum_radix_b_estimate(100) == pytest.approx(12.2, abs=0.01)


def test_smoothed_cost_is_exact_at_powers_and_underestimates_elsewhere() -> None:
    assert smoothed_cost(16, 4096, 10, 100) == pytest.approx(851_968)
    assert smoothed_cost(24, 1024, 10, 100) < tree_cost(24, 1024, 10, 100)
    # the relative error 1 - Ĉ/C peaks at r = 2(n-1), near 0.75
    error = 1 - smoothed_cost(2046, 1024, 10, 100) / tree_cost(2046, 1024, 10, 100)
    assert error == pytest.approx(0.75, abs=0.002)


@pytest.mark.parametrize(("nodes", "radix", "cost"), [(256, 14, 37_976), (1024, 22, 185_168),
                                                      (4096, 16, 851_968), (65536, 20, 19_006_440)])
def test_discrete_optimum_see_saw(nodes: int, radix: int, cost: int) -> None:
    best = discrete_optimum(nodes, 10, 100)
    assert (best.design.radix, best.total_cost) == (radix, cost)


def test_discrete_search_stops_early_without_missing_the_minimum() -> None:
    for nodes in (2, 3, 17, 100, 300):
        exhaustive = min(range(4, 2 * nodes + 1, 2), key=lambda r: (tree_cost(r, nodes, 1000, 5), r))
        assert discrete_optimum(nodes, 1000, 5).design.radix == exhaustive
    huge = discrete_optimum(2**60, 10, 100)  # returns quickly: the bound r n / 2 ends the search
    assert 4 <= huge.design.radix < 100


# -- Table I ---------------------------------------------------------------------------------------


def test_table_i_recomputed_from_its_inputs() -> None:
    low, high = TABLE_I["low-end"], TABLE_I["high-end"]
    assert (low.bits_per_crosspoint, high.bits_per_crosspoint) == (4096, 40960)
    assert (low.fets_per_crosspoint, high.fets_per_crosspoint) == (24576, 245760)
    assert low.crosspoint_cost == pytest.approx(4.9e-4, rel=0.01)
    assert high.crosspoint_cost == pytest.approx(4.9e-3, rel=0.01)
    assert (low.overhead_cost, high.overhead_cost) == (pytest.approx(4e-3), pytest.approx(8e-3))
    assert low.a == pytest.approx(810, rel=0.01) and high.a == pytest.approx(5100, rel=0.01)
    assert high.b == pytest.approx(1.63, rel=0.01)
    # the printed low-end b (16.3) uses the un-doubled crosspoint cost; consistently it is 8.14
    assert low.b == pytest.approx(8.14, abs=0.01)
    assert low.b * low.control_factor == pytest.approx(16.3, abs=0.05)


def test_table_i_optimum_radices() -> None:
    assert optimum_radix(*TABLE_I_PRINTED["low-end"]) == pytest.approx(128.3, abs=0.05)  # paper: ~130
    assert optimum_radix(*TABLE_I_PRINTED["high-end"]) == pytest.approx(551.9, abs=0.05)  # paper: ~550
    # from the inputs (a = 813.8, consistent b = 8.14): spec's 128.7; high end 550.7, still "~550"
    low, high = TABLE_I["low-end"], TABLE_I["high-end"]
    assert optimum_radix(low.a, low.b) == pytest.approx(128.7, abs=0.05)
    assert optimum_radix(high.a, high.b) == pytest.approx(550, abs=1)


# -- bad input -------------------------------------------------------------------------------------


@pytest.mark.parametrize("nodes", [1, 0, -5, 2.5, True, "16"])
def test_too_few_or_non_integer_nodes(nodes) -> None:
    with pytest.raises(CostModelError, match="end nodes"):
        levels(4, nodes)


@pytest.mark.parametrize(("radix", "message"), [(2, "range 4..32"), (34, "range 4..32"), (7, "odd"),
                                                (8.0, "integer")])
def test_radix_outside_the_model(radix, message) -> None:
    with pytest.raises(CostModelError, match=message):
        check_radix(radix, 16)


def test_double_sized_range_ends_at_n() -> None:
    check_radix(16, 16, "double")
    with pytest.raises(CostModelError, match="range 4..16"):
        check_radix(18, 16, "double")
    with pytest.raises(CostModelError, match="no radix"):
        discrete_optimum(3, 10, 100, shape="double")


@pytest.mark.parametrize("value", [-1, float("nan"), float("inf"), "3"])
def test_bad_costs(value) -> None:
    with pytest.raises(CostModelError, match="cost parameter a"):
        check_costs(a=value)
    with pytest.raises(CostModelError):
        optimum_radix(10, value)


def test_sweeps() -> None:
    assert parse_sweep("4:10", 8) == [4, 6, 8, 10]
    assert parse_sweep("4:16:4", 8) == [4, 8, 12, 16]
    for text, message in [("4:64", "beyond"), ("2:8", "beyond"), ("5:9", "even"), ("4:8:3", "even"),
                          ("8:4", "empty"), ("4", "START:STOP"), ("a:b", "integers")]:
        with pytest.raises(CostModelError, match=message):
            parse_sweep(text, 16)
    with pytest.raises(CostModelError, match="more than"):
        parse_sweep(f"4:{2 * 10**9}", 10**9)
