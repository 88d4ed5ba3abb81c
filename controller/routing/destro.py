"""DESTRO (Villar 2011, App. A.7; fat-tree notes §2) on k-ary n-trees and on fat trees of twin switches.

At switch <s, o> (digits o_0..o_{n-2}) for destination h (digits h_0..h_{n-1}),
fat-tree notes §2.2, the stateless form of R(<s,o>, h):

    if h_j == o_{j-1} for all j in s+1 .. n-1:   # h lies below this switch
        return h_s                               # down port: turnaround or descend
    return k + h_s                               # up port: ascend

The port is a port of the logical 2k-port switch. In a twin switch the card
that holds the packet forwards it itself when that port is its own, and
otherwise sends it over an internal link to the other card, which then holds
the port (at most one crossing per twin). Choices the paper leaves open:

* which of the r internal links: link ``h_s mod r`` (the destination digit
  that also picks the port, so crossings to different ports spread over the
  links; with the default pair configuration and r dividing k/2 the links
  carry equal numbers of paths);
* VCs: external and host links use VC 0. Internal hops use VC 0, except a
  *descending* crossing (entered on an up port, leaves on a down port of the
  other card), which uses VC 1: ascending/turning and descending traffic then
  never share an internal channel and the channel dependency graph stays
  acyclic for any port configuration. With the optimal pair configuration no
  descending packet crosses (Villar 2011, Prop 1.29), so VC 1 is never used.
"""

from __future__ import annotations

import numpy as np

from controller.routing.builder import TableSpec, table_spec
from controller.routing.errors import UnsupportedTopologyError
from controller.routing.network import HOST, CardNetwork
from controller.routing.table import USE_CODE, RoutingTables


class FatTreeView:
    """Per card: stage, switch digits, and where each logical port of its twin lives (card, card port)."""

    def __init__(self, network: CardNetwork) -> None:
        topology = network.topology
        if topology.family not in ("kary-ntree", "twin-fattree"):
            raise UnsupportedTopologyError(
                f"destro routes k-ary n-trees and twin fat trees (families kary-ntree, twin-fattree); "
                f"this is a {topology.family!r} topology"
            )
        self.k, self.n = int(topology.params["k"]), int(topology.params["n"])
        self.r = int(topology.params.get("r", 0)) if topology.family == "twin-fattree" else 0
        num_cards, k = network.num_cards, self.k
        self.stage = np.zeros(num_cards, dtype=np.int64)
        self.digits = np.zeros((num_cards, max(1, self.n - 1)), dtype=np.int64)
        self.port_card = np.zeros((num_cards, 2 * k), dtype=np.int64)
        self.port_number = np.zeros((num_cards, 2 * k), dtype=np.int64)
        for twin in topology.twins.values():
            for name in twin.cards:
                card = network.card_id_of_name[name]
                self.stage[card] = twin.stage
                self.digits[card, : self.n - 1] = twin.coords
                for logical in range(2 * k):
                    ref = twin.ports[str(logical)]
                    self.port_card[card, logical] = network.card_id_of_name[ref.node]
                    self.port_number[card, logical] = ref.port
        self.internal_ports = (
            np.stack([network.port_numbers(f"int{j}") for j in range(self.r)], axis=1)
            if self.r
            else np.zeros((num_cards, 1), dtype=np.int64)
        )
        #: logical switch port of every card port (-1 for internal and unnamed ports)
        self.logical_of_port = np.full((num_cards, network.max_port + 1), -1, dtype=np.int64)
        for card in range(num_cards):
            for port in range(1, network.max_port + 1):
                name = network.port_name(card, port)
                if name.isdigit():
                    self.logical_of_port[card, port] = int(name)

    def dst_digits(self, dsts: np.ndarray) -> np.ndarray:
        """Base-k digits of destination terminals, least significant first (shape dsts.shape + (n,))."""
        return np.stack([(dsts // self.k**i) % self.k for i in range(self.n)], axis=-1)


def destro_out_port(view: FatTreeView, cards: np.ndarray, dsts: np.ndarray) -> np.ndarray:
    """DESTRO's logical output port (0..2k-1) of each card's switch per destination (fat-tree notes §2.2).

    `cards` and `dsts` broadcast against each other (e.g. a row of cards against a column of destinations).
    """
    k = view.k
    h = view.dst_digits(np.asarray(dsts))
    s = view.stage[cards]
    o = view.digits[cards]
    below = np.ones(np.broadcast_shapes(np.shape(cards), np.shape(dsts)), dtype=bool)
    for j in range(1, view.n):
        below &= (j <= s) | (h[..., j] == o[..., j - 1])
    h_s = (np.asarray(dsts) // k**s) % k
    return np.where(below, h_s, k + h_s)


def destro_spec(network: CardNetwork) -> TableSpec:
    """TableSpec of the DESTRO tables for a k-ary n-tree (one card per switch) or a twin fat tree."""
    view = FatTreeView(network)
    k = view.k
    width = network.max_port + 1
    links = view.internal_ports.shape[1]

    def decide(cards: np.ndarray, dsts: np.ndarray, routing_class: int):
        logical = destro_out_port(view, cards, dsts)
        at = np.asarray(cards, dtype=np.int64) * (2 * k) + logical
        local = view.port_card.ravel().take(at) == cards
        link = (logical % k) % max(1, view.r)  # h_s mod r
        internal = view.internal_ports.ravel().take(np.asarray(cards, dtype=np.int64) * links + link)
        egress = np.where(local, view.port_number.ravel().take(at), internal)
        to_host = network.port_kind.ravel().take(np.asarray(cards, dtype=np.int64) * width + egress) == HOST
        use = np.where(
            local,
            np.where(to_host, USE_CODE["deliver"], USE_CODE["external"]),
            np.where(logical >= k, USE_CODE["ascend"], USE_CODE["turn"]),
        )
        return egress, np.zeros(logical.shape, dtype=np.int8), use

    def refine(cards, in_ports, dsts, egress, vc, use):
        # a crossing towards a down port is a turnaround if the packet came up, a descent if it came down
        turning = np.flatnonzero(use == USE_CODE["turn"])
        descending = turning[view.logical_of_port[cards[turning], in_ports[turning]] >= k]
        vc, use = vc.copy(), use.copy()
        vc[descending], use[descending] = 1, USE_CODE["descend"]
        return vc, use

    vc_names = {"external": {0: "single VC"}, "host": {0: "single VC"}}
    notes = ["DESTRO: up port k + h_s, down port h_s (fat-tree notes §2.2)"]
    if view.r:
        vc_names["internal"] = {
            0: "ascend or turn",
            1: "descend (only with a configuration that splits a pair)",
        }
        notes.append(f"crossings use internal link int(h_s mod r), r = {view.r}")
    return table_spec(
        "destro",
        network,
        decide,
        vc_names=vc_names,
        notes=notes,
        refine=refine if view.r else None,
        refine_uses=(USE_CODE["turn"],),
    )


def destro_tables(network: CardNetwork) -> RoutingTables:
    """DESTRO tables for a k-ary n-tree (one card per switch) or a twin fat tree."""
    return destro_spec(network).build()
