"""All-pairs paths read from the route tables at once: per-entry successors, remaining hops, per-entry loads.

Every table entry is a hop (card, ingress port) -> egress port for one
(destination, class). Its successor is the entry the next card matches on
arrival, so for each (destination, class) the entries form an in-tree towards
the destination (a functional graph, when tables are broken). Instead of
walking N^2 pairs, the analysis

1. links every entry to its successor (dense look-up per block of destinations),
2. counts the external and internal links left to the destination by pointer
   doubling (log2 of the diameter rounds over all entries at once), which also
   proves there is no loop, and
3. pushes traffic weights down the trees level by level for loads.

The paths themselves start at the entries whose ingress port is a host port:
one per ordered pair (src, dst) of distinct PEs.

>>> from topologies.torus import torus
>>> from controller.routing import compute_tables
>>> pairs = AllPairs(compute_tables(torus((4, 4)), "dor"))
>>> pairs.num_paths, float(pairs.links().mean())
(240, 2.1333333333333333)
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from controller.routing.errors import (
    BlackHoleError,
    MisdeliveryError,
    MissingEntryError,
    RoutingError,
    RoutingLoopError,
)
from controller.routing.network import EXTERNAL, HOST, INTERNAL
from controller.routing.table import RoutingTables
from controller.routing.walker import walk

#: dense look-up cells per block when linking entries to their successors
CELLS_PER_BLOCK = 1 << 24


#: a reused look-up array of -1 (unset) cells, see _unset_cells
_UNSET: list[np.ndarray] = []


def _unset_cells(size: int) -> np.ndarray:
    """An int32 array of at least `size` cells, all -1; the caller sets cells and must unset them after.

    Kept from block to block: most cells of a block's dense look-up are never
    set (a fat tree's destination uses few of its cards' ports), so unsetting
    the few set ones costs far less than filling a new array per block.
    """
    if not _UNSET or _UNSET[0].size < size:
        _UNSET[:] = [np.full(size, -1, dtype=np.int32)]
    return _UNSET[0]


class AllPairs:
    """The paths of all ordered pairs of distinct PEs through `tables`, validated on construction.

    With ``first``/``last``, `tables` hold the entries of destinations [first,
    last) only (a block of ``TableSpec.blocks()``), and the paths are those of
    every source to these destinations. Raises MissingEntryError,
    BlackHoleError, MisdeliveryError or RoutingLoopError (with one affected
    source/destination pair in the message) when the tables do not deliver
    every pair.
    """

    def __init__(self, tables: RoutingTables, first: int = 0, last: int | None = None) -> None:
        self.tables = tables
        net = tables.network
        self.first = first
        self.last = net.num_pes if last is None else last
        self.width = net.max_port + 1
        card = tables.card_id.astype(np.int32)
        self.link = card * np.int32(self.width) + tables.egress_port  # the directed link each hop sends on
        self.kind = net.port_kind.ravel()[self.link]
        self._check_exits()
        self.succ = self._successors()
        arrival = card * np.int32(self.width) + tables.ingress_port
        self.first_hop = net.port_kind.ravel()[arrival] == HOST
        self.start = np.flatnonzero(self.first_hop)
        self.rest_external, self.rest_internal = self._remaining()
        self.src = net.host_at.ravel()[arrival[self.start]].astype(np.int64)
        self.dst = tables.dst_pe[self.start].astype(np.int64)
        self._check_starts()

    # -- construction -------------------------------------------------------------

    def _fail(self, error: type[RoutingError], entry: int, what: str) -> None:
        """Raise `error` for entry `entry`, naming a source/destination pair whose walk shows it."""
        t = self.tables
        dst, cls = int(t.dst_pe[entry]), int(t.routing_class[entry])
        where = (
            f"card {t.network.card_names[int(t.card_id[entry])]} ingress port {int(t.ingress_port[entry])} "
            f"destination {dst} class {cls}"
        )
        for src in np.flatnonzero(t.source_class == cls):
            if src == dst:
                continue
            try:
                walk(t, int(src), dst)
            except error as walked:
                raise error(f"{what} at {where}; e.g. {walked}") from None
            except RoutingError:
                continue
        raise error(f"{what} at {where}")

    def _check_exits(self) -> None:
        net, t = self.tables.network, self.tables
        hole = np.flatnonzero(self.kind == 0)
        if hole.size:
            self._fail(BlackHoleError, int(hole[0]), f"egress port {int(t.egress_port[hole[0]])} has no link")
        to_host = np.flatnonzero(self.kind == HOST)
        wrong = to_host[net.host_at.ravel()[self.link[to_host]] != t.dst_pe[to_host]]
        if wrong.size:
            host = int(net.host_at.ravel()[self.link[wrong[0]]])
            self._fail(MisdeliveryError, int(wrong[0]), f"delivers to PE {host}")

    def _successors(self) -> np.ndarray:
        """Index of the entry each hop leads to (-1 after delivery), by dense blocks of (dst, class).

        An entry's cell in a block is (dst, class) * cards * ports + card * ports + ingress port;
        the entry it leads to sits in the cell of the same (dst, class) at the far end of its link.
        """
        t, net = self.tables, self.tables.network
        width = self.width
        states = net.num_cards * width
        succ = np.full(len(t), -1, dtype=np.int32 if len(t) < 1 << 31 else np.int64)
        if not len(t):
            return succ
        group = t.dst_pe.astype(np.int64) * t.num_classes + t.routing_class
        state = t.card_id.astype(np.int32) * np.int32(width) + t.ingress_port
        moving = self.kind != HOST
        peer = net.peer_card.astype(np.int32) * np.int32(width) + net.peer_port
        next_state = np.where(moving, peer.ravel()[self.link], state)  # delivered: its own cell
        low, high = int(group[0]), int(group[-1]) + 1
        groups_per_block = max(1, min(CELLS_PER_BLOCK // states, high - low))
        dense = _unset_cells(groups_per_block * states)
        for first in range(low, high, groups_per_block):
            a, b = np.searchsorted(group, [first, first + groups_per_block])
            if a == b:
                continue
            local = (group[a:b] - first).astype(np.int32) * np.int32(states)
            cells = local + state[a:b]
            try:
                dense[cells] = np.arange(a, b, dtype=np.int32)
                found = dense[local + next_state[a:b]]
            finally:
                dense[cells] = -1  # unset again for the next chunk and the next block
            succ[a:b] = np.where(moving[a:b], found, -1)
            missing = np.flatnonzero(moving[a:b] & (found < 0))
            if missing.size:
                e = a + int(missing[0])
                nc, np_ = int(net.peer_card.ravel()[self.link[e]]), int(net.peer_port.ravel()[self.link[e]])
                self._fail(
                    MissingEntryError,
                    e,
                    f"next card {net.card_names[nc]} has no entry for ingress port {np_}",
                )
        return succ

    def _remaining(self) -> tuple[np.ndarray, np.ndarray]:
        """External and internal links from each entry to delivery, by pointer doubling; refuses loops.

        First hops (entries on a host port) are leaves: no entry leads to them. The
        doubling runs over the other entries only (the inner ones), with one extra
        sink entry that every finished pointer rests on; first hops then add their
        own hop. Counts are packed as external * 2^16 + internal in one int32.
        """
        packed = np.where(self.kind == EXTERNAL, np.int32(1 << 16), np.int32(0))
        packed += self.kind == INTERNAL
        inner = np.flatnonzero(~self.first_hop)
        sink = inner.size
        # position of each entry among inner ones; an extra last cell (index -1: no successor) is the sink
        position = np.full(len(packed) + 1, sink, dtype=np.int32)
        position[inner] = np.arange(sink, dtype=np.int32)
        pointer = np.append(position[self.succ[inner]], np.int32(sink))
        value = np.append(packed[inner], np.int32(0))
        rounds = math.ceil(math.log2(max(2, sink))) + 1
        for _ in range(rounds):
            if (pointer == sink).all():
                break
            value += value[pointer]
            pointer = pointer[pointer]
        if (pointer != sink).any():
            self._fail(RoutingLoopError, int(inner[np.flatnonzero(pointer != sink)[0]]), "packets loop")
        packed[inner] = value[:sink]
        packed[self.start] += value[position[self.succ[self.start]]]
        self._inner, self._inner_depth = inner, (value[:sink] >> 16) + (value[:sink] & ((1 << 16) - 1))
        return packed >> 16, packed & ((1 << 16) - 1)

    def _check_starts(self) -> None:
        t, n = self.tables, self.tables.network.num_pes
        first, span = self.first, self.last - self.first
        wrong_class = np.flatnonzero(t.routing_class[self.start] != t.source_class[self.src])
        if wrong_class.size:
            e = int(self.start[wrong_class[0]])
            raise RoutingError(
                f"entry at the first card of PE {int(self.src[wrong_class[0]])} for destination "
                f"{int(t.dst_pe[e])} has class {int(t.routing_class[e])}, but that PE's packets "
                f"get class {t.class_of_source(int(self.src[wrong_class[0]]))}"
            )
        if self.start.size != span * (n - 1):
            present = np.zeros(n * span, dtype=bool)
            present[self.src * span + self.dst - first] = True
            present[np.arange(first, first + span) * span + np.arange(span)] = True
            pair = int(np.flatnonzero(~present)[0])
            src, dst = divmod(pair, span)
            dst += first
            walk(t, src, dst)  # raises MissingEntryError with the place
            raise MissingEntryError(f"no path from PE {src} to PE {dst}")

    # -- results ------------------------------------------------------------------

    @cached_property
    def queues(self) -> np.ndarray:
        """Queue of every entry (``RoutingTables.queues``, computed once for the totals and the CDG)."""
        return self.tables.queues()

    @property
    def num_paths(self) -> int:
        """Ordered pairs of distinct PEs routed."""
        return int(self.start.size)

    def external(self) -> np.ndarray:
        """External card-to-card links of each path (order of ``src``/``dst``)."""
        return self.rest_external[self.start]

    def internal(self) -> np.ndarray:
        """Internal links of each path."""
        return self.rest_internal[self.start]

    def links(self) -> np.ndarray:
        """Card-to-card links (external + internal) of each path."""
        return self.external() + self.internal()

    def loads(self, weights: np.ndarray | None = None) -> np.ndarray:
        """Traffic through each entry when path i carries ``weights[i]`` (default 1: the number of paths).

        Each entry's load is its own path's weight (first hops) plus what its
        predecessors pass on, added in entry order: the first hops' first, then
        level after level of remaining links, deepest first.
        """
        load = np.zeros(len(self.tables), dtype=np.float64)
        load[self.start] = 1.0 if weights is None else weights
        moving = self.start[self.succ[self.start] >= 0]
        np.add.at(load, self.succ[moving], load[moving])
        for level, after in self._levels:
            np.add.at(load, after, load[level])
        return load

    @cached_property
    def _levels(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Inner entries that lead on, deepest first, in groups of equal remaining links: (entries,
        successors). Only deliveries have no links left, so the last group (0 links) is left out."""
        depth = self._inner_depth
        top = int(depth.max(initial=0))
        rank = np.argsort((top - depth).astype(np.uint16), kind="stable")  # radix sort, deepest first
        order = self._inner[rank]
        ordered = depth[rank]
        levels = np.split(order, np.flatnonzero(np.diff(ordered)) + 1)
        if ordered.size and ordered[-1] == 0:
            levels = levels[:-1]
        return [(level, self.succ[level]) for level in levels]

    def path_entries(self, path: int) -> list[int]:
        """Entry indices of path number `path` (0 .. num_paths-1), in hop order."""
        entries, e = [], int(self.start[path])
        while e >= 0:
            entries.append(e)
            e = int(self.succ[e])
        return entries

    def block_weights(self, matrix: np.ndarray) -> np.ndarray:
        """Path weights from a PEs x destinations matrix of pair weights (``Traffic.pair_weights``)."""
        return matrix[self.src, self.dst - self.first]

    def weights_of(self, src: np.ndarray, dst: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """Path weights from flow arrays (src, dst, weight); flows with src == dst are ignored."""
        n = self.tables.network.num_pes
        keys = self.src * n + self.dst
        order = np.argsort(keys)
        flows = np.asarray(src, dtype=np.int64) * n + np.asarray(dst, dtype=np.int64)
        keep = np.asarray(src) != np.asarray(dst)
        at = order[np.searchsorted(keys[order], flows[keep])]
        weights = np.zeros(self.num_paths)
        np.add.at(weights, at, np.asarray(weight, dtype=np.float64)[keep])
        return weights
