"""Duato's condition on adaptive tables, and the set of paths each pair of PEs may take.

Duato (1993): an adaptive routing is deadlock-free if its escape channels form
a connected routing subfunction whose **extended** channel dependency graph
has no cycle. The extended graph's vertices are the escape channels; a
dependency a -> b is *direct* when a packet holding a may next ask for b, and
*indirect* when it may ask for b after some adaptive channels. Cross
dependencies (an escape channel used adaptively) cannot occur when the escape
and adaptive VCs of every link are disjoint, which is checked too. With the
``escaped`` state kept to the end of the path no packet goes from an escape
channel to an adaptive one, so indirect dependencies are empty; the check
computes them from the tables all the same, so tables that break the rule show
it. A channel is (card, egress port, VC), as in controller.analysis.deadlock.

Paths: at a card a packet may leave by any adaptive candidate port or by the
escape port, and after an escape it follows the escape routing. Since the
escape's port is itself a candidate port or the internal link offered with it,
the set of link sequences (external and internal hops) a pair may take is that
of the candidate ports, for every selection function.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from controller.routing.adaptive import AdaptiveTables
from controller.routing.network import HOST

#: VC slots per port in a channel id
_VC_SLOTS = 16


@dataclass
class DuatoReport:
    """Duato's condition: escape graph acyclic, every state with an escape, escape and adaptive VCs apart."""

    escape_channels: int
    direct: int
    indirect: int
    cycle: list[str]
    missing_escape: list[str]
    escape_not_delivering: list[str]
    shared_vcs: list[str]

    @property
    def deadlock_free(self) -> bool:
        return not (self.cycle or self.missing_escape or self.escape_not_delivering or self.shared_vcs)

    def to_json(self) -> dict[str, Any]:
        return {
            "deadlock_free": self.deadlock_free,
            "condition": "Duato: extended dependency graph of the escape channels acyclic, "
            "every state has an escape that delivers, escape and adaptive VCs disjoint",
            "escape_channels": self.escape_channels,
            "direct_dependencies": self.direct,
            "indirect_dependencies": self.indirect,
            "cycle": self.cycle or None,
            "states_without_escape": self.missing_escape[:10] or None,
            "escapes_not_delivering": self.escape_not_delivering[:10] or None,
            "escape_vcs_used_adaptively": self.shared_vcs[:10] or None,
        }


def _channel(model: AdaptiveTables, card: int, port: int, vc: int) -> int:
    return (card * (model.network.max_port + 1) + port) * _VC_SLOTS + vc


def channel_name(model: AdaptiveTables, channel: int) -> str:
    """'c3:2(d0-)->c5:1 vc1' for a channel id."""
    net = model.network
    link, vc = divmod(channel, _VC_SLOTS)
    card, port = divmod(link, net.max_port + 1)
    far, far_port = int(net.peer_card[card, port]), int(net.peer_port[card, port])
    return (
        f"{net.card_names[card]}:{port}({net.port_name(card, port)})->{net.card_names[far]}:{far_port} vc{vc}"
    )


def check_duato(model: AdaptiveTables) -> DuatoReport:
    """Duato's condition on the tables (all their destinations)."""
    net = model.network
    graph = nx.DiGraph()
    direct = indirect = 0
    missing, not_delivering, shared = [], [], []
    escape_vcs = {kind: set(plan["escape"]) for kind, plan in model.vc_plan.items()}
    kind_names = {1: "external", 2: "internal", 3: "host"}
    for dst in np.unique(model.dst_pe).tolist():
        rows = np.flatnonzero(model.dst_pe == dst)
        states = {
            (int(model.card_id[i]), int(model.ingress_port[i]), int(model.escaped[i])): model.entry(int(i))
            for i in rows
        }
        for (card, port, escaped), entry in states.items():
            kind = kind_names.get(int(net.port_kind[card, entry.escape_port]), "none")
            if kind == "none" or entry.escape_vc not in escape_vcs.get(kind, set()):
                missing.append(f"{net.card_names[card]} in {port} dst {dst} escaped {escaped}")
            for cport, cvc in entry.candidates:
                ckind = kind_names[int(net.port_kind[card, cport])]
                if cvc in escape_vcs.get(ckind, set()):
                    shared.append(f"{net.card_names[card]} port {cport} vc {cvc} dst {dst}")
        if not _escape_delivers(model, states, dst, not_delivering):
            continue
        escape_of = {key[0]: (e.escape_port, e.escape_vc) for key, e in states.items()}
        for card, port, escaped in states:
            far = int(net.peer_card[card, port])
            if not escaped or far < 0 or far not in escape_of:
                continue  # only arrivals over an escape channel start escape dependencies
            far_port, far_vc = escape_of[far]
            if far_port != int(net.peer_port[card, port]):
                continue
            held = _channel(model, far, far_port, far_vc)
            for wanted, via_adaptive in _escapes_after(model, states, (card, port, 1)):
                if not graph.has_edge(held, wanted):
                    graph.add_edge(held, wanted)
                    if via_adaptive:
                        indirect += 1
                    else:
                        direct += 1
    try:
        cycle = [channel_name(model, a) for a, _ in nx.find_cycle(graph)]
    except nx.NetworkXNoCycle:
        cycle = []
    return DuatoReport(graph.number_of_nodes(), direct, indirect, cycle, missing, not_delivering, shared)


def _escapes_after(
    model: AdaptiveTables, states: dict, start: tuple[int, int, int]
) -> list[tuple[int, bool]]:
    """Escape channels a packet in state `start` may ask for, directly or after adaptive hops."""
    net = model.network
    found: list[tuple[int, bool]] = []
    seen = {start}
    todo = [(start, False)]
    while todo:
        state, via = todo.pop()
        entry = states[state]
        card = state[0]
        if net.port_kind[card, entry.escape_port] != HOST:
            found.append((_channel(model, card, entry.escape_port, entry.escape_vc), via))
        for port, _ in entry.candidates:
            far = int(net.peer_card[card, port])
            nxt = (far, int(net.peer_port[card, port]), state[2])
            if far >= 0 and nxt in states and nxt not in seen:
                seen.add(nxt)
                todo.append((nxt, True))
    return found


def _escape_delivers(model: AdaptiveTables, states: dict, dst: int, failures: list[str]) -> bool:
    """Does the escape routing, followed from every state, reach PE `dst` (the subfunction is connected)?"""
    net = model.network
    ok = True
    for card0, port0, _ in list(states):
        card, port = card0, port0
        for _ in range(2 * net.num_cards + 2):
            entry = states.get((card, port, 1)) or states.get((card, port, 0))
            if entry is None:
                failures.append(f"{net.card_names[card]} in {port} dst {dst}: no entry on the escape path")
                ok = False
                break
            if net.port_kind[card, entry.escape_port] == HOST:
                if net.host_at[card, entry.escape_port] != dst:
                    failures.append(f"{net.card_names[card]} dst {dst}: escape delivers elsewhere")
                    ok = False
                break
            card, port = (
                int(net.peer_card[card, entry.escape_port]),
                int(net.peer_port[card, entry.escape_port]),
            )
        else:
            failures.append(f"{net.card_names[card0]} in {port0} dst {dst}: escape loops")
            ok = False
    return ok


@dataclass
class PathSet:
    """Link paths (card-to-card hops, internal links counted) a pair may take, with the escape's path."""

    src: int
    dst: int
    count: int
    shortest: int
    longest: int
    escape_hops: int
    paths: list[list[str]] = field(default_factory=list)


def _arrival_card(model: AdaptiveTables, src: int) -> int:
    return int(model.network.pe_card[src])


def path_set(model: AdaptiveTables, src: int, dst: int, limit: int = 64) -> PathSet:
    """The link sequences PE `src` -> PE `dst` may take (listed up to `limit`), counted and measured."""
    net = model.network
    rows = np.flatnonzero(model.dst_pe == dst)
    per_card = {}
    for i in rows.tolist():
        if int(model.escaped[i]) == 0:
            per_card.setdefault(int(model.card_id[i]), model.entry(i))
    stats = _card_stats(model, per_card)
    start = _arrival_card(model, src)
    count, shortest, longest = stats[start]
    listed: list[list[str]] = []

    def walk(card: int, prefix: list[str]) -> None:
        if len(listed) >= limit:
            return
        entry = per_card[card]
        if net.port_kind[card, entry.escape_port] == HOST:
            listed.append(prefix)
            return
        for port in _next_ports(entry):
            walk(
                int(net.peer_card[card, port]),
                prefix + [f"{net.card_names[card]}:{net.port_name(card, port)}"],
            )

    walk(start, [])
    hops, card = 0, start
    while net.port_kind[card, per_card[card].escape_port] != HOST:
        card = int(net.peer_card[card, per_card[card].escape_port])
        hops += 1
    return PathSet(src, dst, count, shortest, longest, hops, listed)


def _next_ports(entry) -> list[int]:
    """Ports a non-escaped packet may leave by: its candidate ports and the escape port, each once."""
    return sorted({port for port, _ in entry.candidates} | {entry.escape_port})


def _card_stats(model: AdaptiveTables, per_card: dict) -> dict[int, tuple[int, int, int]]:
    """Per card: (number of link paths to the destination, fewest hops, most hops)."""
    net = model.network
    stats: dict[int, tuple[int, int, int]] = {}

    def visit(card: int, depth: int) -> tuple[int, int, int]:
        if card in stats:
            return stats[card]
        if depth > 4 * net.num_cards:
            raise RecursionError("adaptive paths loop")
        entry = per_card[card]
        if net.port_kind[card, entry.escape_port] == HOST:
            stats[card] = (1, 0, 0)
            return stats[card]
        results = [visit(int(net.peer_card[card, port]), depth + 1) for port in _next_ports(entry)]
        stats[card] = (
            sum(r[0] for r in results),
            1 + min(r[1] for r in results),
            1 + max(r[2] for r in results),
        )
        return stats[card]

    for card in sorted(per_card):
        visit(card, 0)
    return stats


def path_summary(model: AdaptiveTables) -> dict[str, Any]:
    """Over all ordered pairs of distinct PEs: mean number of link paths, mean fewest/most/escape hops."""
    net = model.network
    pairs = 0
    total_count = total_short = total_long = total_escape = 0
    most_paths = 0
    longer = 0
    for dst in np.unique(model.dst_pe).tolist():
        per_card = {}
        for i in np.flatnonzero(model.dst_pe == dst).tolist():
            if int(model.escaped[i]) == 0:
                per_card.setdefault(int(model.card_id[i]), model.entry(i))
        stats = _card_stats(model, per_card)
        escape_hops = _escape_hops(model, per_card)
        for src in range(net.num_pes):
            if src == dst:
                continue
            count, short, long_ = stats[int(net.pe_card[src])]
            esc = escape_hops[int(net.pe_card[src])]
            pairs += 1
            total_count += count
            total_short += short
            total_long += long_
            total_escape += esc
            most_paths = max(most_paths, count)
            longer += long_ > esc
    return {
        "pairs": pairs,
        "mean_paths_per_pair": total_count / pairs if pairs else 0.0,
        "max_paths_per_pair": most_paths,
        "mean_fewest_hops": total_short / pairs if pairs else 0.0,
        "mean_most_hops": total_long / pairs if pairs else 0.0,
        "mean_escape_hops": total_escape / pairs if pairs else 0.0,
        "pairs_that_may_lengthen": longer,
        "units": "hops = card-to-card links (external and internal) per path; paths = distinct link "
        "sequences allowed by the candidate tables (the same for the four selection functions)",
    }


def _escape_hops(model: AdaptiveTables, per_card: dict) -> dict[int, int]:
    net = model.network
    hops: dict[int, int] = {}
    for start in per_card:
        card, trail = start, []
        while card not in hops and net.port_kind[card, per_card[card].escape_port] != HOST:
            trail.append(card)
            card = int(net.peer_card[card, per_card[card].escape_port])
        base = hops.get(card, 0)
        for offset, visited in enumerate(reversed(trail), start=1):
            hops[visited] = base + offset
        hops.setdefault(card, base)
    return hops
