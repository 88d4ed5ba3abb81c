"""The analysis of one block of destinations followed on its cards, from the builder's grids.

Every card decides once per (destination, class) whatever the ingress port, so
the tables' forwarding relation of a destination is a tree of cards: a card's
entries (one per ingress port on a path) all send on the card's egress link to
the next card. Remaining links, path counts, loads and channel dependencies are
therefore followed on the (destination, class, card) grid of
``TableSpec.grids`` (half the cells of the entries, no successor look-up), and
only the per-link and per-channel load sums go over the entries, in table order,
so that every figure is the one ``AllPairs`` + ``Totals.add`` give bit for bit:

* an entry's load is its path's weight (first hop) or the load of the card it
  comes from, and a card's load is its first hops' weights added in port order,
  then its inner entries' loads in port order (``AllPairs.loads``'s order);
* link and channel loads add the entries' loads one by one in table order
  (as one running sum would).

The loops over the cells that numpy needs several passes for (remaining links, the cards' loads,
the fold in table order, the dependency flags) are compiled: ``controller.kernels``.

A ``refine`` step (ingress-dependent VC and use: DESTRO's descending crossings)
makes VCs, queues and uses per entry. It is asked about the entries of the
cards whose decision has one of the spec's ``refine_uses``; if it changes one,
the block's VCs, queues and uses are read from the compacted block, the very
entries the installer writes.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from controller import kernels
from controller.analysis.paths import AllPairs
from controller.analysis.totals import CROSSING_USES, Totals, running_sum
from controller.routing.builder import BlockGrids, TableSpec
from controller.routing.network import EXTERNAL, HOST, INTERNAL
from controller.routing.table import queue_number

#: per link kind (network.py's codes): the links it adds to a path, packed external << 16 | internal
PACKED_LINKS = np.zeros(max(EXTERNAL, INTERNAL, HOST) + 1, dtype=np.int32)
PACKED_LINKS[EXTERNAL], PACKED_LINKS[INTERNAL] = 1 << 16, 1

#: (destination, card) cells per block of the follow: its arrays then stay in the caches
#: (measured on 3DT 16x16x16: 250k cells ~1.4x faster than 500k, 60k slower again)
FOLLOW_CELLS = 200_000


class CardFollow:
    """Per-spec constants of the follow: host ports by card and class, in port order."""

    def __init__(self, spec: TableSpec) -> None:
        net = spec.network
        self.spec = spec
        self.width = net.max_port + 1
        self.cards = net.num_cards
        self.classes = spec.num_classes
        #: per class, the cards with source PEs of that class and a (slots, those cards) array of their
        #: PEs in port order (-1: fewer PEs on that card)
        self.slots: list[tuple[np.ndarray, np.ndarray]] = []
        #: per class, the number of its source PEs on each card
        self.sources = np.zeros((self.classes, self.cards), dtype=np.int64)
        order = np.lexsort((net.pe_port, net.pe_card))
        for cls in range(self.classes):
            pes = order[spec.source_class[order] == cls]
            cards = net.pe_card[pes]
            per_card = np.bincount(cards, minlength=self.cards)
            self.sources[cls] = per_card
            slot = np.arange(pes.size) - np.searchsorted(cards, cards)  # rank on its card
            table = np.full((int(per_card.max(initial=0)), self.cards), -1, dtype=np.int64)
            table[slot, cards] = pes
            having = np.flatnonzero(per_card)
            self.slots.append((having, table[:, having]))
        link = np.arange(self.cards * self.width, dtype=np.int32)
        #: per link id card * width + port: the port
        self.port_of_link = link % self.width
        #: per link id card * width + port, where the load of an entry there is read in its row of the
        #: fold's loads (a row: the cells' loads, then the PEs' weights): an inner entry's at the card at
        #: the far end of its ingress link, a first hop's at its PE's weight
        host, peer = net.host_at.ravel(), net.peer_card.ravel()
        self.source_at = np.where(host >= 0, self.cards + host, np.maximum(peer, 0)).astype(np.int32)

    def add(self, totals: Totals, grids: BlockGrids, matrix: np.ndarray | None = None) -> None:
        """Add the block's figures to `totals` (with `matrix`, the traffic's PEs x block weights)."""
        _Block(self, grids).add(totals, matrix)


class _Block:
    """The grids of one block with what is derived from them; ``add`` puts the figures into Totals."""

    def __init__(self, follow: CardFollow, grids: BlockGrids) -> None:
        self.follow, self.grids = follow, grids
        spec, net = follow.spec, follow.spec.network
        width, cards, classes = follow.width, follow.cards, follow.classes
        self.count = grids.last - grids.first
        self.rows = self.count * classes
        egress, self.vc, self.use = (d.reshape(self.rows, cards) for d in grids.decisions)
        self.egress = egress
        self.arrive = grids.arrive.reshape(self.rows, cards)
        self.reached = grids.reached.reshape(self.rows, cards)
        self.link = np.arange(cards, dtype=np.int32)[None, :] * np.int32(width) + egress.astype(np.int32)
        self.kind = net.port_kind.ravel().take(self.link)
        self.moving = self.reached & (self.arrive >= 0)
        #: every card of every row is reached (a torus: a PE on every card)
        self.everywhere = bool(self.reached.all())
        rowbase = (np.arange(self.rows, dtype=np.int32) * np.int32(cards))[:, None]
        #: the (destination, class, card) cell each cell's packets go to next
        self.parent = rowbase + self.arrive // np.int32(width)
        # sources per cell: the class's PEs on the card, but not the destination itself
        sources = np.broadcast_to(follow.sources[None, :, :], (self.count, classes, cards)).copy()
        dsts = np.arange(grids.first, grids.last)
        own = spec.source_class[dsts].astype(np.int64)
        sources[np.arange(self.count), own, net.pe_card[dsts]] -= 1
        self.sources = sources.reshape(self.rows, cards)
        cls = np.tile(np.arange(classes, dtype=np.int16), self.count)[:, None]
        self.queue = queue_number(spec.queue_rule, cls, self.vc)
        self._remaining()

    # -- the tree of each destination ---------------------------------------------------------------

    def _remaining(self) -> None:
        """External and internal links from each reached card to delivery, along the cells' parent
        pointers (kernels.rest_links); a pointer that never reaches delivery is a loop (AllPairs of the
        block then names it). The links are counted packed, external << 16 | internal."""
        value = PACKED_LINKS.take(self.kind).ravel()
        if not self.everywhere:
            value[~self.reached.ravel()] = 0
        rest, loop = kernels.rest_links(value, self.parent, self.moving)
        if loop >= 0:
            grids = self.grids
            AllPairs(grids.tables(), grids.first, grids.last)  # raises RoutingLoopError with a pair
            raise AssertionError("a loop in the grids that the block's tables do not show")
        #: per cell, its links to delivery packed external << 16 | internal
        self.rest = rest.reshape(self.rows, -1)
        self.rest_external, self.rest_internal = self.rest >> 16, self.rest & ((1 << 16) - 1)

    def _card_loads(self, heads: np.ndarray) -> np.ndarray:
        """Load through each cell when its first hops carry `heads` (added in port order): the cell's
        first hops, then the cells that send to it, in the order of the ports they arrive on (the
        order AllPairs.loads adds them in), each complete before it is added (kernels.card_loads)."""
        load = np.array(heads, dtype=np.float64).reshape(self.rows, -1)
        kernels.card_loads(load, self.parent, self.moving, self.rest, self.arrive, self.follow.port_of_link)
        return load.ravel()

    def _head_weights(self, matrix: np.ndarray) -> np.ndarray:
        """First hops' weights per cell added in port order (w1 + w2 ...; 0.0 without), from the PEs x
        block weight matrix (a PE's weight to itself is 0 there, so adding it changes nothing)."""
        follow = self.follow
        heads = np.zeros((self.count, follow.classes, follow.cards))
        padded = None  # row -1: no PE, weight 0.0 (only the second and later slots have gaps)
        for cls, (cards, slots) in enumerate(follow.slots):
            if not slots.size:
                continue
            total = matrix[slots[0]]  # 0.0 + w1 is w1
            for pes in slots[1:]:
                if padded is None:
                    padded = np.concatenate((matrix, np.zeros((1, matrix.shape[1]))))
                total += padded[pes]
            heads[:, cls, cards] = total.T
        return heads.reshape(self.rows, follow.cards)

    @cached_property
    def cells(self) -> np.ndarray:
        """The entries' dense (destination, class, card, port) cells, in table order."""
        cell = np.flatnonzero(self.grids.present)
        return cell.astype(np.int32) if cell.size and cell[-1] < 1 << 31 else cell

    # -- per entry (table order) --------------------------------------------------------------------

    def _entries(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(cell of each entry's card, link id card * width + ingress port, is a first hop), table order."""
        width, cards = self.follow.width, self.follow.cards
        cell = self.cells
        at = cell // width
        port = cell - at * width
        card = at % cards
        arrival = card * width + port
        first = self.follow.spec.network.port_kind.ravel()[arrival] == HOST
        return at, arrival, first

    def _entry_loads(
        self, at: np.ndarray, arrival: np.ndarray, first: np.ndarray, load: np.ndarray, matrix: np.ndarray
    ) -> np.ndarray:
        """Each entry's load: its path's weight (first hop) or the load of the cell it comes from."""
        net = self.follow.spec.network
        cards = self.follow.cards
        card = at % cards
        came_from = (at - card) + net.peer_card.ravel()[arrival]
        column = at // (cards * self.follow.classes)
        values = load[np.where(first, 0, came_from)]
        heads = np.flatnonzero(first)
        values[heads] = matrix[net.host_at.ravel()[arrival[heads]], column[heads]]
        return values

    def _refine_changes(self) -> bool:
        """Does ``refine`` give some entry of the block another VC or use than its card's decision?
        (If not, the block is followed per card; else per entry, from the compacted tables.) Only the
        entries of cards whose decision has one of the spec's ``refine_uses`` are asked."""
        follow = self.follow
        spec = follow.spec
        cells = self.reached.ravel()
        if spec.refine_uses is not None:
            cells = cells & _among(self.use.ravel(), spec.refine_uses)
        at = np.flatnonzero(cells)
        marks = self.grids.present.reshape(-1, follow.width)[at]
        where, ingress = np.nonzero(marks)
        if not where.size:
            return False
        at = at[where]
        row = at // follow.cards
        card = (at - row * follow.cards).astype(np.int32)
        dsts = (row // follow.classes + self.grids.first).astype(np.int32)
        vc, use = self.vc.ravel()[at], self.use.ravel()[at]
        egress = self.egress.ravel()[at]
        refined = spec.refine(card, ingress.astype(np.int16), dsts, egress, vc, use)  # type: ignore[misc]
        return bool(np.any(refined[0] != vc) or np.any(refined[1] != use))

    # -- the figures --------------------------------------------------------------------------------

    def add(self, totals: Totals, matrix: np.ndarray | None) -> None:
        spec = self.follow.spec
        cards = self.follow.cards
        inbound = self.sources + np.bincount(self.parent[self.moving], minlength=self.rows * cards).reshape(
            self.rows, cards
        )
        totals.entries += int(inbound.sum())
        totals.entries_per_card += inbound.sum(axis=0)
        self._add_hops(totals)
        refined = spec.refine is not None and self._refine_changes()
        tables = self.grids.tables() if refined else None
        entries = self._entries() if refined else None
        if tables is not None and entries is not None:
            at = entries[0]
            queue = tables.queues()
            kind = self.kind.ravel()[at]
            codes = kind.astype(np.int32) * 256 + tables.vc
            totals.vc_use += np.bincount(codes, minlength=totals.vc_use.size)
        else:
            reached = slice(None) if self.everywhere else self.reached  # every cell: no copies
            queue = self.queue[reached]
            codes = self.kind[reached].astype(np.int32) * 256 + self.vc[reached]
            used = np.bincount(codes.ravel(), weights=inbound[reached].ravel(), minlength=totals.vc_use.size)
            totals.vc_use += np.rint(used).astype(np.int64)
        top = int(queue.max(initial=-1))
        totals.max_queue = max(totals.max_queue, top)
        if refined:
            self._add_entry_dependencies(totals, entries, queue)
        else:
            self._add_dependencies(totals)
        unit = None
        if totals.crossings_per_card is not None:
            unit = self._card_loads(self.sources.astype(np.float64))
            if tables is not None and entries is not None:
                at, arrival, first = entries
                ones = np.broadcast_to(1.0, (spec.network.num_pes, self.count))
                per_entry = self._entry_loads(at, arrival, first, unit, ones)
                crossing = _among(tables.use, CROSSING_USES)
                totals.crossings_per_card += np.bincount(
                    tables.card_id[crossing], weights=per_entry[crossing], minlength=cards
                )
            else:
                crossing = _among(self.use, CROSSING_USES) & self.reached
                totals.crossings_per_card += np.bincount(
                    np.nonzero(crossing)[1], weights=unit.reshape(self.rows, cards)[crossing], minlength=cards
                )
        if matrix is not None and totals.link_load is not None and totals.channel_load is not None:
            load = self._card_loads(self._head_weights(matrix))
            if top >= totals.queue_stride:
                totals._widen(top + 1)
            if not refined:
                self._fold_loads(totals, load, matrix)
                return
            assert entries is not None
            at, arrival, first = entries
            values = self._entry_loads(at, arrival, first, load, matrix)
            link = self.link.ravel()[at]
            totals.link_load = running_sum(totals.link_load, link, values)
            dtype = np.int32 if totals.channel_load.size < 1 << 31 else np.int64
            entry_queue = queue if refined else self.queue.ravel()[at]
            channel = link.astype(dtype) * totals.queue_stride + entry_queue
            totals.channel_load = running_sum(totals.channel_load, channel, values)

    def _fold_loads(self, totals: Totals, load: np.ndarray, matrix: np.ndarray) -> None:
        """Link and channel loads, each entry's load added one by one in table order (kernels.fold_loads).

        Each entry's load is read where it comes from (``CardFollow.source_at``): an inner entry's from
        the cell of the card at the far end of its ingress link, a first hop's from the weight matrix.
        A card's entries all send on its link and channel.
        """
        assert totals.link_load is not None and totals.channel_load is not None
        follow = self.follow
        kernels.fold_loads(
            self.grids.present,
            load.reshape(self.rows, -1),
            matrix,
            follow.source_at,
            self.link,
            self.queue,
            totals.link_load,
            totals.channel_load,
            follow.classes,
            totals.queue_stride,
        )

    def _add_hops(self, totals: Totals) -> None:
        """Hop figures of the block's paths: a source's path has its first card's remaining links.

        Maxima are taken over every cell: a card reached only in transit is on the path of some
        source upstream, whose remaining links include its own (cells never reached hold 0).
        """
        sources = self.sources.ravel()
        paths = int(sources.sum())
        totals.paths += paths
        if not paths:
            return
        external, internal = self.rest_external.ravel(), self.rest_internal.ravel()
        external_sum, internal_sum = int(np.dot(sources, external)), int(np.dot(sources, internal))
        totals.external_sum += external_sum
        totals.internal_sum += internal_sum
        totals.links_sum += external_sum + internal_sum
        totals.external_max = max(totals.external_max, int(external.max()))
        totals.internal_max = max(totals.internal_max, int(internal.max()))
        totals.links_max = max(totals.links_max, int((external + internal).max()))
        totals.paths_with_internal += int(np.dot(sources, internal > 0))

    def _add_dependencies(self, totals: Totals) -> None:
        """Channels and dependencies per cell: a card's entries share its channel; the next card's
        entry from it holds the dependency's second channel."""
        found = totals.dependencies
        reached = self.reached
        if not self.everywhere and not reached.any():
            return
        found._grow(int((self.queue if self.everywhere else self.queue[reached]).max()) + 1)
        s, width = found.stride, self.follow.width
        card_link = self.kind != HOST
        if not self.everywhere:
            card_link &= reached
        card_link = card_link.ravel()
        kernels.dependencies(
            card_link,
            self.parent,
            self.link,
            self.egress,
            self.queue,
            found.channel_flags,
            found.edge_flags[:-1],
            width,
            s,
        )

    def _add_entry_dependencies(self, totals: Totals, entries, queue: np.ndarray) -> None:
        """Channels and dependencies per entry (VCs that depend on the ingress port)."""
        found = totals.dependencies
        at, arrival, first = entries
        if not at.size:
            return
        found._grow(int(queue.max()) + 1)
        s, width = found.stride, self.follow.width
        dtype = np.int32 if found.edge_flags.size < 1 << 31 else np.int64
        link = self.link.ravel()[at].astype(dtype)
        card_link = self.kind.ravel()[at] != HOST
        channel = link * s + queue
        found.channel_flags[channel[card_link]] = True
        # the entry each entry leads to: the marked cell at the far end of its card's egress link
        rank = np.cumsum(self.grids.present, dtype=np.int32 if at.size < 1 << 31 else np.int64) - 1
        cards = self.follow.cards
        rowbase = (at - at % cards) * width
        after = rank[np.where(card_link, rowbase + self.arrive.ravel()[at], 0)]
        follows = card_link & card_link[after]
        tail = self.egress.ravel()[at].astype(dtype) * s + queue
        spare = found.edge_flags.size - 1
        found.edge_flags[np.where(follows, channel * (width * s) + tail[after], spare)] = True


def _among(codes: np.ndarray, chosen: tuple[int, ...]) -> np.ndarray:
    """``np.isin(codes, chosen)`` for one-byte codes (uses), read from a table of the 256 values (np.isin
    sorts: ten times slower)."""
    if codes.dtype.itemsize != 1:
        return np.isin(codes, chosen)
    table = np.zeros(256, dtype=bool)
    table[np.asarray(chosen, dtype=codes.dtype).view(np.uint8)] = True
    return table.take(codes.view(np.uint8))
