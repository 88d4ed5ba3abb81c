"""The physical graph every part of twinnet shares: cards, hosts, numbered ports, links.

A :class:`Topology` is what the generators in this package return, what routing
turns into per-card tables, what the controller installs on and what Mininet
builds. Port numbers are assigned here and nowhere else: a card's port number
is its P4 port and its Mininet interface number (``c7-eth3`` is port 3), from 1
up. Hosts have a single interface, port 0 (``h5-eth0``).

Example (a two-card "twin" with one host on each card)::

    >>> from topologies.model import Card, Host, Link, PortRef, Topology, Twin
    >>> cards = [Card("c0", 0, "t0", 0, 2), Card("c1", 1, "t0", 1, 2)]
    >>> links = [Link(PortRef("c0", 2), PortRef("c1", 2), "internal"),
    ...          Link(PortRef("h0", 0), PortRef("c0", 1), "host"),
    ...          Link(PortRef("h1", 0), PortRef("c1", 1), "host")]
    >>> topo = Topology("example", {}, cards, [Host(0, "c0", 1), Host(1, "c1", 1)],
    ...                 [Twin("t0", ("c0", "c1"))], links)
    >>> topo.peer(PortRef("c0", 2))
    PortRef(node='c1', port=2)
    >>> topo.counts()["internal_links"]
    1
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from topologies.addressing import card_name, host_ip, host_mac, host_name
from topologies.errors import TwinnetError

LinkKind = Literal["external", "internal", "host"]
LINK_KINDS: tuple[LinkKind, ...] = ("external", "internal", "host")


class TopologyError(TwinnetError, ValueError):
    """A topology that cannot exist (bad parameters, a port used twice, ...)."""


@dataclass(frozen=True, order=True)
class PortRef:
    """One port: a card name and its P4 port number (>= 1), or a host name and port 0."""

    node: str
    port: int

    def __str__(self) -> str:
        return f"{self.node}:{self.port}"


@dataclass(frozen=True)
class Card:
    """A low-radix switch: one P4 program instance, one Mininet switch.

    ``card_id`` is the number the card writes into every trace entry; ``twin``
    names the logical switch (fat-tree twin switch, torus node) it belongs to
    and ``side`` is its place in it (0 = card 0 / alpha, 1 = card 1 / beta;
    0 for a switch made of a single card). Its ports are 1..num_ports.
    """

    name: str
    card_id: int
    twin: str
    side: int
    num_ports: int

    def __post_init__(self) -> None:
        if self.name != card_name(self.card_id):
            raise TopologyError(f"card {self.name!r} must be named {card_name(self.card_id)!r}")


@dataclass(frozen=True)
class Host:
    """A PE: host ``h<pe>`` attached by its port 0 to ``card`` port ``port``."""

    pe: int
    card: str
    port: int

    @property
    def name(self) -> str:
        return host_name(self.pe)

    @property
    def ip(self) -> str:
        return host_ip(self.pe)

    @property
    def mac(self) -> str:
        return host_mac(self.pe)


@dataclass(frozen=True)
class Link:
    """A bidirectional link between two ports: card-card (external or internal) or host-card."""

    a: PortRef
    b: PortRef
    kind: LinkKind

    def __post_init__(self) -> None:
        if self.kind not in LINK_KINDS:
            raise TopologyError(f"link kind must be one of {LINK_KINDS}, got {self.kind!r}")

    def other(self, end: PortRef) -> PortRef:
        """The far end of this link seen from `end`."""
        if end == self.a:
            return self.b
        if end == self.b:
            return self.a
        raise KeyError(f"{end} is not an end of link {self.a} - {self.b}")


@dataclass(frozen=True)
class Twin:
    """A logical switch built from one or two cards (a twin switch, or a torus node).

    ``stage`` is the fat-tree stage (None for tori). ``coords`` is the position:
    fat trees the digits o_0, o_1, ..., o_{n-2} (least significant first), tori
    the node coordinates o_0 .. o_{n-1} (d0 first). ``ports`` maps the papers'
    port names of the logical switch (fat trees "0".."2k-1", tori "d0+", "d0-",
    ...) to the card port that implements each.
    """

    name: str
    cards: tuple[str, ...]
    stage: int | None = None
    coords: tuple[int, ...] = ()
    ports: Mapping[str, PortRef] = field(default_factory=dict)


class Topology:
    """Cards, hosts (indexed by PE), twins and links, with the papers' name of every card port.

    ``family`` is one of "kary-ntree", "twin-fattree", "torus", "ndt" (or another
    generator's name); ``params`` holds the generator's parameters. ``port_names``
    gives the paper's name of each card port ("3", "int0", "d1-", "pe", ...);
    ``unused_ports`` lists ports that exist but carry no link (a root switch's up
    ports). Construction checks that no port is used twice and every link end exists.
    """

    def __init__(
        self,
        family: str,
        params: dict[str, Any],
        cards: Iterable[Card],
        hosts: Iterable[Host],
        twins: Iterable[Twin],
        links: Iterable[Link],
        port_names: Mapping[PortRef, str] | None = None,
        unused_ports: Iterable[PortRef] = (),
    ) -> None:
        self.family = family
        self.params = dict(params)
        self.cards: dict[str, Card] = {}
        for card in cards:
            if card.name in self.cards:
                raise TopologyError(f"card {card.name} defined twice")
            self.cards[card.name] = card
        self.hosts: list[Host] = list(hosts)
        self.twins: dict[str, Twin] = {twin.name: twin for twin in twins}
        self.links: list[Link] = list(links)
        self.port_names: dict[PortRef, str] = dict(port_names or {})
        self.unused_ports: frozenset[PortRef] = frozenset(unused_ports)
        self._cards_by_id = {card.card_id: card for card in self.cards.values()}
        for index, host in enumerate(self.hosts):
            if host.pe != index:
                raise TopologyError(f"hosts must be listed by PE index: position {index} holds PE {host.pe}")
        host_names = {host.name for host in self.hosts}
        self._links_at: dict[PortRef, Link] = {}
        for link in self.links:
            for end in (link.a, link.b):
                if end in self._links_at:
                    raise TopologyError(f"port {end} is used by two links")
                if end.node in self.cards:
                    if not 1 <= end.port <= self.cards[end.node].num_ports:
                        raise TopologyError(
                            f"port {end}: card {end.node} has ports 1..{self.cards[end.node].num_ports}"
                        )
                elif end.node not in host_names or end.port != 0:
                    raise TopologyError(f"link end {end} is neither a card port nor a host's port 0")
                self._links_at[end] = link

    # -- look-ups -------------------------------------------------------------

    def peer(self, ref: PortRef) -> PortRef:
        """The port at the other end of the link on `ref` (KeyError if the port is unconnected)."""
        return self._links_at[ref].other(ref)

    def link_at(self, ref: PortRef) -> Link:
        """The link attached to port `ref`."""
        return self._links_at[ref]

    def is_connected(self, ref: PortRef) -> bool:
        return ref in self._links_at

    def card_by_id(self, card_id: int) -> Card:
        return self._cards_by_id[card_id]

    def host_of_pe(self, pe: int) -> Host:
        return self.hosts[pe]

    def card_ports(self, card: str) -> list[PortRef]:
        """All ports of `card`, 1..num_ports."""
        return [PortRef(card, port) for port in range(1, self.cards[card].num_ports + 1)]

    def links_of_kind(self, kind: LinkKind) -> list[Link]:
        return [link for link in self.links if link.kind == kind]

    def port_named(self, card: str, name: str) -> PortRef:
        """The port of `card` named `name` ("d1-", "int0", "pe", "5", ...); KeyError if none."""
        if not hasattr(self, "_ports_by_name"):
            self._ports_by_name = {(ref.node, port_name): ref for ref, port_name in self.port_names.items()}
        return self._ports_by_name[card, name]

    def missing_ports(self) -> list[PortRef]:
        """Card ports that have no link and are not listed as unused: empty for a complete topology."""
        return [
            ref
            for card in self.cards
            for ref in self.card_ports(card)
            if ref not in self._links_at and ref not in self.unused_ports
        ]

    # -- summaries ------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """Counts of hosts, cards, twins and links by kind."""
        counts = {
            "hosts": len(self.hosts),
            "cards": len(self.cards),
            "twins": len(self.twins),
        }
        for kind in LINK_KINDS:
            counts[f"{kind}_links"] = sum(1 for link in self.links if link.kind == kind)
        return counts

    def to_networkx(self):
        """A networkx MultiGraph: nodes are card and host names, one edge per link.

        Node attributes: ``kind`` ("card"/"host"), ``twin``, ``side``, ``card_id``
        or ``pe``; edge attributes: ``kind`` and ``ports`` {node: port}.
        """
        import networkx as nx

        graph = nx.MultiGraph()
        for card in self.cards.values():
            graph.add_node(card.name, kind="card", twin=card.twin, side=card.side, card_id=card.card_id)
        for host in self.hosts:
            graph.add_node(host.name, kind="host", pe=host.pe)
        for link in self.links:
            graph.add_edge(
                link.a.node,
                link.b.node,
                kind=link.kind,
                ports={link.a.node: link.a.port, link.b.node: link.b.port},
            )
        return graph
