"""Sums, maxima and flags of the all-pairs analysis, gathered one block of destinations at a time.

Every figure of the report is a sum, a maximum, a count or a set over paths or
table entries, and every path and entry belongs to exactly one destination, so
the blocks of ``TableSpec.blocks()`` can be analysed one after the other (or
by separate workers) and added up here. Per-link and per-channel loads are
summed block after block as one running sum (``running_sum``), in entry
order, so that they come out bit for bit as a sum over the whole tables (with
several workers: per chunk of blocks, the chunks then added in order; see
controller/analysis/stream.py).
"""

from __future__ import annotations

import numpy as np

from controller.analysis.deadlock import Dependencies
from controller.analysis.paths import AllPairs
from controller.routing.network import CardNetwork
from controller.routing.table import USE_CODE

#: uses of a twin fat tree's internal links (Villar 2011's crossings)
CROSSING_USES = (USE_CODE["ascend"], USE_CODE["turn"], USE_CODE["descend"])


def running_sum(total: np.ndarray, index: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``total`` with ``weights`` added at ``index`` one after the other, in place (np.bincount's order)."""
    np.add.at(total, index, weights)
    return total


class Totals:
    """Figures over all paths and entries seen so far (call ``add`` for each block, in destination order)."""

    def __init__(self, network: CardNetwork, num_classes: int, traffic: bool, unit_loads: bool) -> None:
        self.network = network
        self.width = network.max_port + 1
        self.num_classes = num_classes
        self.entries = 0
        self.entries_per_card = np.zeros(network.num_cards, dtype=np.int64)
        self.vc_use = np.zeros(4 * 256, dtype=np.int64)  # entries per (link kind, VC)
        self.max_queue = -1
        self.paths = 0
        self.external_sum = self.internal_sum = self.links_sum = 0
        self.external_max = self.internal_max = self.links_max = 0
        self.paths_with_internal = 0
        self.dependencies = Dependencies(network.num_cards, self.width)
        self.crossings_per_card = np.zeros(network.num_cards) if unit_loads else None
        links = network.num_cards * self.width
        self.link_load = np.zeros(links) if traffic else None
        self.queue_stride = 1
        self.channel_load = np.zeros(links) if traffic else None

    def add(self, pairs: AllPairs, weights: np.ndarray | None = None) -> None:
        """Add one block's paths (validated AllPairs of its tables) and, with traffic, its path weights."""
        t = pairs.tables
        self.entries += len(t)
        self.entries_per_card += np.bincount(t.card_id, minlength=self.network.num_cards)
        self.vc_use += np.bincount(pairs.kind.astype(np.int32) * 256 + t.vc, minlength=self.vc_use.size)
        queues = pairs.queues
        top = int(queues.max(initial=-1))
        self.max_queue = max(self.max_queue, top)
        self._add_hops(pairs)
        self.dependencies.add(pairs)
        if self.crossings_per_card is not None:
            crossing = np.isin(t.use, CROSSING_USES)
            loads = pairs.loads()
            self.crossings_per_card += np.bincount(
                t.card_id[crossing], weights=loads[crossing], minlength=self.network.num_cards
            )
        if weights is not None and self.link_load is not None and self.channel_load is not None:
            load = pairs.loads(weights)
            self.link_load = running_sum(self.link_load, pairs.link, load)
            if top >= self.queue_stride:
                self._widen(top + 1)
            dtype = np.int32 if self.channel_load.size < 1 << 31 else np.int64
            channel = pairs.link.astype(dtype) * self.queue_stride + queues
            self.channel_load = running_sum(self.channel_load, channel, load)

    def _add_hops(self, pairs: AllPairs) -> None:
        external, internal = pairs.external(), pairs.internal()
        links = external + internal
        self.paths += pairs.num_paths
        if not links.size:
            return
        self.external_sum += int(external.sum(dtype=np.int64))
        self.internal_sum += int(internal.sum(dtype=np.int64))
        self.links_sum += int(links.sum(dtype=np.int64))
        self.external_max = max(self.external_max, int(external.max()))
        self.internal_max = max(self.internal_max, int(internal.max()))
        self.links_max = max(self.links_max, int(links.max()))
        self.paths_with_internal += int(np.count_nonzero(internal))

    def _widen(self, queues: int) -> None:
        """Room for `queues` queues per port in the channel loads."""
        assert self.channel_load is not None
        stride = self.queue_stride
        while stride < queues:
            stride *= 2
        wider = np.zeros((self.channel_load.size // self.queue_stride, stride))
        wider[:, : self.queue_stride] = self.channel_load.reshape(-1, self.queue_stride)
        self.channel_load, self.queue_stride = wider.ravel(), stride

    def merge(self, other: Totals) -> None:
        """Add the figures another Totals gathered over other blocks (another worker's)."""
        self.entries += other.entries
        self.entries_per_card += other.entries_per_card
        self.vc_use += other.vc_use
        self.max_queue = max(self.max_queue, other.max_queue)
        self.paths += other.paths
        self.external_sum += other.external_sum
        self.internal_sum += other.internal_sum
        self.links_sum += other.links_sum
        self.external_max = max(self.external_max, other.external_max)
        self.internal_max = max(self.internal_max, other.internal_max)
        self.links_max = max(self.links_max, other.links_max)
        self.paths_with_internal += other.paths_with_internal
        self.dependencies.merge(other.dependencies)
        if self.crossings_per_card is not None and other.crossings_per_card is not None:
            self.crossings_per_card += other.crossings_per_card
        if self.link_load is not None and other.link_load is not None:
            self.link_load += other.link_load
        if self.channel_load is not None and other.channel_load is not None:
            if other.queue_stride > self.queue_stride:
                self._widen(other.queue_stride)
            theirs = np.zeros((other.channel_load.size // other.queue_stride, self.queue_stride))
            theirs[:, : other.queue_stride] = other.channel_load.reshape(-1, other.queue_stride)
            self.channel_load += theirs.ravel()

    def __getstate__(self) -> dict:
        """Pickled without the network (workers send their Totals back; the receiver has the network)."""
        state = dict(self.__dict__)
        state["network"] = None
        return state

    # -- results --------------------------------------------------------------------

    @property
    def queues_per_port(self) -> int:
        """Highest queue index used plus one (0 without entries)."""
        return self.max_queue + 1

    def vcs_per_link(self) -> dict[str, int]:
        """Distinct VCs the entries use, per link kind (as RoutingTables.vcs_per_link)."""
        used = self.vc_use.reshape(4, 256)
        result = {}
        for code, name in ((1, "external"), (2, "internal"), (3, "host")):
            count = int(np.count_nonzero(used[code]))
            if count:
                result[name] = count
        return result

    def max_channel_load(self) -> float:
        """Highest load on one (card link, queue), host links included as the tables' channels are."""
        assert self.channel_load is not None
        return float(self.channel_load.max(initial=0.0))
