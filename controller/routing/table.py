"""The route-table model: per card, exact entries (ingress port, dst PE, routing class) -> (egress port, VC).

This is the single source of truth for routing (docs/contracts.md, "The route
table"): the controller installs exactly these entries, the emulation computes
the expected path of every probe from them, and the analysis reads them.

Mapping to the card program (p4src/card.p4), one entry = one P4Runtime entry:

* table ``route`` of card ``card_id``, **exact** match on
  ``standard_metadata.ingress_port == ingress_port``, ``hdr.tw.dst_pe ==
  dst_pe`` and ``hdr.tw.rclass == routing_class`` (one table per card, keyed
  per input port as EXTOLL's routing tables are);
* action ``set_route(port=egress_port, vc=vc)``: the packet leaves on
  ``egress_port`` carrying ``vc`` in its header.

Around it, the card's ``host_in`` table gives a host port's packets their
routing class (``class_of_source(pe)``), and ``vc_queue`` maps (class, VC) to
the port's priority queue ``queue_of(routing_class, vc)`` for every pair in
``queue_pairs()``.

Only the triples that occur on the model's paths are present (all ordered
pairs of distinct PEs walked through the algorithm), so a packet off those
paths misses the table and is dropped as "no route". The routing class is set
by the first card from the source PE (``class_of_source``): for TS-DOR the
card side of the source PE (PE0 -> 0, PE1 -> 1), 0 otherwise.

Every entry also records its ``use``: the meaning of the hop it makes
("external", "deliver" to the destination host, and for internal links the
uses docs/contracts.md names: "inject", "ring", "eject" on nDT tori;
"ascend", "turn", "descend" in twin fat trees). The use is documentation for
the analysis and reports; the card program does not match on it.

Entries are stored column-wise (numpy arrays) sorted by (dst_pe,
routing_class, card_id, ingress_port): networks of thousands of PEs have
millions of entries, which Python objects per entry could not hold.

>>> from topologies.torus import torus
>>> from controller.routing import compute_tables
>>> tables = compute_tables(torus((4,)), "dor")
>>> tables.lookup(0, tables.network.port_number(0, "pe"), 2, 0)   # node 0 to PE 2: d0+ (tie goes +), upper VC
(1, 0)
>>> tables.class_of_source(3), tables.queue_of(0, 1)
(0, 1)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from controller.routing.network import CardNetwork
from topologies.model import Topology

#: names of hop uses; ``RoutingTables.use`` holds indices into this tuple
USES: tuple[str, ...] = ("external", "deliver", "inject", "ring", "eject", "ascend", "turn", "descend")
USE_CODE = {name: code for code, name in enumerate(USES)}

#: queue rules: how (routing class, VC) becomes a port's priority queue
QUEUE_BY_VC = "vc"
QUEUE_BY_CLASS_AND_VC = "2*class+vc"


def queue_number(rule: str, routing_class, vc):
    """The port's priority queue of (routing class, VC) under queue `rule` (ints or numpy arrays)."""
    if rule == QUEUE_BY_CLASS_AND_VC:
        return 2 * routing_class + vc
    return vc


class RouteEntry(NamedTuple):
    """One table entry: the match (card, ingress port, destination PE, routing class) and the action."""

    card_id: int
    ingress_port: int
    dst_pe: int
    routing_class: int
    egress_port: int
    vc: int
    use: str


@dataclass
class RoutingTables:
    """All cards' route tables for one topology and algorithm, with the VC and class conventions they use.

    ``vc_names`` documents every VC per link kind ("external", "internal",
    "host"), e.g. ``{"internal": {0: "eject", 1: "inject", 2: "ring d1 upper",
    3: "ring d1 lower"}}``; ``notes`` records the choices the papers leave open
    (tie rules, which of r internal links, ...).
    """

    algorithm: str
    topology: Topology
    network: CardNetwork
    card_id: np.ndarray
    ingress_port: np.ndarray
    dst_pe: np.ndarray
    routing_class: np.ndarray
    egress_port: np.ndarray
    vc: np.ndarray
    use: np.ndarray
    source_class: np.ndarray
    num_classes: int
    queue_rule: str
    vc_names: dict[str, dict[int, str]]
    notes: list[str] = field(default_factory=list)
    _keys: np.ndarray | None = field(default=None, repr=False)
    _queues_per_port: int | None = field(default=None, repr=False)

    # -- conventions ------------------------------------------------------------

    def class_of_source(self, pe: int) -> int:
        """Routing class the first card assigns to packets from PE `pe`."""
        return int(self.source_class[pe])

    def queue_of(self, routing_class: int, vc: int) -> int:
        """Priority queue of a port that (class, VC) uses: 2*class+vc for TS-DOR, vc otherwise."""
        return queue_number(self.queue_rule, routing_class, vc)

    def queues(self) -> np.ndarray:
        """Queue of every entry (same order as the entry columns)."""
        return queue_number(self.queue_rule, self.routing_class.astype(np.int16), self.vc)

    def link_kinds(self) -> np.ndarray:
        """Kind of the link each entry sends onto (network.EXTERNAL / INTERNAL / HOST codes)."""
        return self.network.port_kind[self.card_id, self.egress_port]

    def vcs_per_link(self) -> dict[str, int]:
        """Number of distinct VCs the entries use, per link kind ("external", "internal", "host")."""
        kinds = self.link_kinds()
        result = {}
        for code, name in ((1, "external"), (2, "internal"), (3, "host")):
            used = np.count_nonzero(np.bincount(self.vc[kinds == code].astype(np.int64)))
            if used:
                result[name] = int(used)
        return result

    def vcs_by_use(self) -> dict[str, list[int]]:
        """VCs each hop use takes, e.g. DORT, CBest: {'eject': [0], 'inject': [1], 'ring': [2, 3], ...}."""
        pairs = np.flatnonzero(np.bincount(self.use.astype(np.int64) * 256 + self.vc))
        result: dict[str, list[int]] = {}
        for value in pairs.tolist():
            result.setdefault(USES[value // 256], []).append(value % 256)
        return result

    def queue_pairs(self) -> list[tuple[int, int, int]]:
        """Every (routing class, VC, queue) the entries use: the ``vc_queue`` entries a card needs."""
        used = np.flatnonzero(np.bincount(self.routing_class.astype(np.int64) * 256 + self.vc))
        return [(int(v // 256), int(v % 256), self.queue_of(int(v // 256), int(v % 256))) for v in used]

    def queues_per_port(self) -> int:
        """Number of priority queues a port needs: the highest queue index used plus one."""
        if self._queues_per_port is None:
            self._queues_per_port = int(self.queues().max()) + 1 if len(self) else 0
        return self._queues_per_port

    def replaced(self, **changes: Any) -> RoutingTables:
        """A copy with some fields replaced (e.g. other ``vc`` or entry columns), re-sorted, caches dropped.

        For experiments on the tables themselves (negative controls, broken tables in tests).
        """
        copy = dataclasses.replace(self, _keys=None, _queues_per_port=None, **changes)
        order = np.argsort(copy.keys, kind="stable")
        if np.any(order != np.arange(order.size)):
            columns = ("card_id", "ingress_port", "dst_pe", "routing_class", "egress_port", "vc", "use")
            sorted_columns = {name: getattr(copy, name)[order] for name in columns}
            copy = dataclasses.replace(copy, _keys=None, **sorted_columns)
        return copy

    def slice(self, start: int, stop: int) -> RoutingTables:
        """The entries at positions [start, stop) as tables with the same conventions."""
        columns = ("card_id", "ingress_port", "dst_pe", "routing_class", "egress_port", "vc", "use")
        return dataclasses.replace(
            self,
            _keys=None,
            _queues_per_port=None,
            **{name: getattr(self, name)[start:stop] for name in columns},
        )

    # -- access -----------------------------------------------------------------

    def __len__(self) -> int:
        return int(self.card_id.size)

    def _key_of(self, card: Any, in_port: Any, dst: Any, cls: Any) -> Any:
        """Sort key of (card, ingress, dst, class): entries are sorted by (dst, class, card, ingress)."""
        net = self.network
        return ((np.int64(dst) * self.num_classes + cls) * net.num_cards + card) * (
            net.max_port + 1
        ) + in_port

    @property
    def keys(self) -> np.ndarray:
        """Sorted int64 key of every entry (for vectorised look-ups)."""
        if self._keys is None:
            self._keys = self._key_of(
                self.card_id.astype(np.int64),
                self.ingress_port,
                self.dst_pe.astype(np.int64),
                self.routing_class.astype(np.int64),
            )
        return self._keys

    def find(self, card: int, in_port: int, dst: int, cls: int) -> int:
        """Index of the entry matching (card, ingress port, destination PE, class), or -1."""
        if not (0 <= cls < self.num_classes and 0 <= in_port <= self.network.max_port):
            return -1
        net = self.network
        key = ((int(dst) * self.num_classes + int(cls)) * net.num_cards + int(card)) * (
            net.max_port + 1
        ) + int(in_port)
        keys = self.keys
        index = int(keys.searchsorted(key))
        return index if index < keys.size and int(keys[index]) == key else -1

    def lookup(self, card: int, in_port: int, dst: int, cls: int) -> tuple[int, int] | None:
        """(egress port, VC) of the matching entry, or None when the table has no such entry."""
        index = self.find(card, in_port, dst, cls)
        if index < 0:
            return None
        return int(self.egress_port[index]), int(self.vc[index])

    def entry(self, index: int) -> RouteEntry:
        """The entry at position `index`."""
        return RouteEntry(
            int(self.card_id[index]),
            int(self.ingress_port[index]),
            int(self.dst_pe[index]),
            int(self.routing_class[index]),
            int(self.egress_port[index]),
            int(self.vc[index]),
            USES[int(self.use[index])],
        )

    def entries(self) -> Iterator[RouteEntry]:
        """All entries, in storage order (destination, class, card, ingress port)."""
        columns = (
            self.card_id,
            self.ingress_port,
            self.dst_pe,
            self.routing_class,
            self.egress_port,
            self.vc,
        )
        lists = [column.tolist() for column in columns]
        for values in zip(*lists, self.use.tolist(), strict=True):
            yield RouteEntry(*values[:6], USES[values[6]])

    def entries_of_card(self, card: int) -> list[RouteEntry]:
        """The entries of one card (what the controller installs on it)."""
        return [self.entry(int(i)) for i in np.nonzero(self.card_id == card)[0]]

    def entries_by_card(self) -> Iterator[tuple[int, list[RouteEntry]]]:
        """(card id, its entries) for every card that has entries, grouping all entries in one pass."""
        order = np.argsort(self.card_id, kind="stable")
        cards = self.card_id[order]
        bounds = np.flatnonzero(np.diff(cards)) + 1
        for chunk in np.split(order, bounds):
            if chunk.size:
                yield int(self.card_id[chunk[0]]), [self.entry(int(i)) for i in chunk]

    def entry_counts(self) -> dict[int, int]:
        """Number of entries per card id."""
        counts = np.bincount(self.card_id, minlength=self.network.num_cards)
        return {card: int(counts[card]) for card in np.flatnonzero(counts).tolist()}

    def to_json(self, with_entries: bool = True) -> dict[str, Any]:
        """A JSON-ready description: conventions, and (by default) every entry as a list per card."""
        data: dict[str, Any] = {
            "algorithm": self.algorithm,
            "family": self.topology.family,
            "params": {
                key: value
                for key, value in self.topology.params.items()
                if isinstance(value, (int, str, list, float, bool))
            },
            "match": ["ingress_port", "dst_pe", "routing_class"],
            "action": ["egress_port", "vc"],
            "num_entries": len(self),
            "num_classes": self.num_classes,
            "source_class": self.source_class.tolist(),
            "queue_rule": self.queue_rule,
            "queues_per_port": self.queues_per_port(),
            "vcs_per_link": self.vcs_per_link(),
            "vc_names": {
                kind: {str(vc): name for vc, name in names.items()} for kind, names in self.vc_names.items()
            },
            "notes": list(self.notes),
        }
        if with_entries:
            data["cards"] = {
                self.network.card_names[card]: [
                    [e.ingress_port, e.dst_pe, e.routing_class, e.egress_port, e.vc, e.use] for e in entries
                ]
                for card, entries in self.entries_by_card()
            }
            data["entry_fields"] = ["ingress_port", "dst_pe", "routing_class", "egress_port", "vc", "use"]
        return data
