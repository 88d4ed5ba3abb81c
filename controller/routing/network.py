"""A compact array view of a Topology's cards, ports and links, for vectorised routing and analysis.

Card ids index the arrays directly (every generator numbers cards 0..C-1), and
ports are the cards' P4 port numbers (1..num_ports; column 0 is unused), so
``peer_card[c, p]`` is the card at the other end of port p of card c. Building
tables or walking all pairs then costs a few numpy gathers per hop instead of a
graph look-up per packet.

>>> from topologies.torus import torus
>>> net = CardNetwork(torus((4, 4)))
>>> int(net.peer_card[0, 1]), net.port_name(0, 1)       # d0+ of node 0 leads to node 1
(1, 'd0+')
>>> int(net.host_at[0, net.port_number(0, "pe")])
0
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from controller.routing.errors import RoutingError
from topologies.model import Topology

#: values of ``CardNetwork.port_kind``
NO_LINK, EXTERNAL, INTERNAL, HOST = 0, 1, 2, 3
PORT_KIND_NAMES = {NO_LINK: "none", EXTERNAL: "external", INTERNAL: "internal", HOST: "host"}


class CardNetwork:
    """Per-card port arrays of a topology: peers, link kinds, attached hosts and paper port names."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        cards = sorted(topology.cards.values(), key=lambda card: card.card_id)
        if [card.card_id for card in cards] != list(range(len(cards))):
            raise RoutingError("card ids must be 0..C-1 for routing tables to index them")
        self.num_cards = len(cards)
        self.num_pes = len(topology.hosts)
        self.max_port = max(card.num_ports for card in cards)
        self.card_names = [card.name for card in cards]
        self.card_id_of_name = {card.name: card.card_id for card in cards}
        self.side = np.array([card.side for card in cards], dtype=np.int8)
        self.twin_of_card = [card.twin for card in cards]
        shape = (self.num_cards, self.max_port + 1)
        self.peer_card = np.full(shape, -1, dtype=np.int32)
        self.peer_port = np.full(shape, -1, dtype=np.int32)
        self.port_kind = np.zeros(shape, dtype=np.int8)
        self.host_at = np.full(shape, -1, dtype=np.int32)
        host_pe = {host.name: host.pe for host in topology.hosts}
        kinds = {"external": EXTERNAL, "internal": INTERNAL}
        for link in topology.links:
            ends = (link.a, link.b)
            for near, far in (ends, ends[::-1]):
                if near.node not in self.card_id_of_name:
                    continue
                card = self.card_id_of_name[near.node]
                if far.node in self.card_id_of_name:
                    self.peer_card[card, near.port] = self.card_id_of_name[far.node]
                    self.peer_port[card, near.port] = far.port
                    self.port_kind[card, near.port] = kinds[link.kind]
                else:
                    self.host_at[card, near.port] = host_pe[far.node]
                    self.port_kind[card, near.port] = HOST
        self.pe_card = np.array([self.card_id_of_name[h.card] for h in topology.hosts], dtype=np.int32)
        self.pe_port = np.array([h.port for h in topology.hosts], dtype=np.int32)
        self._names: dict[tuple[int, int], str] = {}
        self._numbers: dict[tuple[int, str], int] = {}
        for ref, name in topology.port_names.items():
            card = self.card_id_of_name[ref.node]
            self._names[card, ref.port] = name
            self._numbers[card, name] = ref.port

    @cached_property
    def far_end(self) -> np.ndarray:
        """Per link id card * width + port: the link id at its far end, -1 without a card there."""
        width = self.max_port + 1
        peer = self.peer_card.astype(np.int32) * np.int32(width) + self.peer_port
        return np.where(self.peer_card >= 0, peer, -1).astype(np.int32).ravel()

    @cached_property
    def card_of_link(self) -> np.ndarray:
        """Per link id card * width + port: the card."""
        return np.repeat(np.arange(self.num_cards, dtype=np.int32), self.max_port + 1)

    def port_name(self, card: int, port: int) -> str:
        """Paper name of a card port ("d1-", "int0", "pe", "5"), or "p<port>" if the model names none."""
        return self._names.get((card, port), f"p{port}")

    def port_number(self, card: int, name: str) -> int:
        """Card port number of the port with paper's name `name` on `card` (KeyError if none)."""
        return self._numbers[card, name]

    def port_numbers(self, name: str, missing: int = 0) -> np.ndarray:
        """Per card, the number of the port named `name` (`missing` where a card has none)."""
        return np.array(
            [self._numbers.get((card, name), missing) for card in range(self.num_cards)], dtype=np.int32
        )

    def link_kind_name(self, card: int, port: int) -> str:
        """'external', 'internal', 'host' or 'none' for a card port."""
        return PORT_KIND_NAMES[int(self.port_kind[card, port])]
