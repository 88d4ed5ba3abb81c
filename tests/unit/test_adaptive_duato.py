"""Duato's condition on the adaptive tables, the paths pairs may take, and the thesis's Examples 3.1-3.5.

Examples on an 8x8x8 3DT (torus notes II §5.2). The thesis places d_h- (Y-) on
card 0; docs/contracts.md places d_h+ on card 0, so the Y direction of
Example 3.5 is mirrored here (Y+ instead of Y-); Examples 3.1-3.4 use X and Z
only and are unchanged. Hops are card-to-card links, internal ones included.
"""

from __future__ import annotations

import json
from itertools import product

import numpy as np
import pytest

from controller.analysis.duato import check_duato, path_set, path_summary
from controller.routing.adaptive import CLASS_INTERNAL, adaptive_tables
from controller.routing.selection import SELECTIONS, select
from topologies.torus import ndt_torus, torus

DIMS = (8, 8, 8)


def pe(x: int, y: int, z: int, card: int) -> int:
    """PE index of docs/contracts.md: 2 * node index + card, d0 least significant."""
    return 2 * (x + 8 * y + 64 * z) + card


def names(model, path):
    return [hop.split(":")[1] for hop in path]


def one_pair(src, dst):
    model = adaptive_tables(ndt_torus(DIMS), dsts=range(dst, dst + 1))
    return model, path_set(model, src, dst)


@pytest.mark.parametrize("dims", [(3, 3, 3), (4, 4, 4), (2, 4, 2), (4, 4), (3, 3, 2, 2)])
def test_duato_holds_for_the_adaptive_tables(dims):
    report = check_duato(adaptive_tables(ndt_torus(dims)))
    assert report.deadlock_free, report.to_json()
    assert report.direct > 0 and report.indirect == 0


@pytest.mark.parametrize("dims", [(4, 4), (5, 3), (3, 3, 3)])
def test_duato_holds_on_the_md_torus_with_dor_escape(dims):
    assert check_duato(adaptive_tables(torus(dims))).deadlock_free


@pytest.mark.parametrize(
    "topology,escape", [(torus((4, 4)), "dor-no-dateline"), (ndt_torus((3, 3, 3)), "dort-merged-vcs")]
)
def test_duato_fails_for_a_broken_escape(topology, escape):
    report = check_duato(adaptive_tables(topology, escape))
    assert not report.deadlock_free and report.cycle
    # the cycle is closed: each channel's far card is the next channel's card
    cards = [(c.split(":")[0], c.split("->")[1].split(":")[0]) for c in report.cycle]
    for (_, far), (near, _) in zip(cards, cards[1:] + cards[:1], strict=True):
        assert far == near


def test_returning_from_escape_to_adaptive_adds_indirect_dependencies():
    """Tables whose escaped packets get their adaptive candidates back (Duato's classic freedom):
    the check sees dependencies from escape channels through adaptive ones."""
    model = adaptive_tables(ndt_torus((4, 4, 4)))
    keys = list(zip(model.card_id.tolist(), model.ingress_port.tolist(), model.dst_pe.tolist(), strict=True))
    free_mask = {}
    for key, escaped, mask in zip(keys, model.escaped.tolist(), model.candidate_ports.tolist(), strict=True):
        if not escaped:
            free_mask[key[0], key[2]] = mask
    model.candidate_ports = np.array(
        [free_mask.get((k[0], k[2]), m) for k, m in zip(keys, model.candidate_ports.tolist(), strict=True)]
    )
    report = check_duato(model)
    assert report.indirect > 0


def test_a_candidate_on_an_escape_vc_breaks_the_condition():
    model = adaptive_tables(torus((4, 4)))
    model.vc_plan["external"]["adaptive"] = [1, 2]
    assert check_duato(model).shared_vcs and not check_duato(model).deadlock_free


def brute_force_paths(model, src, dst):
    """Every link sequence by depth-first search over candidate and escape ports (no memo)."""
    net = model.network
    out = []

    def go(card, in_port, trail):
        entry = model.lookup(card, in_port, dst, 0)
        if net.port_kind[card, entry.escape_port] == 3:
            out.append(tuple(trail))
            return
        for port in sorted({p for p, _ in entry.candidates} | {entry.escape_port}):
            go(int(net.peer_card[card, port]), int(net.peer_port[card, port]), trail + [(card, port)])

    go(int(net.pe_card[src]), int(net.pe_port[src]), [])
    return out


@pytest.mark.parametrize("dims,step", [((3, 3, 3), 3), ((4, 2, 4), 11)])
def test_path_counts_against_brute_force(dims, step):
    model = adaptive_tables(ndt_torus(dims))
    net = model.network
    for src, dst in product(range(0, net.num_pes, step), range(net.num_pes)):
        if src == dst:
            continue
        paths = brute_force_paths(model, src, dst)
        found = path_set(model, src, dst, limit=10_000)
        assert found.count == len(paths) == len(set(paths))
        assert found.shortest == min(map(len, paths)) and found.longest == max(map(len, paths))


def test_escape_hops_are_the_contracts_dort_average():
    summary = path_summary(adaptive_tables(ndt_torus((4, 4, 4))))
    assert summary["pairs"] == 128 * 127
    assert summary["mean_escape_hops"] == pytest.approx(4.7953, abs=5e-5)
    assert summary["mean_fewest_hops"] <= summary["mean_escape_hops"] <= summary["mean_most_hops"]


def test_examples_3_1_to_3_3_no_wandering_over_the_internal_link():
    """PE0 of <0,0,0> to <2,0,2>: the IL is no candidate while X remains, so the only path is
    X+ X+ IL Z+ Z+ (5 hops to the node's card 1, then IL to PE0); the 8-hop Z+ X+ Z+ X+ is impossible."""
    model, to_pe1 = one_pair(pe(0, 0, 0, 0), pe(2, 0, 2, 1))
    assert to_pe1.count == 1 and names(model, to_pe1.paths[0]) == ["d0+", "d0+", "int0", "d2+", "d2+"]
    source = model.lookup(0, int(model.network.pe_port[0]), pe(2, 0, 2, 1), 0)
    assert all(model.network.port_name(0, p) == "d0+" for p, _ in source.candidates)
    _, to_pe0 = one_pair(pe(0, 0, 0, 0), pe(2, 0, 2, 0))
    assert (to_pe0.count, to_pe0.shortest, to_pe0.longest) == (1, 6, 6)


def test_example_3_4_adaptive_routing_shortens_dort():
    """PE1 of <0,0,0> to <1,0,1>: DORT takes 4 hops to PE1 and 5 to PE0; Z+ first reaches PE0 in 3."""
    model, to_pe0 = one_pair(pe(0, 0, 0, 1), pe(1, 0, 1, 0))
    assert to_pe0.escape_hops == 5 and (to_pe0.shortest, to_pe0.longest, to_pe0.count) == (3, 5, 2)
    assert ["d2+", "int0", "d0+"] in [names(model, p) for p in to_pe0.paths]
    _, to_pe1 = one_pair(pe(0, 0, 0, 1), pe(1, 0, 1, 1))
    assert to_pe1.escape_hops == 4 and (to_pe1.shortest, to_pe1.longest) == (4, 4)


def test_example_3_5_the_split_dimension_first_lengthens():
    """Mirrored Ex 3.5: PE0 of <0,0,0> to <1,1,0>: X+ Y+ reaches PE1 in 2 hops, Y+ first in 4."""
    model, to_pe1 = one_pair(pe(0, 0, 0, 0), pe(1, 1, 0, 1))
    assert sorted(len(p) for p in to_pe1.paths) == [2, 4]
    assert ["d0+", "d1+"] in [names(model, p) for p in to_pe1.paths]
    _, to_pe0 = one_pair(pe(0, 0, 0, 0), pe(1, 1, 0, 0))
    assert (to_pe0.shortest, to_pe0.longest) == (3, 3)


def candidates_with_classes(model, src, dst):
    net = model.network
    card, port = int(net.pe_card[src]), int(net.pe_port[src])
    entry = model.lookup(card, port, dst, 0)
    return card, entry.candidates, [int(model.port_class[card, p]) for p, _ in entry.candidates]


def test_3_priority_takes_the_good_first_hop_of_examples_3_4_and_3_5():
    for src, dst, wanted in [
        (pe(0, 0, 0, 1), pe(1, 0, 1, 0), "d2+"),  # Ex 3.4: Z+ rather than the IL
        (pe(0, 0, 0, 0), pe(1, 1, 0, 1), "d0+"),  # Ex 3.5: X+ rather than the split dimension
    ]:
        model = adaptive_tables(ndt_torus(DIMS), dsts=range(dst, dst + 1))
        card, cands, classes = candidates_with_classes(model, src, dst)
        for start in range(len(cands)):  # whatever the round-robin pointer
            port, _ = select(cands, classes, {}, "3-priority", threshold=4, capacity=64, start=start)
            assert model.network.port_name(card, port) == wanted
        picked = {
            select(cands, classes, {}, "round-robin", threshold=4, capacity=64, start=s)[0]
            for s in range(len(cands))
        }
        assert len(picked) == len({p for p, _ in cands}) > 1  # round-robin also takes the bad one


def test_selection_levels_and_occupancy_ranges():
    cands = [(1, 2), (1, 3), (2, 2), (4, 4), (4, 5)]
    classes = [0, 0, 1, 2, 2]
    full = {c: 64 for c in cands}
    high = {c: 10 for c in cands}
    # low beats high within a level; a level beats occupancy
    occ = {(1, 2): 10, (1, 3): 10, (2, 2): 0, (4, 4): 0, (4, 5): 0}
    assert select(cands, classes, occ, "3-priority", threshold=4, capacity=64) == (1, 2)
    assert select(cands, classes, occ, "round-robin", threshold=4, capacity=64) == (2, 2)
    assert select(cands, classes, occ, "2-priority", threshold=4, capacity=64) == (2, 2)
    # 2-priority: the IL only when nothing else is available
    occ = {**full, (4, 4): 10}
    assert select(cands, classes, occ, "2-priority", threshold=4, capacity=64) == (4, 4)
    assert select(cands, classes, occ, "no-internal", threshold=4, capacity=64) is None
    assert select(cands, classes, full, "round-robin", threshold=4, capacity=64) is None
    assert select(cands, classes, high, "3-priority", threshold=4, capacity=64, start=1) == (1, 3)
    for name in SELECTIONS:
        assert select([], [], {}, name, threshold=4, capacity=64) is None
    assert CLASS_INTERNAL == 2


@pytest.mark.parametrize("escape,free", [(None, True), ("dort-merged-vcs", False)])
def test_analyze_command_reports_duato(capsys, escape, free):
    from emulation.cli import main

    args = [
        "analyze",
        "ndt",
        "--dims",
        "3x3x3",
        "--routing",
        "adaptive",
        "--selection",
        "3-priority",
        "--json",
    ]
    assert main(args + (["--escape", escape] if escape else [])) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["deadlock_free"] is free and report["duato"]["deadlock_free"] is free
    assert report["routing"]["selection_levels"] == {"external": 0, "split": 1, "internal": 2}
    assert report["paths"]["pairs"] == 54 * 53
    assert report["queues_per_port"] == (8 if escape is None else 5)  # merged: 1 escape + 4 adaptive


def test_analyze_command_refuses_bad_adaptive_input(capsys):
    from emulation.cli import main

    base = ["analyze", "ndt", "--dims", "3x3x3", "--routing", "adaptive"]
    for extra, words in [
        (["--selection", "fastest"], "selection must be one of"),
        (["--escape", "ts-dor"], "escape routing must be one of"),
        (["--pair", "3", "3"], "two different PEs"),
    ]:
        assert main(base + extra) != 0
        assert words in capsys.readouterr().err
    assert main(["analyze", "fattree", "--k", "2", "--n", "2", "--routing", "adaptive"]) != 0
    assert "nDT tori and mD tori" in capsys.readouterr().err
