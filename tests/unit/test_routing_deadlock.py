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


@pytest.mark.parametrize("dims", [(4, 4, 4), (3, 3, 3)])
def test_dort_with_a_single_internal_vc_is_cyclic(dims):
    tables = compute_tables(ndt_torus(dims), "dort")
    internal = tables.link_kinds() == 2
    report = check_deadlock(AllPairs(with_vcs(tables, np.where(internal, 0, tables.vc))))
    assert_real_cycle(report, tables)


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


@pytest.mark.parametrize("dims,cyclic", [((2, 4, 2), True), ((4, 4, 4), True), ((3, 3, 3), False)])
def test_unmirrored_ts_dor_rules_are_cyclic_where_the_contracts_say(dims, cyclic):
    """Part 2's inject/eject VCs (0->1 upper, 1->0 lower) with d_h+ on card 0: cyclic once k_h >= 4."""
    tables = compute_tables(ndt_torus(dims), "ts-dor")
    crossing = np.isin(tables.use, [USE_CODE["inject"], USE_CODE["eject"]])
    report = check_deadlock(AllPairs(with_vcs(tables, np.where(crossing, 1 - tables.vc, tables.vc))))
    assert report.deadlock_free is not cyclic


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

    assert "dor-no-dateline" in UNSAFE and "dor-no-dateline" not in algorithms_for("torus")
    assert algorithms_for("torus", include_unsafe=True) == ["dor", "dor-no-dateline"]
    assert "dor-no-dateline (torus) [UNSAFE" in routing_help()
    report = analyze(compute_tables(torus((4,)), "dor-no-dateline"))
    assert report["routing"]["unsafe"].startswith("UNSAFE") and not report["deadlock_free"]
    assert analyze(compute_tables(torus((4,)), "dor"))["routing"]["unsafe"] is None
