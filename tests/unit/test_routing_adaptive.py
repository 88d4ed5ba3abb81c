"""Adaptive tables against a scalar Algorithm 1 written from the notes (torus notes II §5.3, Appendix A).

The reference below works on node coordinates and port names only: the thesis's
Algorithm 1 with the CBest placement of docs/contracts.md (d_h+ on card 0, d_h-
on card 1: the thesis's placement mirrored), DORT of Appendix A with ties going +
as the escape, and the VC plan of the thesis's Table 3.
"""

from __future__ import annotations

from itertools import product

import pytest

from controller.routing.adaptive import adaptive_tables
from topologies.portconfig import all_port_configs
from topologies.torus import ndt_torus, torus


def direction(c: int, t: int, k: int) -> str:
    """'none', '+', '-' or 'tie' (both directions minimal)."""
    off = (t - c) % k
    if off == 0:
        return "none"
    if 2 * off < k:
        return "+"
    if 2 * off > k:
        return "-"
    return "tie"


def reference(dims, held, node, card, target, target_card, twin=True):
    """(escape port name, escape VC, {(adaptive port name, VC)}) of Algorithm 1 with a DORT/DOR escape.

    `held[(i, s)]` is the card holding port d_i^s (s = +1 or -1).
    """
    n = len(dims)
    split = [i for i in range(n) if held[i, 1] != held[i, -1]]
    escape = None
    for i in range(n):
        d = direction(node[i], target[i], dims[i])
        if d == "none":
            continue
        s = -1 if d == "-" else +1  # ties go +
        vc = 0 if target[i] > node[i] else 1
        if held[i, s] == card:
            escape = (f"d{i}{'+' if s > 0 else '-'}", vc)
        elif i in split:
            escape = ("int0", 1 + (len(split) < n) + 2 * split.index(i) + vc)  # eject, inject, ring pairs
        else:
            escape = ("int0", 1)
        break
    if escape is None:
        escape = ("pe", 0) if target_card == card else ("int0", 0)
    adaptive = set()
    for i in range(n):
        d = direction(node[i], target[i], dims[i])
        for s, sign in ((+1, "+"), (-1, "-")):
            if d in (sign, "tie") and held[i, s] == card:
                adaptive |= {(f"d{i}{sign}", 2), (f"d{i}{sign}", 3)}
    if twin and escape[0] == "int0":
        first = 2 * len(split) + 1 + (len(split) < n)
        adaptive |= {("int0", vc) for vc in range(first, first + 4)}
    return escape[0], escape[1], adaptive


def check_against_reference(topology, dims, held, twin=True):
    model = adaptive_tables(topology)
    net = model.network
    twins = {name: t for t in topology.twins.values() for name in t.cards}
    pe_place = {
        h.pe: (tuple(twins[h.card].coords), int(net.side[net.card_id_of_name[h.card]]))
        for h in topology.hosts
    }
    seen = 0
    for entry in model.entries():
        name = net.card_names[entry.card_id]
        node, card = tuple(twins[name].coords), int(net.side[entry.card_id])
        target, target_card = pe_place[entry.dst_pe]
        esc_name, esc_vc, adaptive = reference(dims, held, node, card, target, target_card, twin)
        assert net.port_name(entry.card_id, entry.escape_port) == esc_name
        assert entry.escape_vc == esc_vc
        got = {(net.port_name(entry.card_id, port), vc) for port, vc in entry.candidates}
        assert got == (adaptive if entry.escaped == 0 else set()), (entry, adaptive)
        seen += 1
    return model, seen


def cbest_held(n):
    h = (n - 1) // 2
    held = {}
    for i in range(n):
        for s in (1, -1):
            if n % 2 == 0:
                held[i, s] = 0 if i < n // 2 else 1
            else:
                held[i, s] = 0 if i < h else 1 if i > h else (0 if s > 0 else 1)
    return held


@pytest.mark.parametrize("dims", [(3, 3, 3), (4, 4, 4), (2, 4, 2), (4, 4), (2, 3, 2, 3), (2, 2, 3, 2, 2)])
def test_candidates_follow_algorithm_1(dims):
    model, seen = check_against_reference(ndt_torus(dims), dims, cbest_held(len(dims)))
    assert seen == len(model) > 0


@pytest.mark.parametrize("config", [str(c) for c in all_port_configs(3)][:6])
def test_candidates_follow_algorithm_1_on_other_configurations(config):
    held = {}
    for card, text in enumerate(config.split("|")):
        for i in range(3):
            for sign, s in (("+", 1), ("-", -1)):
                if f"d{i}{sign}" in text:
                    held[i, s] = card
    check_against_reference(ndt_torus((3, 3, 3), config), (3, 3, 3), held)


@pytest.mark.parametrize("dims", [(4, 4), (3, 5), (2, 4, 3)])
def test_torus_candidates_are_every_minimal_port_with_dor_escape(dims):
    held = {(i, s): 0 for i in range(len(dims)) for s in (1, -1)}
    check_against_reference(torus(dims), dims, held, twin=False)


def test_vc_plan_fits_eight_queues_on_cbest():
    for dims in [(4, 4, 4), (4, 4), (4, 4, 2, 2, 2)]:
        model = adaptive_tables(ndt_torus(dims), dsts=range(0, 1))
        assert model.queues_per_port() <= 8
        internal = model.vc_plan["internal"]
        assert not set(internal["escape"]) & set(internal["adaptive"])
        assert len(model.vc_plan["external"]["escape"] + model.vc_plan["external"]["adaptive"]) == 4


def test_escaped_states_hold_to_the_escape_and_every_source_has_an_entry():
    dims = (3, 3, 3)
    model = adaptive_tables(ndt_torus(dims))
    net = model.network
    for src, dst in product(range(net.num_pes), repeat=2):
        if src != dst:
            entry = model.lookup(int(net.pe_card[src]), int(net.pe_port[src]), dst, 0)
            assert entry is not None
    assert all(not e.candidates for e in model.entries() if e.escaped)
