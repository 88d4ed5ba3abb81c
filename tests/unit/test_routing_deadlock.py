"""Deadlock freedom on the channel dependency graph, and the negative controls that must be cyclic."""

from __future__ import annotations

import numpy as np
import pytest

from controller.analysis.deadlock import check_deadlock
from controller.analysis.paths import AllPairs
from controller.routing import RoutingTables, compute_tables
from controller.routing.table import QUEUE_BY_VC, USE_CODE
from topologies.portconfig import all_port_configs
from topologies.torus import ndt_torus, torus

CONTRACT_SHAPES = [(2, 4, 2), (3, 3, 3), (4, 4, 4), (5, 5, 5), (6, 6, 6), (4, 4, 2, 2, 2)]


def with_vcs(tables: RoutingTables, vc: np.ndarray, **changes) -> RoutingTables:
    """The same tables with other VCs (and optionally another queue rule)."""
    return tables.replaced(vc=vc.astype(np.int8), **changes)


def assert_real_cycle(report, tables):
    """A reported cycle is a closed chain of channels: each channel's link ends where the next one starts."""
    assert not report.deadlock_free and report.cycle
    for here, there in zip(report.cycle, report.cycle[1:] + report.cycle[:1], strict=True):
        assert here.peer_card == there.card


@pytest.mark.parametrize("dims", CONTRACT_SHAPES)
@pytest.mark.parametrize("algorithm", ["dort", "ts-dor"])
def test_contract_shapes_are_deadlock_free(dims, algorithm):
    report = check_deadlock(AllPairs(compute_tables(ndt_torus(dims), algorithm)))
    assert report.deadlock_free, report.cycle
    assert report.dependencies > 0


@pytest.mark.parametrize("config", [str(c) for c in all_port_configs(3)])
def test_dort_is_deadlock_free_for_every_3dt_configuration(config):
    tables = compute_tables(ndt_torus((4, 4, 4), config), "dort")
    assert check_deadlock(AllPairs(tables)).deadlock_free


@pytest.mark.parametrize("dims", [(3,), (4, 4), (3, 3, 3), (4, 4, 4), (4, 4, 2, 2, 2)])
def test_dort_merged_vcs_is_cyclic(dims):
    """Every internal hop on one VC: a ring arrival that ejects shares the channel a ring start takes
    (k_h = 3 already), and for even n (no split dimension) the eject channel feeds injections."""
    tables = compute_tables(ndt_torus(dims), "dort-merged-vcs")
    assert_real_cycle(check_deadlock(AllPairs(tables)), tables)


@pytest.mark.parametrize("dims", [(3, 3, 3), (4, 4), (2, 4, 2)])
def test_dort_merged_vcs_differs_from_dort_only_in_internal_vcs(dims):
    safe = compute_tables(ndt_torus(dims), "dort")
    merged = compute_tables(ndt_torus(dims), "dort-merged-vcs")
    internal = safe.link_kinds() == 2
    assert np.array_equal(merged.keys, safe.keys)
    assert np.array_equal(merged.egress_port, safe.egress_port) and np.array_equal(merged.use, safe.use)
    assert np.array_equal(merged.vc[~internal], safe.vc[~internal])
    assert set(merged.vc[internal].tolist()) == {0}
    # the safe plan's internal VCs: eject, inject (some dimension not split), a pair per split dimension
    n, split = len(dims), 1 if len(dims) % 2 else 0
    assert len(set(safe.vc[internal].tolist())) == 1 + (split < n) + 2 * split
    assert merged.vcs_per_link()["internal"] == 1


def test_dort_with_one_ring_vc_instead_of_two_is_cyclic():
    """k_h >= 4: packets go straight through d_h, so the ring needs its dateline pair on the internal link."""
    tables = compute_tables(ndt_torus((4, 4, 4)), "dort")
    ring = tables.use == USE_CODE["ring"]
    report = check_deadlock(AllPairs(with_vcs(tables, np.where(ring, 2, tables.vc))))
    assert_real_cycle(report, tables)


def test_dort_with_inject_and_eject_merged_is_cyclic():
    tables = compute_tables(ndt_torus((3, 3, 3)), "dort")
    eject = tables.use == USE_CODE["eject"]
    report = check_deadlock(AllPairs(with_vcs(tables, np.where(eject, 1, tables.vc))))
    assert_real_cycle(report, tables)


def test_dor_with_one_external_vc_is_cyclic():
    tables = compute_tables(torus((4, 4)), "dor")
    assert check_deadlock(AllPairs(tables)).deadlock_free
    report = check_deadlock(AllPairs(with_vcs(tables, np.zeros_like(tables.vc))))
    assert_real_cycle(report, tables)


@pytest.mark.parametrize("dims", [(3, 3, 3), (2, 4, 2)])
def test_ts_dor_with_its_two_classes_merged_is_cyclic(dims):
    tables = compute_tables(ndt_torus(dims), "ts-dor")
    report = check_deadlock(AllPairs(with_vcs(tables, tables.vc, queue_rule=QUEUE_BY_VC)))
    assert_real_cycle(report, tables)


# n odd and k_h >= 4: cyclic (docs/contracts.md lists 2x4x2, 4x4x4, 5x5x5, 6x6x6); k_h <= 3 or n even: acyclic
UNMIRRORED_SHAPES = [
    ((4,), True),
    ((5,), True),
    ((2, 4, 2), True),
    ((3, 4, 3), True),
    ((4, 4, 4), True),
    ((5, 5, 5), True),
    ((3,), False),
    ((3, 3, 3), False),
    ((2, 3, 2), False),
    ((4, 4), False),
    ((3, 3, 3, 3), False),
]


@pytest.mark.parametrize("dims,cyclic", UNMIRRORED_SHAPES)
def test_unmirrored_ts_dor_is_cyclic_where_k_h_is_4_or_more(dims, cyclic):
    """Part 2's rules unmirrored on d_h+ of card 0. A packet arriving over d_h+ lands on card 1 on upper
    (t_h > o_h) and crosses to PE0 or card 0's dimensions on lower, the channel that ring starts across
    the wrap take: the upper and lower rings of d_h join. Closing the cycle needs an upper ring hop on the
    internal link (a packet continuing d_h+ from a ring arrival: two hops in one direction), so k_h >= 4
    (at 4 through the d_h+ tie of PE1); with k_h <= 3 or no d_h (n even) the graph stays acyclic."""
    tables = compute_tables(ndt_torus(dims), "ts-dor-unmirrored")
    report = check_deadlock(AllPairs(tables))
    assert report.deadlock_free is not cyclic
    if cyclic:
        assert_real_cycle(report, tables)


@pytest.mark.parametrize("dims", [(3, 3, 3), (5, 3, 5), (3, 3, 3, 3)])
def test_unmirrored_ts_dor_without_ties_differs_only_in_inject_and_eject_vcs(dims):
    """k_h odd (or no d_h): no d_h tie, so the same hops; only the card-crossing VCs swap."""
    safe = compute_tables(ndt_torus(dims), "ts-dor")
    unmirrored = compute_tables(ndt_torus(dims), "ts-dor-unmirrored")
    crossing = np.isin(safe.use, [USE_CODE["inject"], USE_CODE["eject"]])
    assert np.array_equal(unmirrored.keys, safe.keys)
    assert np.array_equal(unmirrored.egress_port, safe.egress_port)
    assert np.array_equal(unmirrored.use, safe.use)
    assert np.array_equal(unmirrored.vc[~crossing], safe.vc[~crossing])
    assert np.array_equal(unmirrored.vc[crossing], 1 - safe.vc[crossing])


@pytest.mark.parametrize("dims", [(5,), (4, 3)])
def test_dor_no_dateline_is_dor_on_one_vc_and_cyclic(dims):
    safe = compute_tables(torus(dims), "dor")
    unsafe = compute_tables(torus(dims), "dor-no-dateline")
    assert unsafe.algorithm == "dor-no-dateline" and len(unsafe) == len(safe)
    assert np.array_equal(unsafe.egress_port, safe.egress_port) and not unsafe.vc.any()
    report = check_deadlock(AllPairs(unsafe))
    assert_real_cycle(report, unsafe)
    assert {channel.queue for channel in report.cycle} == {0}


def test_unsafe_variants_are_marked_and_never_a_default():
    from controller.analysis.report import analyze
    from controller.routing import UNSAFE, algorithms_for, routing_help

    assert set(UNSAFE) == {"dor-no-dateline", "ts-dor-unmirrored", "dort-merged-vcs"}
    assert algorithms_for("torus") == ["dor"] and algorithms_for("ndt") == ["dort", "ts-dor"]
    assert algorithms_for("torus", include_unsafe=True) == ["dor", "dor-no-dateline"]
    unsafe_ndt = ["ts-dor-unmirrored", "dort-merged-vcs"]
    assert set(algorithms_for("ndt", include_unsafe=True)) == {"dort", "ts-dor", *unsafe_ndt}
    for name, family in [("dor-no-dateline", "torus"), *((name, "ndt") for name in unsafe_ndt)]:
        assert f"{name} ({family}) [UNSAFE" in routing_help()
    report = analyze(compute_tables(torus((4,)), "dor-no-dateline"))
    assert report["routing"]["unsafe"].startswith("UNSAFE") and not report["deadlock_free"]
    assert analyze(compute_tables(torus((4,)), "dor"))["routing"]["unsafe"] is None
    for name in ("ts-dor-unmirrored", "dort-merged-vcs"):
        report = analyze(compute_tables(ndt_torus((2, 4, 2)), name))
        assert report["routing"]["unsafe"] == UNSAFE[name] and not report["deadlock_free"]
