"""Follow one packet through the route tables, hop by hop, as the cards would forward it.

The walk starts at the source PE's card, on its host port, with the routing
class the first card assigns; at every card it looks up (ingress port,
destination PE, class), leaves on the entry's egress port and arrives on the
peer port. It stops with an error, never hangs: a missing entry
(MissingEntryError), an egress port with no link (BlackHoleError), a host that
is not the destination (MisdeliveryError), or a (card, ingress port) visited
twice (RoutingLoopError: with per-port entries a path that repeats one repeats
forever).

>>> from topologies.torus import torus
>>> from controller.routing import compute_tables
>>> path = walk(compute_tables(torus((4,)), "dor"), 0, 3)
>>> [(hop.card_id, hop.egress_port, hop.vc) for hop in path.hops]    # d0- from node 0 wraps to node 3
[(0, 2, 0), (3, 3, 0)]
>>> path.external_hops, path.internal_hops
(1, 0)
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.routing.errors import (
    BlackHoleError,
    MisdeliveryError,
    MissingEntryError,
    RoutingError,
    RoutingLoopError,
)
from controller.routing.network import EXTERNAL, HOST, INTERNAL, PORT_KIND_NAMES
from controller.routing.table import USES, RoutingTables


@dataclass(frozen=True)
class RouteHop:
    """One card's forwarding: ingress and egress port, VC and queue, and the kind of link it sends onto."""

    card_id: int
    ingress_port: int
    egress_port: int
    vc: int
    queue: int
    link_kind: str
    use: str


@dataclass(frozen=True)
class Path:
    """The hops of one packet from `src` to `dst` (PE indices) in routing class `routing_class`."""

    src: int
    dst: int
    routing_class: int
    hops: tuple[RouteHop, ...]

    @property
    def external_hops(self) -> int:
        """Card-to-card external links traversed."""
        return sum(1 for hop in self.hops if hop.link_kind == "external")

    @property
    def internal_hops(self) -> int:
        """Internal (card-to-card within a twin) links traversed."""
        return sum(1 for hop in self.hops if hop.link_kind == "internal")

    @property
    def links(self) -> int:
        """Card-to-card links traversed, external and internal (host links excluded)."""
        return self.external_hops + self.internal_hops

    @property
    def cards(self) -> tuple[int, ...]:
        """Card ids visited, in order."""
        return tuple(hop.card_id for hop in self.hops)

    def to_json(self) -> dict:
        """JSON-ready form: src, dst, class and hops as [card, ingress, egress, vc, queue, link kind, use]."""
        return {
            "src": self.src,
            "dst": self.dst,
            "routing_class": self.routing_class,
            "hops": [
                [h.card_id, h.ingress_port, h.egress_port, h.vc, h.queue, h.link_kind, h.use]
                for h in self.hops
            ],
        }


class _Place:
    """A card and ingress port, formatted only when an error message needs it."""

    def __init__(self, tables: RoutingTables, card: int, in_port: int) -> None:
        self.tables, self.card, self.in_port = tables, card, in_port

    def __str__(self) -> str:
        net = self.tables.network
        name = net.port_name(self.card, self.in_port)
        return f"card {net.card_names[self.card]} ingress port {self.in_port} ({name})"


def walk(tables: RoutingTables, src_pe: int, dst_pe: int) -> Path:
    """The path of a packet from PE `src_pe` to PE `dst_pe` through `tables` (errors as the module says)."""
    net = tables.network
    for name, pe in (("src_pe", src_pe), ("dst_pe", dst_pe)):
        if not 0 <= pe < net.num_pes:
            raise RoutingError(f"{name} must be a PE index in 0..{net.num_pes - 1}, got {pe}")
    if src_pe == dst_pe:
        raise RoutingError(f"src_pe and dst_pe are both {src_pe}: the tables route distinct PEs only")
    cls = tables.class_of_source(src_pe)
    card, in_port = int(net.pe_card[src_pe]), int(net.pe_port[src_pe])
    seen: set[tuple[int, int]] = set()
    hops: list[RouteHop] = []
    while True:
        where = _Place(tables, card, in_port)
        if (card, in_port) in seen:
            raise RoutingLoopError(
                f"packet {src_pe} -> {dst_pe} (class {cls}) loops: back at {where} "
                f"after cards {[h.card_id for h in hops]}"
            )
        seen.add((card, in_port))
        index = tables.find(card, in_port, dst_pe, cls)
        if index < 0:
            raise MissingEntryError(
                f"packet {src_pe} -> {dst_pe} (class {cls}): no entry at {where} "
                f"for destination {dst_pe}, class {cls}"
            )
        egress, vc = int(tables.egress_port[index]), int(tables.vc[index])
        kind = int(net.port_kind[card, egress]) if 0 < egress <= net.max_port else 0
        hops.append(
            RouteHop(
                card,
                in_port,
                egress,
                vc,
                tables.queue_of(cls, vc),
                PORT_KIND_NAMES[kind],
                USES[int(tables.use[index])],
            )
        )
        if kind == HOST:
            host = int(net.host_at[card, egress])
            if host != dst_pe:
                raise MisdeliveryError(
                    f"packet {src_pe} -> {dst_pe}: card {net.card_names[card]} port {egress} "
                    f"delivers it to PE {host}"
                )
            return Path(src_pe, dst_pe, cls, tuple(hops))
        if kind not in (EXTERNAL, INTERNAL):
            raise BlackHoleError(
                f"packet {src_pe} -> {dst_pe}: card {net.card_names[card]} sends it out of "
                f"port {egress}, which has no link"
            )
        card, in_port = int(net.peer_card[card, egress]), int(net.peer_port[card, egress])
