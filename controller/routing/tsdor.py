"""TS-DOR (Twin-Source DOR; Andujar thesis, EXTOLL paper) on nDT tori with CBest, mirrored per contracts.md.

The routing class is the source PE's card (PE0 -> class 0, PE1 -> class 1),
set by the first card and never changed. Class 0 corrects dimensions
d0 .. d(n-1), class 1 d(n-1) .. d0. With CBest's split dimension h = (n-1)/2
placed d_h+ on card 0 and d_h- on card 1 (the project's convention), the
spec's rules (written for d_h- on card 0) are mirrored:

    order = 0..n-1 if class == 0 else n-1..0
    for i in order:
        tie = (+1 if class == 0 else -1) if i == h else +1
        s = ring_direction(o_i, t_i, k_i, tie)
        if s == 0: continue
        if card_of(d_i^s) == this card: return d_i^s, upper if t_i > o_i else lower
        if i == h: return internal link, use "ring",   upper if t_h > o_h else lower
        return internal link, use "inject", lower if this card is 0 else upper
    if the destination PE is on this card: return PE port
    return internal link, use "eject", lower if this card is 0 else upper

VCs are upper = 0 and lower = 1 on every link; the queue is 2*class + vc, so
every port needs 4 queues.

``ts-dor-unmirrored`` applies spec part 2's rules as written (for d_h- on card 0)
to this placement: class 0 breaks a d_h tie towards d_h-, class 1 towards d_h+,
and inject/eject hops use upper going card 0 -> 1, lower going 1 -> 0; ring hops
and external links are unchanged. Its dependency graph is cyclic once k_h >= 4
(docs/contracts.md); it exists to show deadlock (unsafe, controller.routing.registry).
"""

from __future__ import annotations

import numpy as np

from controller.routing.builder import TableSpec, table_spec
from controller.routing.errors import UnsupportedTopologyError
from controller.routing.network import CardNetwork
from controller.routing.table import QUEUE_BY_CLASS_AND_VC, USE_CODE, RoutingTables
from controller.routing.torus_view import LOWER, UPPER, TorusView, decide_by_move, port_of_move
from topologies.portconfig import cbest


def tsdor_spec(network: CardNetwork) -> TableSpec:
    """TableSpec of the TS-DOR tables for an nDT torus whose port configuration is CBest."""
    return _tsdor_spec(network, mirrored=True)


def tsdor_unmirrored_spec(network: CardNetwork) -> TableSpec:
    """TS-DOR with part 2's tie and inject/eject VCs unmirrored on CBest: cyclic once k_h >= 4 (unsafe)."""
    return _tsdor_spec(network, mirrored=False)


def _tsdor_spec(network: CardNetwork, *, mirrored: bool) -> TableSpec:
    name = "ts-dor" if mirrored else "ts-dor-unmirrored"
    if network.topology.family != "ndt":
        raise UnsupportedTopologyError(
            f"{name} routes nDT twin tori with CBest; this is a {network.topology.family!r} topology"
        )
    view = TorusView(network)
    best = cbest(view.n)
    if view.config_text() != str(best):
        raise UnsupportedTopologyError(
            f"{name} needs the CBest port configuration {best} (docs/contracts.md), "
            f"got {view.config_text()}; "
            "use dort for other configurations"
        )
    h = (view.n - 1) // 2 if view.n % 2 else None
    # mirrored (contracts): class 0 ties d_h+, inject/eject 0 -> 1 lower; unmirrored: the opposite
    tie_of_class0 = +1 if mirrored else -1
    crossing_vc_of_card0 = LOWER if mirrored else UPPER

    def decision(cards: np.ndarray, dim: np.ndarray, direction: np.ndarray, ring: np.ndarray, at_home):
        """(egress, VC, use) on `cards` for the class's next DOR move and, where the packet is at the
        destination node, whether the destination PE is on this card (the class only orders the
        dimensions and breaks d_h's tie: ``decide``)."""
        port, holder = port_of_move(view, cards, dim, direction)
        side = view.side[cards].astype(np.int8)
        arrived = dim < 0
        local = holder == side  # holder is -1 where arrived
        # default: inject or eject over the internal link, card 0 -> 1 lower, 1 -> 0 upper (mirrored);
        # the first port is on this card: take it (each choice a select over the grid)
        egress = np.where(local, port, view.internal_port[cards].astype(np.int16))
        crossing = np.where(side == 0, np.int8(crossing_vc_of_card0), np.int8(1 - crossing_vc_of_card0))
        vc = np.where(local, ring, crossing)
        use = np.where(arrived, np.int8(USE_CODE["eject"]), np.int8(USE_CODE["inject"]))
        use = np.where(local, np.int8(USE_CODE["external"]), use)
        if h is not None:  # the internal link is part of d_h's ring: upper/lower by the coordinate
            ring_hop = (dim == h) & ~local
            vc = np.where(ring_hop, ring, vc)
            use = np.where(ring_hop, np.int8(USE_CODE["ring"]), use)
        egress = np.where(at_home, view.pe_port[cards].astype(np.int16), egress)
        vc = np.where(at_home, np.int8(0), vc)
        use = np.where(at_home, np.int8(USE_CODE["deliver"]), use)
        return egress, vc, use

    by_move = decide_by_move(view, decision)

    def decide(cards: np.ndarray, dsts: np.ndarray, routing_class: int):
        order = range(view.n) if routing_class == 0 else range(view.n - 1, -1, -1)
        ties = {h: tie_of_class0 if routing_class == 0 else -tie_of_class0} if h is not None else {}
        return by_move(cards, dsts, order, ties)

    upper_crossing, lower_crossing = ("1 -> 0", "0 -> 1") if mirrored else ("0 -> 1", "1 -> 0")
    vc_names = {
        "external": {UPPER: "upper (t_i > o_i)", LOWER: "lower (t_i <= o_i)"},
        "internal": {
            UPPER: f"upper: ring with t_h > o_h; inject/eject card {upper_crossing}",
            LOWER: f"lower: ring with t_h <= o_h; inject/eject card {lower_crossing}",
        },
        "host": {0: "deliver"},
    }
    first, second = ("d_h+", "d_h-") if mirrored else ("d_h-", "d_h+")
    notes = [
        "routing class = source PE's card; class 0 orders d0..d(n-1), class 1 d(n-1)..d0",
        f"tie in d_h: class 0 -> {first}, class 1 -> {second}; other dimensions +",
        "queue = 2*class + vc (4 queues per port)",
    ]
    if not mirrored:
        notes.append("UNSAFE: part 2's rules unmirrored on d_h+ of card 0: cyclic dependencies once k_h >= 4")
    return table_spec(
        name,
        network,
        decide,
        source_class=view.side_of_pe.astype(np.int8),
        num_classes=2,
        queue_rule=QUEUE_BY_CLASS_AND_VC,
        vc_names=vc_names,
        notes=notes,
    )


def tsdor_tables(network: CardNetwork) -> RoutingTables:
    """TS-DOR tables for an nDT torus whose port configuration is CBest."""
    return tsdor_spec(network).build()
