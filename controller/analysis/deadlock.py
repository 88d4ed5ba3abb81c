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
from controller.routing.network import HOST, CardNetwork


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


def queue_stride(queue_bound: int) -> int:
    """The flags' queues per channel for queues below `queue_bound`: the power of two at or above it."""
    stride = 1
    while stride < queue_bound:
        stride *= 2
    return stride


class Dependencies:
    """The CDG's channels and edges gathered block by block of destinations, as flags over dense ids.

    A dependency a -> b is stored as (link of a, queue of a, egress port of b,
    queue of b): b's card is the far end of a's link, so the flags cover
    links x Q x ports x Q cells with Q a power of two above every queue seen
    (grown when a block needs more). Their order is the order of (a, b) ids.
    """

    def __init__(self, num_cards: int, width: int) -> None:
        self.num_cards, self.width = num_cards, width
        self.stride = 1
        self.links = num_cards * width
        self.edge_flags = np.zeros(self.links * width + 1, dtype=bool)  # + a spare cell: see `add`
        self.channel_flags = np.zeros(self.links, dtype=bool)

    def _grow(self, queue_bound: int) -> None:
        """Re-encode the flags for queues below `queue_bound`."""
        stride = max(self.stride, queue_stride(queue_bound))
        if stride == self.stride:
            return
        old, s = self.stride, stride
        link_a, q_a, port_b, q_b = np.unravel_index(
            np.flatnonzero(self.edge_flags[:-1]), (self.links, old, self.width, old)
        )
        self.edge_flags = np.zeros(self.links * s * self.width * s + 1, dtype=bool)
        self.edge_flags[((link_a * s + q_a) * self.width + port_b) * s + q_b] = True
        link, queue = np.divmod(np.flatnonzero(self.channel_flags), old)
        self.channel_flags = np.zeros(self.links * s, dtype=bool)
        self.channel_flags[link * s + queue] = True
        self.stride = stride

    def add(self, pairs: AllPairs) -> None:
        """Mark the channels and dependencies of the paths in `pairs` (one block of destinations)."""
        t = pairs.tables
        if not len(t):
            return
        queue = pairs.queues
        self._grow(int(queue.max()) + 1)
        s = self.stride
        dtype = np.int32 if self.edge_flags.size < 1 << 31 else np.int64
        channel = pairs.link.astype(dtype) * s + queue
        card_link = pairs.kind != HOST
        self.channel_flags[channel[card_link]] = True
        # a -> b for every entry a on a card link whose successor b also sends on one; the other
        # entries write the spare last cell (a select and one scatter, no compaction)
        after = pairs.succ
        follows = card_link & (after >= 0)
        follows &= card_link[after]
        tail = t.egress_port.astype(dtype) * s + queue
        spare = self.edge_flags.size - 1
        self.edge_flags[np.where(follows, channel * (self.width * s) + tail[after], spare)] = True

    def merge(self, other: Dependencies) -> None:
        """Add the flags another accumulator gathered (another worker's blocks)."""
        self._grow(other.stride)
        link_a, q_a, port_b, q_b = np.unravel_index(
            np.flatnonzero(other.edge_flags[:-1]), (other.links, other.stride, other.width, other.stride)
        )
        s = self.stride
        self.edge_flags[((link_a * s + q_a) * self.width + port_b) * s + q_b] = True
        link, queue = np.divmod(np.flatnonzero(other.channel_flags), other.stride)
        self.channel_flags[link * s + queue] = True

    def __getstate__(self) -> dict:
        """Pickled as the indices of the flags set (a chunk of 3DT 16x16x16 sets ~2% of its edge flags)."""
        state = dict(self.__dict__)
        state["edge_flags"] = (self.edge_flags.size, np.flatnonzero(self.edge_flags))
        state["channel_flags"] = (self.channel_flags.size, np.flatnonzero(self.channel_flags))
        return state

    def __setstate__(self, state: dict) -> None:
        for name in ("edge_flags", "channel_flags"):
            size, set_at = state[name]
            state[name] = np.zeros(size, dtype=bool)
            state[name][set_at] = True
        self.__dict__.update(state)

    def channels(self) -> int:
        """Distinct channels (card-to-card link, queue) the paths send on."""
        return int(np.count_nonzero(self.channel_flags))

    def edges(self, peer_card: np.ndarray, queues: int) -> np.ndarray:
        """Distinct edges as sorted rows of (from channel id, to channel id), ids with `queues` per port."""
        s, q = self.stride, max(1, queues)
        link_a, q_a, port_b, q_b = np.unravel_index(
            np.flatnonzero(self.edge_flags[:-1]), (self.links, s, self.width, s)
        )
        card_a, port_a = np.divmod(link_a, self.width)
        card_b = peer_card[card_a, port_a].astype(np.int64)
        first = link_a * q + q_a
        second = (card_b * self.width + port_b) * q + q_b
        return np.stack([first, second], axis=1).astype(np.int64).reshape(-1, 2)


def dependencies(pairs: AllPairs) -> np.ndarray:
    """Distinct CDG edges as an array of (from channel id, to channel id) rows."""
    found = Dependencies(pairs.tables.network.num_cards, pairs.width)
    found.add(pairs)
    return found.edges(pairs.tables.network.peer_card, pairs.tables.queues_per_port())


def check_deadlock(pairs: AllPairs) -> DeadlockReport:
    """Build the CDG of all paths and look for a cycle (Kahn's algorithm, one vectorised round per level)."""
    found = Dependencies(pairs.tables.network.num_cards, pairs.width)
    found.add(pairs)
    return cdg_report(found, pairs.tables.network, pairs.tables.queues_per_port())


def cdg_report(found: Dependencies, net: CardNetwork, queues_per_port: int) -> DeadlockReport:
    """Look for a cycle in the gathered CDG (Kahn's algorithm, one vectorised round per level)."""
    edges = found.edges(net.peer_card, queues_per_port)
    channels = found.channels()
    nodes = distinct(edges)
    compact = np.searchsorted(nodes, edges)
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
        tuple(describe_channel(net, found.width, queues_per_port, c) for c in _find_cycle(remaining)),
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


def describe_channel(net: CardNetwork, width: int, queues_per_port: int, channel: int) -> Channel:
    """The Channel a channel id (ports `width` apart, `queues_per_port` queues each) stands for."""
    queues = max(1, queues_per_port)
    link, queue = divmod(int(channel), queues)
    card, port = divmod(link, width)
    return Channel(
        net.card_names[card],
        port,
        net.port_name(card, port),
        net.card_names[int(net.peer_card[card, port])],
        int(net.peer_port[card, port]),
        queue,
        net.link_kind_name(card, port),
    )
