"""Fully adaptive minimal routing on nDT tori and mD tori (Duato's method), as per-card tables.

Andujar thesis, adaptive routing chapter (torus notes II §5): a deadlock-free
escape routing (DORT on the nDT, DOR on the mD torus) plus adaptive VCs on
every link. At a card, for a packet to destination PE t, the routing function
(the thesis's Algorithm 1) offers

* the adaptive VCs of every port **of this card** that moves the packet closer
  to t along a ring (d_i+ and/or d_i- when the ring offset is positive,
  negative or a tie); on the nDT a split dimension has one port per card, so a
  tie there offers only the local one (the thesis's special case for d_h);
* the adaptive VCs of the internal link **only when the escape's output is the
  internal link** (this removes the wandering of the thesis's Examples 3.1-3.3);
* and always the escape: the escape routing's (port, VC).

A packet that has used an escape VC never returns to adaptive ones (the notes'
§5.1, stricter than Duato's theorem): its ``escaped`` state is 1 and its
entries offer only the escape. The candidates depend on (card, destination)
only; the tables still key on the ingress port, as every twinnet table does.

VC plan (the thesis's Table 3 on the cards' 8 priority queues, queue = VC):

======================  ==========  =========  =====
link                     escape      adaptive   total
======================  ==========  =========  =====
nDT external, mD torus   0, 1        2, 3       4
nDT internal (CBest)     0, 1, 2, 3  4 .. 7     8
host                     0           --         1
======================  ==========  =========  =====

The escape VCs are those of the escape routing (DORT's eject 0, inject 1, ring
pair 2/3 on the internal link; upper/lower 0/1 on external links); the
adaptive ones follow them. Configurations with more split dimensions need more
internal escape VCs and so more than 8 queues: they can be analysed, not
emulated.

>>> from topologies.torus import ndt_torus
>>> model = adaptive_tables(ndt_torus((4, 4, 4)))
>>> model.vc_plan["internal"], model.vc_plan["external"]
({'escape': [0, 1, 2, 3], 'adaptive': [4, 5, 6, 7]}, {'escape': [0, 1], 'adaptive': [2, 3]})
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from controller.routing.builder import TableSpec
from controller.routing.dor import dor_no_dateline_spec, dor_spec
from controller.routing.dort import dort_merged_vcs_spec, dort_spec
from controller.routing.errors import RoutingError, UnsupportedTopologyError
from controller.routing.network import EXTERNAL, HOST, INTERNAL, CardNetwork
from controller.routing.table import USES, RoutingTables
from controller.routing.torus_view import TorusView, ring_direction
from topologies.model import Topology

#: adaptive VCs per link kind (the thesis's Table 3: 4 on external links = 2 escape + 2 adaptive,
#: 8 on the internal link = 4 escape + 4 adaptive)
ADAPTIVE_VCS = {"external": 2, "internal": 4}

#: escape routing per topology family, and the deliberately broken escapes (negative controls)
ESCAPES = {"ndt": "dort", "torus": "dor"}
ESCAPE_SPECS = {
    "dort": dort_spec,
    "dor": dor_spec,
    "dort-merged-vcs": dort_merged_vcs_spec,
    "dor-no-dateline": dor_no_dateline_spec,
}

#: port classes the selection functions rank: external port of a dimension whose ring stays on
#: one card, external port of a split dimension (d_h on CBest), internal link
PORT_CLASSES = ("external", "split", "internal")
CLASS_EXTERNAL, CLASS_SPLIT, CLASS_INTERNAL = 0, 1, 2

#: a tie marker for ring_direction: both directions are minimal
_TIE = 2


class AdaptiveEntry(NamedTuple):
    """One entry: match (card, ingress port, dst PE, escaped) -> escape (port, VC, use) and candidates."""

    card_id: int
    ingress_port: int
    dst_pe: int
    escaped: int
    escape_port: int
    escape_vc: int
    escape_use: str
    candidates: tuple[tuple[int, int], ...]


@dataclass
class AdaptiveTables:
    """Per card, for each (ingress port, destination PE, escaped) on some allowed path: escape and candidates.

    Columns are numpy arrays sorted by (dst, card, ingress port, escaped).
    ``candidate_ports`` is a bit mask over the card's ports (bit p = port p);
    each such port offers all its adaptive VCs (``adaptive_vcs``). The routing
    class is 0 for every packet (DORT and DOR use one).
    """

    escape_algorithm: str
    topology: Topology
    network: CardNetwork
    card_id: np.ndarray
    ingress_port: np.ndarray
    dst_pe: np.ndarray
    escaped: np.ndarray
    escape_port: np.ndarray
    escape_vc: np.ndarray
    escape_use: np.ndarray
    candidate_ports: np.ndarray
    vc_plan: dict[str, dict[str, list[int]]]
    port_class: np.ndarray
    notes: list[str] = field(default_factory=list)

    algorithm = "adaptive"

    def __len__(self) -> int:
        return int(self.card_id.size)

    def adaptive_vcs(self, card: int, port: int) -> list[int]:
        """Adaptive VCs of a card port (none on host ports)."""
        kind = int(self.network.port_kind[card, port])
        name = {EXTERNAL: "external", INTERNAL: "internal"}.get(kind)
        return list(self.vc_plan[name]["adaptive"]) if name else []

    def escape_vcs(self, card: int, port: int) -> list[int]:
        """Escape VCs of a card port (those the escape routing uses on its kind of link)."""
        kind = int(self.network.port_kind[card, port])
        name = {EXTERNAL: "external", INTERNAL: "internal", HOST: "host"}.get(kind, "host")
        return list(self.vc_plan[name]["escape"])

    def is_adaptive(self, card: int, port: int, vc: int) -> bool:
        """Is (port, VC) of `card` an adaptive channel (rather than an escape one)?"""
        return vc in self.adaptive_vcs(card, port)

    def queues_per_port(self) -> int:
        """Priority queues a port needs (queue = VC): the highest VC of the plan plus one."""
        return 1 + max(max(plan["escape"] + plan["adaptive"]) for plan in self.vc_plan.values())

    def find(self, card: int, in_port: int, dst: int, escaped: int) -> int:
        """Index of the entry matching (card, ingress port, dst PE, escaped), or -1."""
        keys = self._keys()
        key = self._key(card, in_port, dst, escaped)
        index = int(keys.searchsorted(key))
        return index if index < keys.size and int(keys[index]) == key else -1

    def entry(self, index: int) -> AdaptiveEntry:
        """The entry at position `index`, candidates as (port, VC) pairs in port order."""
        card = int(self.card_id[index])
        mask = int(self.candidate_ports[index])
        candidates = tuple(
            (port, vc)
            for port in range(1, self.network.max_port + 1)
            if mask >> port & 1
            for vc in self.adaptive_vcs(card, port)
        )
        return AdaptiveEntry(
            card,
            int(self.ingress_port[index]),
            int(self.dst_pe[index]),
            int(self.escaped[index]),
            int(self.escape_port[index]),
            int(self.escape_vc[index]),
            USES[int(self.escape_use[index])],
            candidates,
        )

    def lookup(self, card: int, in_port: int, dst: int, escaped: int) -> AdaptiveEntry | None:
        """The entry for a packet on `card` from `in_port` to `dst`, or None when there is none."""
        index = self.find(card, in_port, dst, escaped)
        return None if index < 0 else self.entry(index)

    def entries(self) -> Iterator[AdaptiveEntry]:
        """All entries in storage order."""
        for index in range(len(self)):
            yield self.entry(index)

    def _key(self, card, in_port, dst, escaped):
        net = self.network
        return ((np.int64(dst) * net.num_cards + card) * (net.max_port + 1) + in_port) * 2 + escaped

    def _keys(self) -> np.ndarray:
        return self._key(
            self.card_id.astype(np.int64), self.ingress_port.astype(np.int64), self.dst_pe, self.escaped
        )


def escape_tables(model: AdaptiveTables) -> RoutingTables:
    """The escape routing's route tables, read off the adaptive tables (not computed again).

    The entries of the states a packet reaches by escapes alone from its host
    port: the escape routing's own paths (DORT's or DOR's), with its
    conventions, so that its paths, channels and analysis come from the same
    tables the cards hold.
    """
    spec = escape_spec_of(model.network, model.escape_algorithm)
    net = model.network
    keys = model._keys()
    card = model.card_id.astype(np.int64)
    port = model.ingress_port.astype(np.int64)
    on_path = (net.port_kind[card, port] == HOST) & (model.escaped == 0)
    frontier = np.flatnonzero(on_path)
    while frontier.size:
        out = model.escape_port[frontier].astype(np.int64)
        far_card = net.peer_card[card[frontier], out].astype(np.int64)
        far_port = net.peer_port[card[frontier], out].astype(np.int64)
        inside = far_card >= 0
        wanted = model._key(
            far_card[inside], far_port[inside], model.dst_pe[frontier][inside].astype(np.int64), 1
        )
        found = np.minimum(keys.searchsorted(wanted), keys.size - 1)
        if np.any(keys[found] != wanted):
            raise RoutingError("the adaptive tables lack an escaped state their escape routing reaches")
        frontier = np.unique(found[~on_path[found]])
        on_path[frontier] = True
    rows = np.flatnonzero(on_path)
    return RoutingTables(
        algorithm=spec.algorithm,
        topology=model.topology,
        network=net,
        card_id=model.card_id[rows].astype(np.int32),
        ingress_port=model.ingress_port[rows].astype(np.int16),
        dst_pe=model.dst_pe[rows].astype(np.int32),
        routing_class=np.zeros(rows.size, dtype=np.int8),
        egress_port=model.escape_port[rows].astype(np.int16),
        vc=model.escape_vc[rows].astype(np.int8),
        use=model.escape_use[rows].astype(np.int8),
        source_class=spec.source_class,
        num_classes=spec.num_classes,
        queue_rule=spec.queue_rule,
        vc_names=spec.vc_names,
        notes=[*spec.notes, "read off the adaptive tables: the escape routing's entries on its own paths"],
    )


def escape_spec_of(network: CardNetwork, escape: str | None) -> TableSpec:
    """The escape routing's TableSpec: DORT on an nDT, DOR on a torus, or a named (possibly broken) one."""
    family = network.topology.family
    if family not in ESCAPES:
        raise UnsupportedTopologyError(
            "adaptive routing routes nDT tori and mD tori (families ndt, torus); "
            f"this is a {family!r} topology"
        )
    name = escape or ESCAPES[family]
    if name not in ESCAPE_SPECS:
        raise RoutingError(f"escape routing must be one of {', '.join(ESCAPE_SPECS)}, got {name!r}")
    return ESCAPE_SPECS[name](network)


def vc_plan_of(escape: TableSpec) -> dict[str, dict[str, list[int]]]:
    """Escape VCs per link kind (those the escape routing names) and the adaptive VCs after them."""
    plan = {}
    for kind in ("external", "internal", "host"):
        escape_vcs = sorted(escape.vc_names.get(kind, {}))
        if kind == "internal" and not escape_vcs:
            continue
        first = max(escape_vcs) + 1 if escape_vcs else 0
        adaptive = list(range(first, first + ADAPTIVE_VCS[kind])) if kind in ADAPTIVE_VCS else []
        plan[kind] = {"escape": escape_vcs, "adaptive": adaptive}
    return plan


def candidate_masks(
    view: TorusView, cards: np.ndarray, dsts: np.ndarray, escape_port: np.ndarray
) -> np.ndarray:
    """Algorithm 1's adaptive ports as bit masks over port numbers, per (dst, card) of the broadcast grid.

    Every port of the card on a minimal direction of an unfinished dimension,
    and the internal link when the escape port is the internal link.
    """
    shape = np.broadcast_shapes(np.shape(cards), np.shape(dsts))
    mask = np.zeros(shape, dtype=np.int64)
    for i in range(view.n):
        step = ring_direction(view.coords[cards, i], view.coords_of_pe[dsts, i], view.dims[i], _TIE)
        for sign, column in ((+1, 2 * i), (-1, 2 * i + 1)):
            port = np.broadcast_to(view.port[cards, column], shape).astype(np.int64)
            minimal = (step == sign) | (step == _TIE)
            mask = np.where(minimal & (port > 0), mask | (np.int64(1) << port), mask)
    if view.twin_cards:
        internal = np.broadcast_to(view.internal_port[cards], shape).astype(np.int64)
        mask = np.where(escape_port == internal, mask | (np.int64(1) << internal), mask)
    return mask


def port_classes(view: TorusView) -> np.ndarray:
    """Per (card, port): CLASS_EXTERNAL, CLASS_SPLIT (a split dimension's port) or CLASS_INTERNAL; -1 else."""
    network = view.network
    classes = np.full((network.num_cards, network.max_port + 1), -1, dtype=np.int8)
    split = set(view.split_dimensions) if view.twin_cards else set()
    for i in range(view.n):
        for column in (2 * i, 2 * i + 1):
            cards = np.flatnonzero(view.port[:, column] > 0)
            classes[cards, view.port[cards, column]] = CLASS_SPLIT if i in split else CLASS_EXTERNAL
    if view.twin_cards:
        cards = np.flatnonzero(view.internal_port > 0)
        classes[cards, view.internal_port[cards]] = CLASS_INTERNAL
    return classes


def adaptive_tables(
    topology: Topology, escape: str | None = None, dsts: range | None = None
) -> AdaptiveTables:
    """The adaptive tables of `topology` (all destinations, or those of `dsts`).

    `escape` names the escape routing (default DORT on nDT, DOR on a torus; the
    unsafe variants exist for negative controls).
    """
    network = CardNetwork(topology)
    spec = escape_spec_of(network, escape)
    view = TorusView(network)
    dst_range = dsts if dsts is not None else range(network.num_pes)
    parts = [_destination_entries(spec, view, dst) for dst in dst_range]
    if parts:
        columns = [np.concatenate([part[i] for part in parts]) for i in range(8)]
    else:
        columns = [np.zeros(0, dtype=np.int64) for _ in range(8)]
    card, in_port, dst_pe, escaped, esc_port, esc_vc, esc_use, mask = columns
    plan = vc_plan_of(spec)
    notes = [
        f"escape routing {spec.algorithm}",
        "Algorithm 1: only ports of the current card; the internal link adaptive only when the escape "
        "output is the internal link",
        "a packet that took an escape VC keeps to escape VCs (escaped = 1) to the end",
        "VC plan (queue = VC): "
        + "; ".join(f"{kind}: escape {p['escape']}, adaptive {p['adaptive']}" for kind, p in plan.items()),
    ]
    return AdaptiveTables(
        escape_algorithm=spec.algorithm,
        topology=topology,
        network=network,
        card_id=card.astype(np.int32),
        ingress_port=in_port.astype(np.int16),
        dst_pe=dst_pe.astype(np.int32),
        escaped=escaped.astype(np.int8),
        escape_port=esc_port.astype(np.int16),
        escape_vc=esc_vc.astype(np.int8),
        escape_use=esc_use.astype(np.int8),
        candidate_ports=mask.astype(np.int64),
        vc_plan=plan,
        port_class=port_classes(view),
        notes=notes,
    )


def _destination_entries(spec: TableSpec, view: TorusView, dst: int) -> list[np.ndarray]:
    """Entry columns of one destination: the states some allowed path reaches, sorted by key."""
    network = spec.network
    cards = np.arange(network.num_cards)
    target = np.array([dst])
    egress, vc, use = (np.asarray(a).reshape(-1) for a in spec.decide(cards[None, :], target[:, None], 0))
    egress = np.broadcast_to(egress, cards.shape).astype(np.int64)
    vc = np.broadcast_to(vc, cards.shape)
    use = np.broadcast_to(use, cards.shape)
    mask = candidate_masks(view, cards[None, :], target[:, None], egress[None, :]).reshape(-1)
    width = network.max_port + 1
    present = np.zeros((2, network.num_cards, width), dtype=bool)  # [escaped, card, ingress port]
    sources = np.flatnonzero(np.arange(network.num_pes) != dst)
    present[0, network.pe_card[sources], network.pe_port[sources]] = True

    def arrive(layer: int, hop_cards: np.ndarray, hop_ports: np.ndarray) -> np.ndarray:
        """Mark the (card, ingress port) states the hops lead to in ``layer``; the cards reached."""
        far_card = network.peer_card[hop_cards, hop_ports]
        far_port = network.peer_port[hop_cards, hop_ports]
        inside = far_card >= 0
        present[layer, far_card[inside], far_port[inside]] = True
        new = np.zeros(network.num_cards, dtype=bool)
        new[far_card[inside]] = True
        return new

    # non-escaped states: sources and arrivals over adaptive candidates
    reached = present[0].any(axis=1)
    frontier = reached.copy()
    ports = np.arange(width)
    while frontier.any():
        hops = frontier[:, None] & ((mask[:, None] >> ports[None, :]) & 1).astype(bool)
        new = arrive(0, *np.nonzero(hops))
        frontier = new & ~reached
        reached |= new
    # escaped states: arrivals over the escape from any reached state
    escaped_reached = np.zeros_like(reached)
    frontier = reached.copy()
    while frontier.any():
        hop_cards = np.flatnonzero(frontier)
        new = arrive(1, hop_cards, egress[hop_cards])
        frontier = new & ~escaped_reached
        escaped_reached |= new
    card, port, escaped = np.nonzero(present.transpose(1, 2, 0))  # sorted by (card, port, escaped)
    return [
        card,
        port,
        np.full(card.size, dst),
        escaped,
        egress[card],
        vc[card],
        use[card],
        np.where(escaped == 1, 0, mask[card]),
    ]
