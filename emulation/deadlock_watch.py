"""Deadlock detection in a lossless run: a cycle of paused, non-empty queues that nothing leaves.

Every poll reads the lossless cards' queues over the side channel. A channel
(card, egress port, priority) is *stalled* when it holds frames, its peer pauses it
(PFC), and it sent nothing since the previous poll. A stalled channel waits for
the channels at its peer card that hold the frames it is paused for: those that
arrived on the peer's port of this link, in this class (each queued frame's
ingress port and arrival class are in the snapshot). When some stalled channels
have stayed stalled for ``after_s`` seconds and their waits close a cycle, that
cycle is the deadlock; it is compared with the channel dependency graph of the
installed tables (every wait of the cycle must be one of its dependencies).

In a run the polls go on in a thread of their own (``with watch:``): a poll asks
every card and waits for its answers, and on 3DT 4x4x4 (128 cards, loaded machine)
polling from the injector's loop left it sending 35 probes/s of the 366 asked.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from controller.analysis.deadlock import dependencies, describe_channel
from controller.analysis.paths import AllPairs

#: Seconds between two polls of the cards' queues (at least; see poll_interval).
POLL_INTERVAL_S = 0.5
#: Stats answers per second the cards are asked for at most: each costs a card's CPU, and a
#: starved card misses its liveness checks (a loaded 2-core machine, 128 cards).
STATS_PER_S = 64.0
#: Seconds a set of channels must stay stalled before it is called a deadlock.
DEFAULT_DEADLOCK_AFTER_S = 3.0

ChannelKey = tuple[str, int, int]  # (card, egress port, priority)
Peers = Mapping[tuple[str, int], tuple[str, int]]  # (card, port) -> (peer card, peer port), card links only


def poll_interval(cards: int) -> float:
    """Seconds between polls of `cards` cards: POLL_INTERVAL_S, longer when that would ask too much.

    >>> poll_interval(10), poll_interval(128)
    (0.5, 2.0)
    """
    return max(POLL_INTERVAL_S, cards / STATS_PER_S)


def stalled_channels(
    stats: Mapping[str, dict[str, Any]], previous: Mapping[ChannelKey, int]
) -> tuple[dict[ChannelKey, dict[tuple[int, int], int]], dict[ChannelKey, int]]:
    """Stalled channels with the (ingress port, class) counts of what they hold; and dequeue counts."""
    dequeued: dict[ChannelKey, int] = {}
    stalled: dict[ChannelKey, dict[tuple[int, int], int]] = {}
    for card, answer in stats.items():
        for port in answer.get("ports", []):
            pfc = port.get("pfc") or []
            for queue in port.get("queues", []):
                key = (card, port["port"], queue["priority"])
                dequeued[key] = queue["dequeued"]
                paused = queue["priority"] < len(pfc) and pfc[queue["priority"]]["paused"]
                if queue["length"] and paused and previous.get(key) == queue["dequeued"]:
                    stalled[key] = {(int(p), int(c)): n for p, c, n in queue.get("held_from", [])}
    return stalled, dequeued


def wait_edges(
    stalled: Mapping[ChannelKey, dict[tuple[int, int], int]], peers: Peers
) -> dict[ChannelKey, list[ChannelKey]]:
    """For each stalled channel, the stalled channels at its peer that hold what it is paused for."""
    by_card: dict[str, list[ChannelKey]] = {}
    for key in stalled:
        by_card.setdefault(key[0], []).append(key)
    edges: dict[ChannelKey, list[ChannelKey]] = {}
    for key in stalled:
        card, port, priority = key
        peer = peers.get((card, port))
        if peer is None:
            continue
        peer_card, peer_port = peer
        edges[key] = [
            other for other in by_card.get(peer_card, []) if stalled[other].get((peer_port, priority), 0) > 0
        ]
    return edges


def find_cycle(edges: Mapping[ChannelKey, list[ChannelKey]]) -> list[ChannelKey]:
    """One cycle of the wait graph (in the order of the waits), empty if there is none."""
    state: dict[ChannelKey, int] = {}  # 1 on the stack, 2 done
    for root in sorted(edges):
        if state.get(root):
            continue
        stack: list[tuple[ChannelKey, Iterable[ChannelKey]]] = [(root, iter(sorted(edges.get(root, []))))]
        path = [root]
        state[root] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                path.pop()
                state[node] = 2
            elif state.get(child) == 1:
                return path[path.index(child) :]
            elif not state.get(child):
                state[child] = 1
                path.append(child)
                stack.append((child, iter(sorted(edges.get(child, [])))))
    return []


def model_dependencies(pairs: AllPairs) -> set[tuple[ChannelKey, ChannelKey]]:
    """The channel dependency graph of the tables as ((card, port, queue), (card, port, queue)) pairs."""
    edges = dependencies(pairs)
    net, queues = pairs.tables.network, pairs.tables.queues_per_port()
    named = {}
    for channel in np.unique(edges).tolist():
        described = describe_channel(net, pairs.width, queues, channel)
        named[channel] = (described.card, described.port, described.queue)
    return {(named[a], named[b]) for a, b in edges.tolist()}


def compare_with_model(cycle: list[ChannelKey], model: set[tuple[ChannelKey, ChannelKey]]) -> dict[str, Any]:
    """Which waits of the observed cycle are model dependencies (all: it is one of the model's cycles)."""
    waits = list(zip(cycle, cycle[1:] + cycle[:1], strict=True))
    missing = [f"{a} -> {b}" for a, b in waits if (a, b) not in model]
    return {"cycle_in_dependency_graph": not missing, "waits_not_in_dependency_graph": missing}


@dataclass
class DeadlockWatch:
    """Polls cards (``read_stats() -> {card: stats}``) and says when a deadlock has lasted ``after_s``."""

    read_stats: Callable[[], dict[str, dict[str, Any]]]
    peers: Peers
    after_s: float = DEFAULT_DEADLOCK_AFTER_S
    interval_s: float = POLL_INTERVAL_S
    _dequeued: dict[ChannelKey, int] = field(default_factory=dict)
    _stalled_since: dict[ChannelKey, float] = field(default_factory=dict)
    _next_poll: float = 0.0
    found: dict[str, Any] | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> DeadlockWatch:
        """Poll in a background thread until a deadlock is found or the block ends (read ``found``)."""
        self._thread = threading.Thread(target=self._run, name="deadlock-watch", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10.0)

    def _run(self) -> None:
        while not self._stop.is_set() and self.poll() is None:
            self._stop.wait(max(0.0, self._next_poll - time.monotonic()))

    def poll(self, now: float | None = None) -> dict[str, Any] | None:
        """Poll if due; the deadlock (cycle, how long) once one has lasted ``after_s``, else None."""
        now = time.monotonic() if now is None else now
        if self.found is not None or now < self._next_poll:
            return self.found
        self._next_poll = now + self.interval_s
        stalled, self._dequeued = stalled_channels(self.read_stats(), self._dequeued)
        self._stalled_since = {key: self._stalled_since.get(key, now) for key in stalled}
        lasting = {
            key: value for key, value in stalled.items() if now - self._stalled_since[key] >= self.after_s
        }
        cycle = find_cycle(wait_edges(lasting, self.peers))
        if cycle:
            self.found = {
                "cycle": [{"card": card, "port": port, "priority": prio} for card, port, prio in cycle],
                "stalled_channels": len(stalled),
                "stalled_for_s": round(now - max(self._stalled_since[key] for key in cycle), 3),
                "after_s": self.after_s,
            }
        return self.found
