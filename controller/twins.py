"""Twin composition: what each card of each twin switch must hold, from the topology and the routing tables.

For every card (both cards of every twin, including a root twin's idle second
card, docs/contracts.md) a :class:`CardPlan` gives

* ``card_config``'s default action ``set_card(card id, hop limit)``;
* per host-facing port, ``host_in``: ``from_host(PE on that port, the routing
  class the first card gives that PE's packets)`` (``RoutingTables.class_of_source``)
  and ``host_out``: ``to_host()``;
* per (routing class, VC) its route entries use, ``vc_queue``:
  ``set_queue(RoutingTables.queue_of(class, VC))``;
* every route entry of the routing tables for that card, translated one to one
  (``route``: (ingress port, destination PE, class) -> ``set_route(egress port, VC)``);
* ``selection_config``'s default action: ``deterministic()`` here (the card routes
  by ``route``); an adaptive card's plan (controller.adaptive_plan) sets
  ``set_selection(...)`` and fills ``adaptive_route`` instead of ``route``.

Ports that are neither host-facing (external or internal links, unused ports)
need no entry: the card program treats any port without a ``host_in`` entry
as a card-to-card port. ``roles`` records each port's role for reports.
No routing is computed here; the routing tables are the only source.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import repeat

import numpy as np

from controller.collector import collector_paused
from controller.routing.table import RoutingTables
from controller.translate import EntrySpec
from p4src import card
from topologies.errors import TwinnetError
from topologies.model import PortRef, Topology


class PlanError(TwinnetError, ValueError):
    """Tables that cannot be installed on the cards (e.g. more queues than a port has)."""


@dataclass
class CardPlan:
    """The complete control-plane state of one card.

    ``entries``: (table, match) -> EntrySpec, for every table the controller fills;
    ``config``: the parameters of ``card_config``'s default action ``set_card``;
    ``selection``: ``selection_config``'s default action and its parameters;
    ``roles``: port -> "host PE n", "external", "internal" or "unused".
    """

    name: str
    card_id: int
    twin: str
    side: int
    config: tuple[int, int]
    entries: dict[tuple[str, tuple[int, ...]], EntrySpec] = field(default_factory=dict)
    selection: tuple[str, tuple[int, ...]] = (card.DETERMINISTIC, ())
    roles: dict[int, str] = field(default_factory=dict)

    def add(self, spec: EntrySpec) -> None:
        key = spec.key
        if key in self.entries:
            raise PlanError(f"card {self.name}: two entries for {spec.table}{spec.match}")
        self.entries[key] = spec

    def count_by_table(self) -> dict[str, int]:
        return dict(Counter(spec.table for spec in self.entries.values()))

    @property
    def card_id_param(self) -> int:
        return self.config[0]

    @property
    def hop_limit(self) -> int:
        return self.config[1]


def longest_path_cards(tables: RoutingTables) -> int | None:
    """Cards on the longest model path (card-to-card links + 1), by the analysis of the same tables."""
    try:
        from controller.analysis.paths import AllPairs
    except ImportError:
        return None
    pairs = AllPairs(tables)
    if not pairs.num_paths:
        return 1
    return int(pairs.links().max()) + 1


def hop_limit_for(tables: RoutingTables) -> int:
    """The longest model path in cards plus a margin, at most the trace depth (p4src/README.md)."""
    longest = longest_path_cards(tables)
    if longest is None:
        return card.MAX_TRACE
    if longest > card.MAX_TRACE:
        raise PlanError(
            f"the longest {tables.algorithm} path visits {longest} cards; the card program's trace "
            f"holds {card.MAX_TRACE}"
        )
    return min(card.MAX_TRACE, longest + card.HOP_LIMIT_MARGIN)


def plan_cards(
    topology: Topology, tables: RoutingTables, hop_limit: int | None = None
) -> dict[str, CardPlan]:
    """Every card's plan (by card name), for `tables` computed on `topology`."""
    if tables.network.card_names != [
        c.name for c in sorted(topology.cards.values(), key=lambda c: c.card_id)
    ]:
        raise PlanError("the routing tables were computed for another topology (its cards differ)")
    if tables.num_classes - 1 > card.MAX_CLASS:
        raise PlanError(f"{tables.num_classes} routing classes do not fit the 4-bit class field")
    limit = hop_limit_for(tables) if hop_limit is None else hop_limit
    plans = base_plans(topology, limit, tables.class_of_source)
    queues_used: dict[str, set[tuple[int, int]]] = {name: set() for name in plans}
    with collector_paused():
        add_routes(topology, tables, plans, queues_used)
    for name, pairs in queues_used.items():
        for routing_class, vc in sorted(pairs):
            queue = tables.queue_of(routing_class, vc)
            if not 0 <= queue < card.PRIORITY_QUEUES:
                raise PlanError(
                    f"{tables.algorithm} puts class {routing_class} VC {vc} into queue {queue}: a port has "
                    f"{card.PRIORITY_QUEUES} priority queues: these tables can be analysed, not emulated"
                )
            plans[name].add(EntrySpec(card.VC_QUEUE, (routing_class, vc), card.SET_QUEUE, (queue,)))
    return plans


def base_plans(
    topology: Topology, hop_limit: int, class_of_source: Callable[[int], int]
) -> dict[str, CardPlan]:
    """Every card's plan without routes: card_config, port roles, host ports (``host_in``, ``host_out``)."""
    plans = {
        c.name: CardPlan(c.name, c.card_id, c.twin, c.side, (c.card_id, hop_limit))
        for c in sorted(topology.cards.values(), key=lambda c: c.card_id)
    }
    for name, plan in plans.items():
        for ref in topology.card_ports(name):
            if topology.is_connected(ref):
                link = topology.link_at(ref)
                plan.roles[ref.port] = link.kind if link.kind != "host" else "host"
            else:
                plan.roles[ref.port] = "unused"
    for host in topology.hosts:
        plan = plans[host.card]
        plan.roles[host.port] = f"host PE {host.pe}"
        plan.add(EntrySpec(card.HOST_IN, (host.port,), card.FROM_HOST, (host.pe, class_of_source(host.pe))))
        plan.add(EntrySpec(card.HOST_OUT, (host.port,), card.TO_HOST, ()))
    return plans


def add_routes(
    topology: Topology, tables: RoutingTables, plans: dict[str, CardPlan], queues_used: dict[str, set]
) -> None:
    """Every route entry of `tables` into its card's plan, one to one, in the tables' order; the (class,
    VC) pairs each card uses into `queues_used`.

    Millions of entries at 1,024 cards: the checks run once per distinct (card, port) and (card,
    class, VC) over the tables' columns, and each card's entries go into its plan in one update.
    """
    names = tables.network.card_names
    card_ids = tables.card_id.astype(np.int64)
    for card_id, egress_port in distinct_rows(card_ids, tables.egress_port):
        if not topology.is_connected(PortRef(names[card_id], egress_port)):
            raise PlanError(f"card {names[card_id]}: route entry to port {egress_port}, which has no link")
    for card_id, routing_class, vc in distinct_rows(card_ids, tables.routing_class, tables.vc):
        queues_used[names[card_id]].add((routing_class, vc))
    order = np.argsort(card_ids, kind="stable")  # each card's entries together, in the tables' order
    ends = np.cumsum(np.bincount(card_ids, minlength=len(names))).tolist()
    columns = (tables.ingress_port, tables.dst_pe, tables.routing_class, tables.egress_port, tables.vc)
    ingress_ports, dst_pes, classes, egress_ports, vcs = (column[order].tolist() for column in columns)
    start = 0
    for name, end in zip(names, ends, strict=True):
        rows = slice(start, end)
        matches = list(zip(ingress_ports[rows], dst_pes[rows], classes[rows], strict=True))
        actions = zip(egress_ports[rows], vcs[rows], strict=True)
        entries = plans[name].entries
        before = len(entries)
        # keys and specs made and inserted by iterators in C: ~1 µs an entry
        specs = map(EntrySpec._make, zip(repeat(card.ROUTE), matches, repeat(card.SET_ROUTE), actions))
        entries.update(zip(zip(repeat(card.ROUTE), matches), specs, strict=True))
        if len(entries) - before != end - start:
            (twice, _count), *_ = Counter(matches).most_common(1)
            raise PlanError(f"card {name}: two entries for {card.ROUTE}{twice}")
        start = end


def distinct_rows(*columns: np.ndarray) -> list[tuple[int, ...]]:
    """The distinct rows of non-negative integer columns of one length, as tuples, in ascending order."""
    if not columns[0].size:
        return []
    radices = [int(column.max()) + 1 for column in columns]
    key = np.zeros(columns[0].size, dtype=np.int64)
    for column, radix in zip(columns, radices, strict=True):  # mixed radix: one int64 per row
        key = key * radix + column
    rows = []
    for packed in np.unique(key).tolist():
        row = []
        for radix in reversed(radices):
            packed, value = divmod(packed, radix)
            row.append(value)
        rows.append(tuple(reversed(row)))
    return rows
