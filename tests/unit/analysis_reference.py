"""The analysis as it was before it streamed blocks of destinations: every path of the network at once.

Kept verbatim (AllPairs over the whole tables, the CDG of all paths, the report
built from them) as the reference the streaming analysis is checked against
in test_analysis_streaming.py. Not used by the program.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, TextIO

import numpy as np

from controller.analysis.metrics import ndt_paper_metric
from controller.analysis.traffic import Traffic
from controller.routing.arrays import distinct
from controller.routing.errors import (
    BlackHoleError,
    MisdeliveryError,
    MissingEntryError,
    RoutingError,
    RoutingLoopError,
)
from controller.routing.network import EXTERNAL, HOST, INTERNAL
from controller.routing.registry import UNSAFE
from controller.routing.table import USE_CODE, USES, RoutingTables
from controller.routing.walker import walk

#: dense look-up cells per block when linking entries to their successors
CELLS_PER_BLOCK = 1 << 19


class AllPairs:
    """The paths of all ordered pairs of distinct PEs through `tables`, validated on construction.

    Raises MissingEntryError, BlackHoleError, MisdeliveryError or RoutingLoopError
    (with one affected source/destination pair in the message) when the tables do
    not deliver every pair.
    """

    def __init__(self, tables: RoutingTables) -> None:
        self.tables = tables
        net = tables.network
        self.width = net.max_port + 1
        card = tables.card_id.astype(np.int64)
        egress = tables.egress_port.astype(np.int64)
        self.kind = net.port_kind[card, egress]
        self._check_exits(card, egress)
        self.succ = self._successors(card, egress)
        self.own_external = (self.kind == EXTERNAL).astype(np.int32)
        self.own_internal = (self.kind == INTERNAL).astype(np.int32)
        self.first_hop = net.port_kind[card, tables.ingress_port] == HOST
        self.start = np.flatnonzero(self.first_hop)
        self.rest_external, self.rest_internal = self._remaining()
        self.src = net.host_at[card[self.start], tables.ingress_port[self.start]].astype(np.int64)
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

    def _check_exits(self, card: np.ndarray, egress: np.ndarray) -> None:
        net, t = self.tables.network, self.tables
        hole = np.flatnonzero(self.kind == 0)
        if hole.size:
            self._fail(BlackHoleError, int(hole[0]), f"egress port {int(egress[hole[0]])} has no link")
        to_host = np.flatnonzero(self.kind == HOST)
        wrong = to_host[net.host_at[card[to_host], egress[to_host]] != t.dst_pe[to_host]]
        if wrong.size:
            host = int(net.host_at[card[wrong[0]], egress[wrong[0]]])
            self._fail(MisdeliveryError, int(wrong[0]), f"delivers to PE {host}")

    def _successors(self, card: np.ndarray, egress: np.ndarray) -> np.ndarray:
        """Index of the entry each hop leads to (-1 after delivery), by dense blocks of (dst, class)."""
        t, net = self.tables, self.tables.network
        states = net.num_cards * self.width
        group = t.dst_pe.astype(np.int64) * t.num_classes + t.routing_class
        state = card * self.width + t.ingress_port
        moving = self.kind != HOST
        next_state = np.where(
            moving, net.peer_card[card, egress].astype(np.int64) * self.width + net.peer_port[card, egress], 0
        )
        succ = np.full(len(t), -1, dtype=np.int64)
        groups_per_block = max(1, CELLS_PER_BLOCK // states)
        num_groups = net.num_pes * t.num_classes
        for first in range(0, num_groups, groups_per_block):
            a, b = np.searchsorted(group, [first, first + groups_per_block])
            if a == b:
                continue
            dense = np.full(groups_per_block * states, -1, dtype=np.int32)
            local = (group[a:b] - first) * states
            dense[local + state[a:b]] = np.arange(a, b, dtype=np.int32)
            found = dense[local + next_state[a:b]]
            succ[a:b] = np.where(moving[a:b], found, -1)
            missing = np.flatnonzero(moving[a:b] & (found < 0))
            if missing.size:
                e = a + int(missing[0])
                nc, np_ = int(net.peer_card[card[e], egress[e]]), int(net.peer_port[card[e], egress[e]])
                self._fail(
                    MissingEntryError,
                    e,
                    f"next card {net.card_names[nc]} has no entry for ingress port {np_}",
                )
        return succ

    def _remaining(self) -> tuple[np.ndarray, np.ndarray]:
        """External and internal links from each entry to delivery, by pointer doubling; refuses loops.

        First hops (entries on a host port) are leaves: no entry leads to them. The
        doubling runs over the other entries only; first hops then add their own hop.
        """
        packed = self.own_external.astype(np.int64) * (1 << 20) + self.own_internal
        inner = np.flatnonzero(~self.first_hop)
        position = np.full(len(packed), -1, dtype=np.int64)
        position[inner] = np.arange(inner.size)
        after = self.succ[inner]
        pointer = np.where(after >= 0, position[np.maximum(after, 0)], -1)
        value = packed[inner]
        rounds = math.ceil(math.log2(max(2, inner.size))) + 1
        for _ in range(rounds):
            live = np.flatnonzero(pointer >= 0)
            if not live.size:
                break
            target = pointer[live]
            value[live] += value[target]
            pointer[live] = pointer[target]
        if (pointer >= 0).any():
            self._fail(RoutingLoopError, int(inner[np.flatnonzero(pointer >= 0)[0]]), "packets loop")
        packed[inner] = value
        first = self.start[self.succ[self.start] >= 0]
        packed[first] += packed[self.succ[first]]
        return (packed >> 20).astype(np.int32), (packed & ((1 << 20) - 1)).astype(np.int32)

    def _check_starts(self) -> None:
        t, n = self.tables, self.tables.network.num_pes
        wrong_class = np.flatnonzero(t.routing_class[self.start] != t.source_class[self.src])
        if wrong_class.size:
            e = int(self.start[wrong_class[0]])
            raise RoutingError(
                f"entry at the first card of PE {int(self.src[wrong_class[0]])} for destination "
                f"{int(t.dst_pe[e])} has class {int(t.routing_class[e])}, but that PE's packets "
                f"get class {t.class_of_source(int(self.src[wrong_class[0]]))}"
            )
        if self.start.size != n * (n - 1):
            present = np.zeros(n * n, dtype=bool)
            present[self.src * n + self.dst] = True
            present[np.arange(n) * (n + 1)] = True
            pair = int(np.flatnonzero(~present)[0])
            src, dst = divmod(pair, n)
            walk(t, src, dst)  # raises MissingEntryError with the place
            raise MissingEntryError(f"no path from PE {src} to PE {dst}")

    # -- results ------------------------------------------------------------------

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
        """Traffic through each entry when path i carries ``weights[i]`` (default 1: the number of paths)."""
        load = np.zeros(len(self.tables), dtype=np.float64)
        load[self.start] = 1.0 if weights is None else weights
        moving = self.start[self.succ[self.start] >= 0]
        load += np.bincount(self.succ[moving], weights=load[moving], minlength=load.size)
        inner = np.flatnonzero(~self.first_hop)
        depth = (self.rest_external + self.rest_internal)[inner]
        rank = np.argsort(-depth, kind="stable")
        order = inner[rank]
        bounds = np.flatnonzero(np.diff(depth[rank])) + 1
        for level in np.split(order, bounds):
            level = level[self.succ[level] >= 0]
            if level.size:
                np.add.at(load, self.succ[level], load[level])
        return load

    def path_entries(self, path: int) -> list[int]:
        """Entry indices of path number `path` (0 .. num_paths-1), in hop order."""
        entries, e = [], int(self.start[path])
        while e >= 0:
            entries.append(e)
            e = int(self.succ[e])
        return entries

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


@dataclass(frozen=True)
class Channel:
    """One channel: `card` sends on `port` into `queue`; the packet arrives at `peer_card`:`peer_port`."""

    card: str
    port: int
    port_name: str
    peer_card: str
    peer_port: int
    queue: int
    link_kind: str

    def __str__(self) -> str:
        return f"{self.card}:{self.port}({self.port_name})->{self.peer_card}:{self.peer_port} q{self.queue}"


@dataclass(frozen=True)
class DeadlockReport:
    """Result of the check: channels and dependencies counted, and one cycle if there is any."""

    deadlock_free: bool
    channels: int
    dependencies: int
    cycle: tuple[Channel, ...] = ()

    def to_json(self) -> dict:
        return {
            "deadlock_free": self.deadlock_free,
            "channels": self.channels,
            "dependencies": self.dependencies,
            "cycle": [str(channel) for channel in self.cycle] or None,
        }


def channel_ids(pairs: AllPairs) -> np.ndarray:
    """Channel id of every entry's egress: (card * width + port) * queues + queue."""
    t = pairs.tables
    queues = max(1, t.queues_per_port())
    return (t.card_id.astype(np.int64) * pairs.width + t.egress_port) * queues + t.queues()


def dependencies(pairs: AllPairs) -> np.ndarray:
    """Distinct CDG edges as an array of (from channel id, to channel id) rows."""
    used = (pairs.succ >= 0) & (pairs.kind != HOST)
    after = pairs.succ[used]
    used_after = pairs.kind[after] != HOST
    ids = channel_ids(pairs)
    first, second = ids[np.flatnonzero(used)[used_after]], ids[after[used_after]]
    span = int(ids.max(initial=0)) + 1
    keys = distinct(first * span + second)
    return np.stack([keys // span, keys % span], axis=1)


def check_deadlock(pairs: AllPairs) -> DeadlockReport:
    """Build the CDG of all paths and look for a cycle (Kahn's algorithm, one vectorised round per level)."""
    edges = dependencies(pairs)
    nodes = distinct(edges)
    compact = np.searchsorted(nodes, edges)
    channels = int(np.count_nonzero(np.bincount(channel_ids(pairs)[pairs.kind != HOST])))
    order = np.argsort(compact[:, 0], kind="stable")
    sources, targets = compact[order, 0], compact[order, 1]
    starts = np.searchsorted(sources, np.arange(nodes.size + 1))
    indegree = np.bincount(targets, minlength=nodes.size)
    frontier = np.flatnonzero(indegree == 0)
    removed = 0
    while frontier.size:
        lengths = starts[frontier + 1] - starts[frontier]
        if not lengths.sum():
            break
        edge_index = np.repeat(starts[frontier] - np.cumsum(lengths) + lengths, lengths) + np.arange(
            lengths.sum()
        )
        hit = targets[edge_index]
        removed += hit.size
        np.subtract.at(indegree, hit, 1)
        candidates = distinct(hit)
        frontier = candidates[indegree[candidates] == 0]
    if removed == edges.shape[0]:
        return DeadlockReport(True, channels, int(edges.shape[0]))
    left = indegree[compact[:, 0]] > 0
    remaining = nodes[compact[left & (indegree[compact[:, 1]] > 0)]]
    return DeadlockReport(
        False,
        channels,
        int(edges.shape[0]),
        tuple(describe_channel(pairs, c) for c in _find_cycle(remaining)),
    )


def _find_cycle(edges: np.ndarray) -> list[int]:
    """One cycle of a graph in which every edge's source has an incoming edge (so a cycle exists)."""
    incoming: dict[int, int] = {}
    for a, b in edges.tolist():
        incoming.setdefault(b, a)
    node = int(edges[0, 0])
    seen: dict[int, int] = {}
    order: list[int] = []
    while node not in seen:
        seen[node] = len(order)
        order.append(node)
        node = incoming[node]
    cycle = order[seen[node] :]
    return cycle[::-1]  # followed backwards: reverse into dependency order


def describe_channel(pairs: AllPairs, channel: int) -> Channel:
    """The Channel a channel id stands for."""
    t, net = pairs.tables, pairs.tables.network
    queues = max(1, t.queues_per_port())
    link, queue = divmod(int(channel), queues)
    card, port = divmod(link, pairs.width)
    return Channel(
        net.card_names[card],
        port,
        net.port_name(card, port),
        net.card_names[int(net.peer_card[card, port])],
        int(net.peer_port[card, port]),
        queue,
        net.link_kind_name(card, port),
    )


def fattree_paper_metric(pairs: AllPairs, loads: np.ndarray | None = None) -> dict[str, Any]:
    """Seed 000's per-switch internal-link crossings, per stage (min and max over the stage's twins)."""
    tables = pairs.tables
    net, params = tables.network, tables.topology.params
    k, n = int(params["k"]), int(params["n"])
    if loads is None:
        loads = pairs.loads()
    crossing = np.isin(tables.use, [USE_CODE["ascend"], USE_CODE["turn"], USE_CODE["descend"]])
    per_card = np.bincount(tables.card_id[crossing], weights=loads[crossing], minlength=net.num_cards)
    per_twin: dict[str, float] = {}
    for card in range(net.num_cards):
        per_twin[net.twin_of_card[card]] = per_twin.get(net.twin_of_card[card], 0.0) + per_card[card]
    stage_of = {twin.name: twin.stage for twin in tables.topology.twins.values()}
    stages = []
    for stage in range(n):
        values = [value for name, value in per_twin.items() if stage_of[name] == stage]
        stages.append(
            {
                "stage": stage,
                "min": int(round(min(values))),
                "max": int(round(max(values))),
                "optimal_configuration_value": k ** (n + 1) // 2 if stage < n - 1 else 0,
            }
        )
    return {
        "per_stage": stages,
        "unit": "paths",
        "scope": "per twin switch, by stage: ordered terminal pairs (all N(N-1), DESTRO) whose path crosses "
        "that twin's internal links (fat-tree notes §4.3); min/max over the stage's twins; "
        "optimal_configuration_value is the paper's k^(n+1)/2 below the roots and 0 at the roots",
    }


UNITS: dict[str, str] = {
    "paths": "ordered pairs (src, dst) of distinct PEs routed: N(N-1)",
    "hops": "card-to-card links per path (external and internal; host links excluded), over all paths; "
    "avg/max over paths; 'external' and 'internal' count each kind apart; 'paths_with_internal' "
    "is the fraction of paths using at least one internal link; 'diameter' = max",
    "switch_hops": "fat trees: twin switches (logical switches) visited per path, the measure of Villar 2011",
    "internal_link_crossings": "internal-link traversals summed over all paths (each of r links counted)",
    "paper_metric": "the papers' count, scope in the field (docs/contracts.md); null where the papers "
    "define none",
    "deadlock_free": "the channel dependency graph of all paths (channels = (directed card-to-card link, "
    "queue)) has no cycle",
    "vcs_per_link": "distinct VCs the entries use, per link kind",
    "routing.unsafe": "null, or why the variant was chosen to be cyclic (to show deadlock)",
    "queues_per_port": "priority queues a port needs (highest queue index + 1)",
    "max_link_load": "with --traffic: the highest load on one physical directed link (host links and each of "
    "r internal links included), in units of one PE's injection bandwidth",
    "max_channel_load": "with --traffic: the highest load on one (directed card link, queue), same unit",
    "max_card_link_load": "with --traffic: the highest load on a card-to-card link (host links left out)",
    "busiest_links": "with --traffic: the five most loaded directed links, [card:port (name, kind), load]",
    "bottleneck": "with --traffic: the link with max_link_load",
    "throughput_bound": "with --traffic: 1 / max_link_load, the injection rate (fraction of link bandwidth "
    "per PE) above which some link must saturate",
}


def hop_statistics(pairs: AllPairs) -> dict[str, Any]:
    """avg/max of links per path, split into external and internal."""
    external, internal = pairs.external(), pairs.internal()
    links = external + internal

    def summary(values: np.ndarray) -> dict[str, float]:
        return {"avg": float(values.mean()) if values.size else 0.0, "max": int(values.max(initial=0))}

    return {
        **summary(links),
        "external": summary(external),
        "internal": summary(internal),
        "paths_with_internal": float((internal > 0).mean()) if internal.size else 0.0,
        "diameter": int(links.max(initial=0)),
    }


def paper_metric(
    tables: RoutingTables, pairs: AllPairs, unit_loads: np.ndarray | None = None
) -> tuple[dict[str, Any] | None, str | None]:
    """(metric, None) where the papers define one for this topology, else (None, reason)."""
    family = tables.topology.family
    if family == "twin-fattree":
        if tables.algorithm != "destro":
            return None, "Villar 2011 counts internal-link crossings under DESTRO only"
        return fattree_paper_metric(pairs, unit_loads), None
    if family == "ndt":
        from controller.routing.torus_view import TorusView

        view = TorusView(tables.network)
        metric = ndt_paper_metric(
            view.dims, lambda i, s: int(view.card_of_port[i, 0 if s > 0 else 1]), view.config_text()
        )
        metric["routing_note"] = (
            f"defined under DOR at node level, whatever the tables' algorithm ({tables.algorithm})"
        )
        return metric, None
    if family == "kary-ntree":
        return None, "single-card switches have no internal link"
    if family == "torus":
        return None, "a torus of single-card nodes has no internal link"
    return None, f"the papers define no internal-link metric for a {family!r} topology"


def link_loads(pairs: AllPairs, traffic: Traffic) -> dict[tuple[int, int], float]:
    """Load of `traffic` on every directed link a card sends on, {(card id, egress port): load}.

    Units: one PE's injection bandwidth (each PE injects one unit in all);
    card-to-card links (each of r internal links apart) and host (ejection) links.
    """
    load = _link_load_array(pairs, pairs.loads(pairs.weights_of(traffic.src, traffic.dst, traffic.weight)))
    return {divmod(int(i), pairs.width): float(load[i]) for i in np.flatnonzero(load)}


def _link_load_array(pairs: AllPairs, load: np.ndarray) -> np.ndarray:
    """Per-entry loads summed per directed link, indexed card * width + port."""
    t = pairs.tables
    link = t.card_id.astype(np.int64) * pairs.width + t.egress_port
    return np.bincount(link, weights=load, minlength=t.network.num_cards * pairs.width)


def traffic_loads(pairs: AllPairs, traffic: Traffic) -> dict[str, Any]:
    """Loads of a pattern: maxima per link and channel, busiest links, bottleneck, throughput bound."""
    tables, net = pairs.tables, pairs.tables.network
    weights = pairs.weights_of(traffic.src, traffic.dst, traffic.weight)
    load = pairs.loads(weights)
    link_load = _link_load_array(pairs, load)
    link = tables.card_id.astype(np.int64) * pairs.width + tables.egress_port
    queues = max(1, tables.queues_per_port())
    channel_load = np.bincount(
        link * queues + tables.queues(), weights=load, minlength=net.num_cards * pairs.width * queues
    )
    injection = traffic.injection(net.num_pes)

    def name(index: int) -> str:
        card, port = divmod(index, pairs.width)
        kind = net.link_kind_name(card, port)
        return f"{net.card_names[card]}:{port} ({net.port_name(card, port)}, {kind})"

    busiest = np.argsort(-link_load, kind="stable")[:5]
    worst = float(link_load[busiest[0]]) if link_load.size else 0.0
    bottleneck = name(int(busiest[0])) if link_load.size else "none"
    if injection.size and injection.max() > worst:
        worst = float(injection.max())
        bottleneck = f"injection link of PE {int(np.argmax(injection))}"
    return {
        "traffic": traffic.name,
        "flows": int(traffic.src.size),
        "max_link_load": worst,
        "max_channel_load": float(channel_load.max(initial=0.0)),
        "max_card_link_load": float(link_load[net.port_kind.ravel() != HOST].max(initial=0.0)),
        "busiest_links": [[name(int(i)), float(link_load[i])] for i in busiest if link_load[i] > 0],
        "bottleneck": bottleneck,
        "throughput_bound": (1.0 / worst) if worst > 0 else None,
    }


def analyze(tables: RoutingTables, traffic: Traffic | None = None) -> dict[str, Any]:
    """The full report of `twinnet analyze` for tables (and optionally a traffic pattern)."""
    pairs = AllPairs(tables)
    deadlock = check_deadlock(pairs)
    topology = tables.topology
    unit_loads = pairs.loads() if topology.family == "twin-fattree" else None
    metric, reason = paper_metric(tables, pairs, unit_loads)
    report: dict[str, Any] = {
        "topology": {
            "family": topology.family,
            "params": {
                k: (v if isinstance(v, (int, float, str, bool, list)) else str(v))
                for k, v in topology.params.items()
            },
            "counts": topology.counts(),
        },
        "routing": {
            "algorithm": tables.algorithm,
            "entries": len(tables),
            "max_entries_per_card": max(tables.entry_counts().values(), default=0),
            "num_classes": tables.num_classes,
            "queue_rule": tables.queue_rule,
            "vc_names": {
                kind: {str(vc): name for vc, name in names.items()} for kind, names in tables.vc_names.items()
            },
            "notes": tables.notes,
            "unsafe": UNSAFE.get(tables.algorithm),
        },
        "paths": pairs.num_paths,
        "hops": hop_statistics(pairs),
        "internal_link_crossings": int(pairs.internal().sum()),
        "paper_metric": metric,
        "deadlock_free": deadlock.deadlock_free,
        "deadlock": deadlock.to_json(),
        "vcs_per_link": tables.vcs_per_link(),
        "queues_per_port": tables.queues_per_port(),
        "units": dict(UNITS),
    }
    if reason is not None:
        report["paper_metric_reason"] = reason
    if topology.family in ("kary-ntree", "twin-fattree"):
        switch_hops = pairs.external() + 1
        report["switch_hops"] = {"avg": float(switch_hops.mean()), "max": int(switch_hops.max(initial=0))}
    if traffic is not None:
        report.update(traffic_loads(pairs, traffic))
    return report


def write_paths(pairs: AllPairs, out: TextIO) -> int:
    """Write each path as a JSON line: src, dst, routing_class, hops (card, in, out, vc, queue, kind, use)."""
    tables, net = pairs.tables, pairs.tables.network
    queues = tables.queues()
    kinds = {0: "none", 1: "external", 2: "internal", 3: "host"}
    for index in range(pairs.num_paths):
        hops = []
        for e in pairs.path_entries(index):
            card, egress = int(tables.card_id[e]), int(tables.egress_port[e])
            hops.append(
                [
                    card,
                    int(tables.ingress_port[e]),
                    egress,
                    int(tables.vc[e]),
                    int(queues[e]),
                    kinds[int(net.port_kind[card, egress])],
                    USES[int(tables.use[e])],
                ]
            )
        out.write(
            json.dumps(
                {
                    "src": int(pairs.src[index]),
                    "dst": int(pairs.dst[index]),
                    "routing_class": int(tables.routing_class[pairs.start[index]]),
                    "hops": hops,
                }
            )
        )
        out.write("\n")
    return pairs.num_paths
