"""DORT on nDT tori (any port configuration): node-level DOR, crossing the internal link to the port's card.

Andujar thesis, DORT and nDT papers (torus notes I §3.1-3.4, torus notes II §3) with the uses named
as docs/contracts.md names them:

    for i in 0 .. n-1:                         # ascending dimension order
        s = ring_direction(o_i, t_i, k_i)      # ties go +
        if s == 0: continue
        if card_of(d_i^s) == this card: return d_i^s, upper if t_i > o_i else lower
        if i is a split dimension:  return internal link, use "ring",   VC ring_i upper/lower (same rule)
        else:                       return internal link, use "inject", VC inject
    if the destination PE is on this card: return PE port
    return internal link, use "eject", VC eject

Internal-link VCs: eject = 0, inject = 1 (only if some dimension is not split),
then one upper/lower pair per split dimension in ascending order. With CBest
that is 0, 1, 2, 3 for odd n (the EXTOLL paper's numbering: VC0 to the
neighbour PE, VC1 type 1, VC2/VC3 the ring pair) and 2 VCs for even n; with s
split dimensions it is 2s + 1 + [s < n] (SC0 3DT: 7).

``dort-merged-vcs`` is the same routing with every internal-link hop (eject,
inject and ring) on one VC, 0; external and host links keep their VCs. Packets
that end their trip on the internal link (eject) then share a channel with those
that start or continue on it, and a split dimension's ring loses its dateline on
the internal link: the dependency graph has cycles (3x3x3 already), so it can
deadlock on lossless links. It exists to show that (unsafe, controller.routing.registry).
"""

from __future__ import annotations

import numpy as np

from controller.routing.builder import TableSpec, table_spec
from controller.routing.errors import UnsupportedTopologyError
from controller.routing.network import CardNetwork
from controller.routing.table import USE_CODE, RoutingTables
from controller.routing.torus_view import LOWER, UPPER, TorusView, decide_by_move, port_of_move


def internal_vc_plan(n: int, split: tuple[int, ...]) -> tuple[dict[str, int], dict[int, str]]:
    """DORT's internal-link VC numbers: ({'eject': 0, 'inject': 1, 'ring d1': 2, ...}, names by VC).

    >>> internal_vc_plan(3, (1,))[0]
    {'eject': 0, 'inject': 1, 'ring d1': 2}
    >>> len(internal_vc_plan(3, (0, 1, 2))[1])
    7
    """
    plan = {"eject": 0}
    if len(split) < n:
        plan["inject"] = 1
    next_vc = len(plan)
    for i in split:
        plan[f"ring d{i}"] = next_vc
        next_vc += 2
    names = {}
    for use, vc in plan.items():
        if use.startswith("ring"):
            names[vc], names[vc + 1] = f"{use} upper", f"{use} lower"
        else:
            names[vc] = use
    return plan, names


#: VC of every internal-link hop in dort-merged-vcs
MERGED_INTERNAL_VC = 0


def dort_spec(network: CardNetwork) -> TableSpec:
    """TableSpec of the DORT tables for an nDT torus with any port configuration (same at every node)."""
    return _dort_spec(network, merged=False)


def dort_merged_vcs_spec(network: CardNetwork) -> TableSpec:
    """DORT with all its internal-link VCs merged into one (VC 0): cyclic dependencies (unsafe)."""
    return _dort_spec(network, merged=True)


def _dort_spec(network: CardNetwork, *, merged: bool) -> TableSpec:
    name = "dort-merged-vcs" if merged else "dort"
    if network.topology.family != "ndt":
        raise UnsupportedTopologyError(
            f"{name} routes nDT twin tori (family ndt); this is a {network.topology.family!r} topology"
            + (": use dor" if network.topology.family == "torus" else "")
        )
    view = TorusView(network)
    split = view.split_dimensions
    plan, internal_names = internal_vc_plan(view.n, split)
    ring_vc = np.zeros(view.n, dtype=np.int64)
    for i in split:
        ring_vc[i] = plan[f"ring d{i}"]

    def decision(
        cards: np.ndarray, dim: np.ndarray, direction: np.ndarray, ring: np.ndarray, at_home: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(egress, VC, use) on `cards` for DOR's next move (``move_code``) and, where the packet is at
        the destination node, whether the destination PE is on this card."""
        port, holder = port_of_move(view, cards, dim, direction)
        side = view.side[cards].astype(np.int8)
        arrived = dim < 0
        local = holder == side  # holder is -1 where arrived
        # default: cross the internal link to inject into a dimension the other card holds; each
        # choice below is a select (np.where) over the grid
        egress = np.where(local, port, view.internal_port[cards].astype(np.int16))
        vc = np.where(local, ring, np.int8(plan.get("inject", 0)))
        use = np.where(local, np.int8(USE_CODE["external"]), np.int8(USE_CODE["inject"]))
        # the internal link is part of a split dimension's ring: that dimension's upper/lower pair
        for i in split:
            ring_hop = (dim == i) & ~local
            vc = np.where(ring_hop, ring + np.int8(ring_vc[i]), vc)
            use = np.where(ring_hop, np.int8(USE_CODE["ring"]), use)
        # arrived: deliver, or eject to the other card's PE
        vc = np.where(arrived, np.where(at_home, np.int8(0), np.int8(plan["eject"])), vc)
        arrival_use = np.where(at_home, np.int8(USE_CODE["deliver"]), np.int8(USE_CODE["eject"]))
        use = np.where(arrived, arrival_use, use)
        egress = np.where(at_home, view.pe_port[cards].astype(np.int16), egress)
        if merged:
            vc = np.where(egress == view.internal_port[cards], np.int8(MERGED_INTERNAL_VC), vc)
        return egress, vc, use

    by_move = decide_by_move(view, decision)

    def decide(cards: np.ndarray, dsts: np.ndarray, routing_class: int):
        return by_move(cards, dsts, range(view.n), {})

    if merged:
        merged_uses = ", ".join(internal_names.values())
        internal_names = {MERGED_INTERNAL_VC: f"the only internal VC ({merged_uses})"}
    vc_names = {
        "external": {UPPER: "upper (t_i > o_i)", LOWER: "lower (t_i <= o_i)"},
        "internal": internal_names,
        "host": {0: "deliver"},
    }
    notes = [
        f"port configuration {view.config_text()}, split dimensions {list(split)}",
        "ties (k_i even, distance k_i/2) go + in every dimension",
        f"internal-link VCs: {len(internal_names)}",
    ]
    if merged:
        notes.append("UNSAFE: internal-link VCs merged into one: cyclic dependencies")
    return table_spec(name, network, decide, vc_names=vc_names, notes=notes)


def dort_tables(network: CardNetwork) -> RoutingTables:
    """DORT tables for an nDT torus with any port configuration (same at every node)."""
    return dort_spec(network).build()
