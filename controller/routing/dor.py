"""DOR on k-ary n-cubes (family "torus", e.g. an nDT's equivalent mD torus): dimension order, dateline VCs.

Andujar thesis (torus notes I §3.4, torus notes II §4.3) and docs/contracts.md:

    for i in 0 .. n-1:                        # ascending dimension order
        s = ring_direction(o_i, t_i, k_i)     # minimal; a tie (k_i even, distance k_i/2) goes +
        if s != 0: return port d_i^s, VC upper if t_i > o_i else lower
    return the PE port                        # arrived

The upper/lower rule is a dateline at the wrap link: on the + ring a packet
with t_i < o_i travels on lower until it has crossed k_i-1 -> 0 and on upper
after, so neither VC's ring closes. External links need 2 VCs, host links 1.

``dor-no-dateline`` is the same routing on one VC: every ring of k_i >= 3 closes a
cycle in the channel dependency graph, so it can deadlock on lossless links. It
exists to show that deadlock (registered as unsafe in controller.routing.registry).
"""

from __future__ import annotations

import numpy as np

from controller.routing.builder import TableSpec, table_spec
from controller.routing.errors import UnsupportedTopologyError
from controller.routing.network import CardNetwork
from controller.routing.table import USE_CODE, RoutingTables
from controller.routing.torus_view import LOWER, UPPER, TorusView, decide_by_move, port_of_move

VC_NAMES = {"external": {UPPER: "upper (t_i > o_i)", LOWER: "lower (t_i <= o_i)"}, "host": {0: "deliver"}}
SINGLE_VC_NAMES = {"external": {0: "the only VC (no dateline)"}, "host": {0: "deliver"}}


def dor_spec(network: CardNetwork) -> TableSpec:
    """TableSpec of the DOR tables for a torus of single-card nodes (one PE per node, pe = node index)."""
    return _dor_spec(network, dateline=True)


def dor_no_dateline_spec(network: CardNetwork) -> TableSpec:
    """DOR on one VC per link, without the dateline: cyclic on every ring of 3 or more nodes (unsafe)."""
    return _dor_spec(network, dateline=False)


def _dor_spec(network: CardNetwork, *, dateline: bool) -> TableSpec:
    if network.topology.family != "torus":
        raise UnsupportedTopologyError(
            f"dor routes k-ary n-cubes (family torus, e.g. the equivalent mD torus); "
            f"this is a {network.topology.family!r} topology: for an nDT use dort or ts-dor"
        )
    view = TorusView(network)

    def decision(cards: np.ndarray, dim: np.ndarray, direction: np.ndarray, ring: np.ndarray, at_home):
        """(egress, VC, use) on `cards` for DOR's next move (a torus card holds its node's PE)."""
        port, _ = port_of_move(view, cards, dim, direction)
        arrived = dim < 0
        egress = np.where(arrived, view.pe_port[cards].astype(np.int16), port)
        vc = ring if dateline else np.zeros(dim.shape, dtype=np.int8)  # ring is 0 where arrived
        use = np.where(arrived, np.int8(USE_CODE["deliver"]), np.int8(USE_CODE["external"]))
        return egress, vc, use

    by_move = decide_by_move(view, decision)

    def decide(cards: np.ndarray, dsts: np.ndarray, routing_class: int):
        return by_move(cards, dsts, range(view.n), {})

    if dateline:
        return table_spec(
            "dor",
            network,
            decide,
            vc_names=VC_NAMES,
            notes=["ties (k_i even, distance k_i/2) go +", "external VC: upper=0 if t_i > o_i else lower=1"],
        )
    return table_spec(
        "dor-no-dateline",
        network,
        decide,
        vc_names=SINGLE_VC_NAMES,
        notes=["ties (k_i even, distance k_i/2) go +", "UNSAFE: one VC, no dateline: cyclic dependencies"],
    )


def dor_tables(network: CardNetwork) -> RoutingTables:
    """DOR tables for a torus of single-card nodes (one PE per node, pe = node index)."""
    return dor_spec(network).build()


def dor_no_dateline_tables(network: CardNetwork) -> RoutingTables:
    """DOR tables on one VC without the dateline (unsafe: cyclic dependencies)."""
    return dor_no_dateline_spec(network).build()
