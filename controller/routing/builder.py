"""Turn an algorithm's per-card next-hop rule into route tables holding exactly the entries on paths.

An algorithm supplies ``decide(cards, dsts, routing_class) -> (egress_port, vc,
use)``, vectorised over numpy arrays that broadcast (every card against a block
of destinations): what a card does with a packet for a destination PE. The
four algorithms of the papers (DESTRO, DOR, DORT, TS-DOR) decide without
looking at the ingress port; the tables still key on it, as EXTOLL's
per-input-port tables do, and an optional ``refine`` step may set a
VC or use from the ingress port (DESTRO names a descending internal hop so).

For each destination and class the builder marks the cards that some packet
reaches (starting from the source PEs of that class and following the
decisions), and emits one entry per (card, ingress port) on those paths:
the source PEs' host ports, and the port at the far end of every marked
card's egress link. That is "walk all pairs" with the cost of one pass per
destination instead of one per pair. The entries are marked on a dense array
of (destination, class, card, port) cells, so reading the marks in order gives
them sorted as the tables store them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from controller import kernels
from controller.routing.errors import BlackHoleError, MisdeliveryError
from controller.routing.network import CardNetwork
from controller.routing.table import RoutingTables

#: storage types of the entry columns: card, ingress port, dst PE, class, egress port, VC, use
DTYPES = (np.int32, np.int16, np.int32, np.int8, np.int16, np.int8, np.int8)

#: target number of (card, destination) cells evaluated at once
CELLS_PER_CHUNK = 2_000_000

#: (card, destination) cells per block when the tables are built block by block for analysis: small
#: blocks keep memory low and each block's arrays in cache
ANALYSIS_CELLS = 500_000


class Decide(Protocol):
    """Next hop of packets on `cards` for destination PEs `dsts` in one routing class.

    `cards` and `dsts` broadcast against each other (the builder passes a row of
    every card and a column of a block's destinations, so a rule computes per
    card coordinate and per destination coordinate and combines them); the three
    results have their broadcast shape.
    """

    def __call__(
        self, cards: np.ndarray, dsts: np.ndarray, routing_class: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]: ...


#: (card, ingress port, dst, egress port, vc, use) -> (vc, use): ingress-dependent adjustments
Refine = Callable[
    [np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]
]


@dataclass(frozen=True)
class TableSpec:
    """An algorithm's decision rule with its conventions: builds its route tables whole or by destinations.

    ``build()`` gives the tables the installer writes; ``blocks()`` gives the same
    entries as consecutive tables of a few destinations each (their
    concatenation is ``build()``), so that all-pairs analysis of large networks
    never holds every entry at once.
    """

    algorithm: str
    network: CardNetwork
    decide: Decide
    source_class: np.ndarray
    num_classes: int = 1
    queue_rule: str = "vc"
    vc_names: dict[str, dict[int, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    refine: Refine | None = None
    #: the uses (USE_CODE) of the card decisions whose entries ``refine`` may change (None: any)
    refine_uses: tuple[int, ...] | None = None

    def default_block(self, cells: int = CELLS_PER_CHUNK) -> int:
        """Destinations per block: about `cells` (card, destination) cells."""
        return max(1, cells // max(1, self.network.num_cards))

    def ranges(self, dsts_per_block: int | None = None) -> list[tuple[int, int]]:
        """The [first, last) destination ranges of ``blocks(dsts_per_block)``."""
        step = dsts_per_block or self.default_block(ANALYSIS_CELLS)
        num_pes = self.network.num_pes
        return [(first, min(num_pes, first + step)) for first in range(0, num_pes, step)]

    def blocks(self, dsts_per_block: int | None = None) -> Iterator[RoutingTables]:
        """The tables of destinations [first, last) for each range of ``ranges(dsts_per_block)``."""
        for first, last in self.ranges(dsts_per_block):
            yield self.block(first, last)

    def block(self, first: int, last: int) -> RoutingTables:
        """The entries of the tables whose destination PE is in [first, last), sorted as the tables are."""
        return self.grids(first, last).tables()

    def grids(self, first: int, last: int) -> BlockGrids:
        """Decisions and entry marks of destinations [first, last): the block's tables before compaction."""
        present, decisions, arrive, reached = _entry_cells(self, np.arange(first, last, dtype=np.int64))
        return BlockGrids(self, first, last, present, decisions, arrive, reached)

    def _compact(self, first: int, present: np.ndarray, decisions: tuple[np.ndarray, ...]) -> RoutingTables:
        """The block's tables: one entry per marked cell, with its card's decision (and ``refine``)."""
        cell = np.flatnonzero(present)
        if present.size < 1 << 31:
            cell = cell.astype(np.int32)
        columns = _entry_columns(self, cell, decisions, first)
        if self.refine is not None:
            columns[5], columns[6] = self.refine(*columns[:3], *columns[4:])
        return self.tables(columns)

    def build(self) -> RoutingTables:
        """The whole tables: every destination's entries."""
        parts = [columns_of(block) for block in self.blocks(self.default_block())]
        return self.tables(
            [
                np.concatenate([part[i] for part in parts]) if parts else np.zeros(0, dtype)
                for i, dtype in enumerate(DTYPES)
            ]
        )

    def tables(self, columns: list[np.ndarray]) -> RoutingTables:
        """RoutingTables of entry columns (card, ingress, dst, class, egress, VC, use), same conventions."""
        card, in_port, dst, cls, egress, vc, use = (
            np.asarray(column, dtype=dtype) for column, dtype in zip(columns, DTYPES, strict=True)
        )
        return RoutingTables(
            algorithm=self.algorithm,
            topology=self.network.topology,
            network=self.network,
            card_id=card,
            ingress_port=in_port,
            dst_pe=dst,
            routing_class=cls,
            egress_port=egress,
            vc=vc,
            use=use,
            source_class=self.source_class,
            num_classes=self.num_classes,
            queue_rule=self.queue_rule,
            vc_names=self.vc_names,
            notes=list(self.notes),
        )


@dataclass(frozen=True)
class BlockGrids:
    """One block's tables as the builder holds them before compaction (what the analysis follows).

    Per (destination, class, card) of the block, shape (count, classes, cards):
    the decision (``egress``, ``vc``, ``use``), ``arrive`` (the link id
    card * width + port at the far end of the egress link, -1 at a host) and
    ``reached`` (some packet of the class gets to the card). ``present`` marks
    the entries over the dense (destination, class, card, port) cells, in table
    order: ``tables()`` is exactly ``TableSpec.block(first, last)``.
    """

    spec: TableSpec
    first: int
    last: int
    present: np.ndarray
    decisions: tuple[np.ndarray, ...]
    arrive: np.ndarray
    reached: np.ndarray

    def tables(self) -> RoutingTables:
        """The block's route tables (the entries the installer writes for these destinations)."""
        return self.spec._compact(self.first, self.present, self.decisions)


def columns_of(tables: RoutingTables) -> list[np.ndarray]:
    """The entry columns of `tables` in the builder's order (card, ingress, dst, class, egress, VC, use)."""
    return [
        tables.card_id,
        tables.ingress_port,
        tables.dst_pe,
        tables.routing_class,
        tables.egress_port,
        tables.vc,
        tables.use,
    ]


def table_spec(
    algorithm: str,
    network: CardNetwork,
    decide: Decide,
    *,
    source_class: np.ndarray | None = None,
    num_classes: int = 1,
    queue_rule: str = "vc",
    vc_names: dict[str, dict[int, str]] | None = None,
    notes: list[str] | None = None,
    refine: Refine | None = None,
    refine_uses: tuple[int, ...] | None = None,
) -> TableSpec:
    """The TableSpec of an algorithm's rule (source_class defaults to class 0 for every PE)."""
    if source_class is None:
        source_class = np.zeros(network.num_pes, dtype=np.int8)
    return TableSpec(
        algorithm,
        network,
        decide,
        np.asarray(source_class, dtype=np.int8),
        num_classes,
        queue_rule,
        vc_names or {},
        list(notes or []),
        refine,
        refine_uses,
    )


def build_tables(algorithm: str, network: CardNetwork, decide: Decide, **conventions) -> RoutingTables:
    """Evaluate `decide` for every card and destination and keep, as tables, the entries on paths."""
    return table_spec(algorithm, network, decide, **conventions).build()


def _entry_cells(
    spec: TableSpec, dsts: np.ndarray
) -> tuple[np.ndarray, tuple[np.ndarray, ...], np.ndarray, np.ndarray]:
    """Entries on paths, marked over the dense (destination, class, card, port) cells of a block.

    Per class the rule decides on every card for every destination at once (a
    destinations x cards grid), the cards packets reach are marked, and each
    reached card marks the entry it sends to: the far end of its egress link.
    The source PEs mark their host ports. Returns the marks (in table order,
    plus one spare cell at the end that absorbs the writes of unmarked cells)
    and the decisions (egress, VC, use), the far ends of the egress links and
    the reached flags per (destination, class, card).
    """
    network, num_classes = spec.network, spec.num_classes
    num_cards, width, count = network.num_cards, network.max_port + 1, dsts.size
    spare = count * num_classes * num_cards * width
    present = np.zeros(spare + 1, dtype=bool)
    decisions = tuple(np.empty((count, num_classes, num_cards), dtype=dtype) for dtype in DTYPES[4:])
    arrivals = np.empty((count, num_classes, num_cards), dtype=np.int32)
    reached_all = np.empty((count, num_classes, num_cards), dtype=bool)
    cards = np.arange(num_cards, dtype=np.int32)[None, :]
    arrival = network.far_end
    for cls in range(num_classes):
        egress, vc, use = (
            np.broadcast_to(np.asarray(a), (count, num_cards)) for a in spec.decide(cards, dsts[:, None], cls)
        )
        _check_ports(network, egress, dsts)
        link = cards * np.int32(width) + egress.astype(np.int32)
        arrive = arrival.take(link)
        reached = _reached(network, spec.source_class, cls, dsts, arrive)
        _check_exits(network, reached, arrive, link, dsts)
        base = ((np.arange(count, dtype=np.int64) * num_classes + cls) * (num_cards * width))[:, None]
        present[np.where(reached & (arrive >= 0), base + arrive, spare)] = True
        of_class = np.flatnonzero(spec.source_class == cls)
        host_cell = network.pe_card[of_class].astype(np.int64) * width + network.pe_port[of_class]
        present[(base + host_cell[None, :]).ravel()] = True
        own = np.flatnonzero(spec.source_class[dsts] == cls)
        present[base[own, 0] + host_cell[np.searchsorted(of_class, dsts[own])]] = False
        for grid, value in zip(decisions, (egress, vc, use), strict=True):
            grid[:, cls, :] = value
        arrivals[:, cls, :] = arrive
        reached_all[:, cls, :] = reached
    return present[:spare], decisions, arrivals, reached_all


def _entry_columns(
    spec: TableSpec, cell: np.ndarray, decisions: tuple[np.ndarray, ...], first: int
) -> list[np.ndarray]:
    """Entry columns (card, ingress, dst, class, egress, VC, use) of the marked cells `cell`."""
    network = spec.network
    width, cards, classes = (
        np.asarray(x, dtype=cell.dtype) for x in (network.max_port + 1, network.num_cards, spec.num_classes)
    )
    at = cell // width  # (destination, class, card) of the block; division by a scalar, not divmod (slow)
    port = cell - at * width
    rest = at // cards
    card = at - rest * cards
    column = rest // classes
    cls = rest - column * classes
    return [card, port, column + first, cls, *(grid.ravel()[at] for grid in decisions)]


def _reached(
    network: CardNetwork, source_class: np.ndarray, cls: int, dsts: np.ndarray, arrive: np.ndarray
) -> np.ndarray:
    """Per (destination, card) of the block: does some packet of class `cls` get to the card?

    The first cards are those with a source PE of this class, for every
    destination but that PE itself; then the cards the decisions lead to from
    them (kernels.reach).
    """
    num_cards, count = network.num_cards, dsts.size
    of_class = source_class == cls
    per_card = np.bincount(network.pe_card[of_class], minlength=num_cards)
    reached = np.repeat((per_card > 0)[None, :], count, axis=0)
    lonely = of_class[dsts] & (per_card[network.pe_card[dsts]] == 1)
    reached[np.flatnonzero(lonely), network.pe_card[dsts[lonely]]] = False
    kernels.reach(reached, arrive, network.card_of_link)
    return reached


def _check_ports(network: CardNetwork, egress: np.ndarray, dsts: np.ndarray) -> None:
    """Refuse an egress port number that is not a port of the card."""
    bad = (egress < 0) | (egress > network.max_port)
    if bad.any():
        row, card = (int(i[0]) for i in np.nonzero(bad))
        raise BlackHoleError(
            f"routing for PE {int(dsts[row])} leaves card {network.card_names[card]} "
            f"port {int(egress[row, card])}, which has no link"
        )


def _check_exits(
    network: CardNetwork, reached: np.ndarray, arrive: np.ndarray, link: np.ndarray, dsts: np.ndarray
) -> None:
    """Refuse a decision on a reached card that leaves by an unconnected port or hands the packet to
    another host."""
    # a flat index then divided: np.nonzero of a 2-D grid is several times slower (few cells deliver)
    rows, cards = np.divmod(np.flatnonzero(reached & (arrive < 0)), arrive.shape[1])
    hosts = network.host_at.ravel()[link[rows, cards]]
    wrong = np.flatnonzero(hosts != dsts[rows])
    if not wrong.size:
        return
    i = wrong[np.argmin(cards[wrong])]  # the lowest card, as a walk over cards would meet it first
    card, port = int(cards[i]), int(link[rows[i], cards[i]]) % (network.max_port + 1)
    wanted = int(dsts[rows[i]])
    where = f"card {network.card_names[card]} port {port} ({network.port_name(card, port)})"
    if hosts[i] < 0:
        raise BlackHoleError(f"routing for PE {wanted} leaves {where}, which has no link")
    raise MisdeliveryError(f"routing for PE {wanted} delivers to PE {int(hosts[i])} at {where}")
