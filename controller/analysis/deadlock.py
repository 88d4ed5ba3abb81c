"""Deadlock check on the channel dependency graph (CDG) of route tables (docs/contracts.md).

A channel is (directed card-to-card link, queue): the egress port of a card and
the priority queue the packet waits in there. A packet that holds channel a and
asks for channel b adds the dependency a -> b; every pair of consecutive
card-to-card hops of every path adds one. Routing is deadlock-free (Dally and
Seitz) if this graph has no cycle. Host links are sinks and sources only and
are left out. The check peels channels without incoming dependencies, all at
once per round; what is left contains a cycle, which is reported as its list
of channels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from controller.analysis.paths import AllPairs
from controller.routing.arrays import distinct
from controller.routing.network import HOST


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
