"""Turn an algorithm's per-card next-hop rule into route tables holding exactly the entries on paths.

An algorithm supplies ``decide(cards, dsts, routing_class) -> (egress_port, vc,
use)``, vectorised over numpy arrays: what a card does with a packet for a
destination PE. The four algorithms of the papers (DESTRO, DOR, DORT, TS-DOR)
decide without looking at the ingress port; the tables still key on it, as
EXTOLL's per-input-port tables do, and an optional ``refine`` step may set a
VC or use from the ingress port (DESTRO names a descending internal hop so).

For each destination and class the builder marks the cards that some packet
reaches (starting from the source PEs of that class and following the
decisions), and emits one entry per (card, ingress port) on those paths:
the source PEs' host ports, and the port at the far end of every marked
card's egress link. That is "walk all pairs" with the cost of one pass per
destination instead of one per pair.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import numpy as np

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

#: largest dense array (cells of destination x class x card x port) a block is sorted with
DENSE_MERGE_CELLS = 32_000_000


class Decide(Protocol):
    """Next hop of packets on `cards` for destination PEs `dsts` (same shape) in one routing class."""

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
        network, num_classes = self.network, self.num_classes
        # source PEs in table order (class, card, host port): their first-hop entries come out sorted
        sources = np.lexsort((network.pe_port, network.pe_card, self.source_class))
        dsts = np.arange(first, last, dtype=np.int64)
        decisions = [
            _decisions(network, self.decide, dsts, cls, self.source_class) for cls in range(num_classes)
        ]
        first_hops = _first_hop_entries(network, dsts, sources, self.source_class, decisions)
        later = [_later_entries(network, dsts, cls, decision) for cls, decision in enumerate(decisions)]
        later_hops = [np.concatenate(column) for column in zip(*later, strict=True)]
        columns = _merge(network, num_classes, first_hops, later_hops, first)
        if self.refine is not None:
            columns[5], columns[6] = self.refine(*columns[:3], *columns[4:])
        return self.tables(columns)

    def build(self) -> RoutingTables:
        """The whole tables: every destination's entries."""
        parts = [_columns(block) for block in self.blocks(self.default_block())]
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


def _columns(tables: RoutingTables) -> list[np.ndarray]:
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
    )


def build_tables(algorithm: str, network: CardNetwork, decide: Decide, **conventions) -> RoutingTables:
    """Evaluate `decide` for every card and destination and keep, as tables, the entries on paths."""
    return table_spec(algorithm, network, decide, **conventions).build()


class _Decisions(NamedTuple):
    """One class's decisions for a block of destinations, per (card, destination): arrays of shape C x D."""

    egress: np.ndarray
    vc: np.ndarray
    use: np.ndarray
    next_card: np.ndarray
    next_port: np.ndarray
    reached: np.ndarray


def _decisions(
    network: CardNetwork, decide: Decide, dsts: np.ndarray, cls: int, source_class: np.ndarray
) -> _Decisions:
    """Decide on every card for every destination of the block, and mark the cards packets of `cls` reach."""
    num_cards, width = network.num_cards, dsts.size
    card_grid = np.repeat(np.arange(num_cards, dtype=np.int64), width)
    dst_grid = np.tile(dsts, num_cards)
    egress, vc, use = (
        np.asarray(a).astype(dtype, copy=False).reshape(num_cards, width)
        for a, dtype in zip(decide(card_grid, dst_grid, cls), DTYPES[4:], strict=True)
    )
    flat_egress = egress.ravel()
    next_card = network.peer_card[card_grid, flat_egress].reshape(num_cards, width)
    next_port = network.peer_port[card_grid, flat_egress].reshape(num_cards, width)
    host = network.host_at[card_grid, flat_egress].reshape(num_cards, width)

    # first cards: those with a source PE of this class, for every destination but that PE itself
    of_class = source_class == cls
    per_card = np.bincount(network.pe_card[of_class], minlength=num_cards)
    reached = np.repeat(per_card[:, None] > 0, width, axis=1)
    lonely = of_class[dsts] & (per_card[network.pe_card[dsts]] == 1)
    reached[network.pe_card[dsts[lonely]], np.flatnonzero(lonely)] = False
    frontier = reached.copy()
    while True:
        rows, cols = np.nonzero(frontier)
        targets = next_card[rows, cols]
        _check_exits(network, rows, cols, dsts, egress, targets, host)
        moving = targets >= 0
        new = np.zeros_like(reached)
        new[targets[moving], cols[moving]] = True
        new &= ~reached
        if not new.any():
            break
        reached |= new
        frontier = new
    return _Decisions(egress, vc, use, next_card, next_port, reached)


def _first_hop_entries(
    network: CardNetwork,
    dsts: np.ndarray,
    sources: np.ndarray,
    source_class: np.ndarray,
    decisions: list[_Decisions],
) -> list[np.ndarray]:
    """Entries on the source PEs' host ports, sorted by (destination, class, card, port)."""
    column = np.repeat(np.arange(dsts.size, dtype=np.int32), sources.size)
    src = np.tile(sources.astype(np.int32), dsts.size)
    keep = src != dsts[column]
    column, src = column[keep], src[keep]
    card, port, cls = network.pe_card[src], network.pe_port[src], source_class[src]
    egress, vc, use = (np.empty(src.size, dtype=dtype) for dtype in DTYPES[4:])
    for c, decision in enumerate(decisions):
        mine = cls == c if len(decisions) > 1 else slice(None)
        at = (card[mine], column[mine])
        egress[mine], vc[mine], use[mine] = decision.egress[at], decision.vc[at], decision.use[at]
    return [card, port, dsts[column], cls, egress, vc, use]


def _later_entries(
    network: CardNetwork, dsts: np.ndarray, cls: int, decision: _Decisions
) -> list[np.ndarray]:
    """Entries at the far end of every reached card's egress link (unsorted)."""
    rows, cols = np.nonzero(decision.reached & (decision.next_card >= 0))
    card, column = decision.next_card[rows, cols], cols
    at = (card, column)
    return [
        card,
        decision.next_port[rows, cols],
        dsts[column],
        np.full(card.size, cls, dtype=np.int8),
        decision.egress[at],
        decision.vc[at],
        decision.use[at],
    ]


def _merge(
    network: CardNetwork, num_classes: int, first: list[np.ndarray], later: list[np.ndarray], dst0: int = 0
) -> list[np.ndarray]:
    """Both entry lists as one, sorted by (destination, class, card, ingress port).

    Each entry's key (destinations counted from `dst0`) is a cell of a dense array
    over all (destination, class, card, port) of the block; reading the marked
    cells in order sorts without comparisons. Blocks too large for that sort the
    later entries and insert them into the already sorted first-hop entries.
    """
    width = network.max_port + 1
    span = int(first[2].max(initial=dst0) if first[2].size else dst0) - dst0 + 1
    if later[2].size:
        span = max(span, int(later[2].max()) - dst0 + 1)

    def key(columns: list[np.ndarray]) -> np.ndarray:
        card, port, dst, cls = (c.astype(np.int64) for c in columns[:4])
        return (((dst - dst0) * num_classes + cls) * network.num_cards + card) * width + port

    first_key, later_key = key(first), key(later)
    total = first_key.size + later_key.size
    cells = span * num_classes * network.num_cards * width
    if cells <= DENSE_MERGE_CELLS:
        slot = np.full(cells, -1, dtype=np.int64 if total >= 1 << 31 else np.int32)
        slot[first_key] = np.arange(first_key.size)
        slot[later_key] = np.arange(first_key.size, total)
        take = slot[np.flatnonzero(slot >= 0)]
        return [
            np.concatenate([a.astype(dtype, copy=False), b.astype(dtype, copy=False)])[take]
            for a, b, dtype in zip(first, later, DTYPES, strict=True)
        ]
    order = np.argsort(later_key)
    later_key = later_key[order]
    later_at = np.searchsorted(first_key, later_key) + np.arange(later_key.size)
    first_at = np.searchsorted(later_key, first_key) + np.arange(first_key.size)
    merged = []
    for a, b, dtype in zip(first, later, DTYPES, strict=True):
        out = np.empty(total, dtype=dtype)
        out[first_at] = a
        out[later_at] = b[order]
        merged.append(out)
    return merged


def _check_exits(
    network: CardNetwork,
    rows: np.ndarray,
    cols: np.ndarray,
    dsts: np.ndarray,
    egress: np.ndarray,
    targets: np.ndarray,
    host: np.ndarray,
) -> None:
    """Refuse a decision that leaves by an unconnected port or hands the packet to another host."""
    stuck = targets < 0
    if not stuck.any():
        return
    hosts = host[rows[stuck], cols[stuck]]
    wanted = dsts[cols[stuck]]
    wrong = hosts != wanted
    if wrong.any():
        i = int(np.flatnonzero(wrong)[0])
        card, port = int(rows[stuck][i]), int(egress[rows[stuck][i], cols[stuck][i]])
        where = f"card {network.card_names[card]} port {port} ({network.port_name(card, port)})"
        if hosts[i] < 0:
            raise BlackHoleError(f"routing for PE {int(wanted[i])} leaves {where}, which has no link")
        raise MisdeliveryError(f"routing for PE {int(wanted[i])} delivers to PE {int(hosts[i])} at {where}")
