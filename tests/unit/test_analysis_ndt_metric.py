"""nDT internal-link counts and CBest's optimality.

Andujar thesis: Table 1.1; nDT paper, Prop 3.1-3.4 and R_CBest.
"""

from __future__ import annotations

import pytest

from controller.analysis.metrics import dor_transit_port_pairs, transit_crossings
from controller.analysis.paths import AllPairs
from controller.routing import compute_tables
from topologies.portconfig import all_port_configs, cbest, parse_port_config
from topologies.torus import ndt_torus

#: torus notes I §2.6: per configuration (card 0 | card 1), k = 3, 4, 5, 6, 7, 8
TABLE_3DT = {
    "X+X-Y+|Y-Z+Z-": (16, 49, 146, 289, 582, 961),
    "X+X-Y-|Y+Z+Z-": (16, 73, 146, 349, 582, 1073),
    "X+X-Z+|Y+Y-Z-": (20, 79, 178, 394, 690, 1213),
    "X+X-Z-|Y+Y-Z+": (20, 70, 178, 369, 690, 1164),
    "X+Y+Y-|X-Z+Z-": (20, 79, 178, 394, 690, 1213),
    "X+Z+Z-|X-Y+Y-": (20, 70, 178, 369, 690, 1164),
    "X+Y+Z+|X-Y-Z-": (14, 93, 238, 601, 1152, 2153),
    "X+Y+Z-|X-Y-Z+": (14, 88, 238, 594, 1152, 2144),
    "X+Y-Z+|X-Y+Z-": (14, 85, 238, 589, 1152, 2137),
    "X+Y-Z-|X-Y+Z+": (14, 88, 238, 594, 1152, 2144),
}
TRANSIT_3DT = (28, 129, 326, 757, 1422, 2561)


def crossings(dims, config) -> int:
    return transit_crossings(dor_transit_port_pairs(dims), config.card_of)


@pytest.mark.parametrize("column,k", list(enumerate((3, 4, 5, 6, 7))))
def test_3dt_table_for_every_configuration(column, k):
    histogram = dor_transit_port_pairs((k, k, k))
    assert sum(histogram.values()) == TRANSIT_3DT[column]
    for text, values in TABLE_3DT.items():
        assert transit_crossings(histogram, parse_port_config(text, 3).card_of) == values[column], text


def prop_3_1_closed_form(k: int, n: int, card_of) -> int:
    """Torus notes I §2.6 (odd k): sum over port pairs on different cards of Prop 3.1's R_{P->P'}."""
    total = 0
    ports = [(i, s) for i in range(n) for s in (1, -1)]
    for into in ports:
        for out in ports:
            i, j = into[0], out[0]
            if card_of(*into) == card_of(*out):
                continue
            if i < j:
                total += (k - 1) ** 2 * k ** (n - 1 + i - j) // 4
            elif i == j and into != out:
                total += (k - 1) * (k - 3) * k ** (n - 1) // 8
    return total


@pytest.mark.parametrize("n,k", [(3, 3), (3, 5), (3, 7), (4, 3), (4, 5), (5, 3)])
def test_every_configuration_matches_prop_3_1(n, k):
    histogram = dor_transit_port_pairs((k,) * n)
    for config in all_port_configs(n):
        assert transit_crossings(histogram, config.card_of) == prop_3_1_closed_form(k, n, config.card_of)


def r_cbest(n: int, k: int) -> int:
    """Prop 3.4 (odd k) and its even-k variant with d_h+ on card 0 (torus notes I §2.7)."""
    if n % 2 == 0:
        return (k ** (n // 2) - 1) ** 2
    m = (n - 1) // 2
    if k % 2:
        return (k ** (m + 1) - 1) * (k**m - 1) + (k - 1) * (k - 3) * k ** (n - 1) // 4
    return (k**m - 1) * ((k - 1) * k**m - 1) + ((k - 2) // 2) ** 2 * k ** (n - 1)


@pytest.mark.parametrize(
    "n,k,expected",
    [
        (3, 3, 16),
        (3, 4, 49),
        (3, 5, 146),
        (4, 3, 64),
        (4, 4, 225),
        (4, 5, 576),
        (5, 3, 208),
        (5, 4, 961),
        (5, 5, 4226),
        (6, 3, 676),
    ],
)
def test_r_cbest(n, k, expected):
    assert r_cbest(n, k) == expected
    assert crossings((k,) * n, cbest(n)) == expected


@pytest.mark.parametrize("n,k", [(3, 5), (3, 7), (4, 5), (5, 5)])
def test_cbest_is_optimal_over_all_configurations(n, k):
    """Theorem 3.1 for odd k >= 5: from one source by translation symmetry, one histogram for all configs."""
    histogram = dor_transit_port_pairs((k,) * n)
    values = {str(c): transit_crossings(histogram, c.card_of) for c in all_port_configs(n)}
    best = transit_crossings(histogram, cbest(n).card_of)
    assert best == min(values.values())
    optima = [text for text, value in values.items() if value == best]
    assert len(optima) == (2 if n % 2 else 1)


def test_k3_exception_of_the_thesis():
    """k = 3, n = 3: the all-split (SC0) configurations beat CBest, 14 against 16."""
    histogram = dor_transit_port_pairs((3, 3, 3))
    assert min(transit_crossings(histogram, c.card_of) for c in all_port_configs(3)) == 14


def node_transit_crossings_from_tables(tables) -> int:
    """PE-level paths crossing node 0's internal link while passing through it, over the 4 PE pairs."""
    pairs = AllPairs(tables)
    net = tables.network
    count = 0
    for index in range(pairs.num_paths):
        src_node, dst_node = int(pairs.src[index]) // 2, int(pairs.dst[index]) // 2
        if 0 in (src_node, dst_node):
            continue
        for e in pairs.path_entries(index):
            card, port = int(tables.card_id[e]), int(tables.egress_port[e])
            if card // 2 == 0 and net.port_kind[card, port] == 2:
                count += 1
    assert count % 4 == 0
    return count // 4


@pytest.mark.parametrize("config", list(TABLE_3DT))
def test_dort_tables_reproduce_the_node_level_count(config):
    tables = compute_tables(ndt_torus((3, 3, 3), config), "dort")
    assert node_transit_crossings_from_tables(tables) == TABLE_3DT[config][0]


@pytest.mark.parametrize("config", ["X+X-Y+|Y-Z+Z-", "X+Y+Z+|X-Y-Z-"])
def test_dort_tables_reproduce_table_1_1_at_k4(config):
    tables = compute_tables(ndt_torus((4, 4, 4), config), "dort")
    assert node_transit_crossings_from_tables(tables) == TABLE_3DT[config][1]
