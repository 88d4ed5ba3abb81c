"""The block loop of the analysis: tables of a few destinations at a time, validated, added to Totals.

The blocks come from ``TableSpec.blocks()`` (the same builder the installer
uses, one block of destinations at a time) or from slicing whole tables, so
memory holds one block's entries and paths, never all N(N-1) paths.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import numpy as np

from controller.analysis.paths import AllPairs
from controller.analysis.totals import Totals
from controller.analysis.traffic import Traffic
from controller.routing.builder import CELLS_PER_CHUNK, TableSpec
from controller.routing.table import RoutingTables

#: a block: destinations [first, last) and their entries
Block = tuple[int, int, RoutingTables]


def table_blocks(tables: RoutingTables, dsts_per_block: int | None = None) -> Iterator[Block]:
    """Whole tables cut into blocks of consecutive destinations (entries are sorted by destination)."""
    net = tables.network
    step = dsts_per_block or max(1, CELLS_PER_CHUNK // max(1, net.num_cards))
    for first in range(0, net.num_pes, step):
        last = min(net.num_pes, first + step)
        a, b = np.searchsorted(tables.dst_pe, [first, last])
        yield first, last, tables.slice(int(a), int(b))


def spec_blocks(spec: TableSpec, dsts_per_block: int | None = None) -> Iterator[Block]:
    """The tables of a TableSpec built block by block."""
    for first, last in spec.ranges(dsts_per_block):
        yield first, last, spec.block(first, last)


def gather(
    tables: RoutingTables,
    blocks: Iterable[Block],
    traffic: Traffic | None = None,
    on_block: Callable[[AllPairs], None] | None = None,
) -> Totals:
    """Validate every block's paths and add them up; `tables` gives the conventions (entries unused).

    ``on_block`` sees each block's AllPairs after it is added (to stream paths or report progress).
    """
    net = tables.network
    fattree = tables.topology.family == "twin-fattree"
    totals = Totals(net, tables.num_classes, traffic=traffic is not None, unit_loads=fattree)
    for first, last, block in blocks:
        pairs = AllPairs(block, first, last)
        weights = None
        if traffic is not None:
            weights = pairs.block_weights(traffic.pair_weights(first, last, net.num_pes))
        totals.add(pairs, weights)
        if on_block is not None:
            on_block(pairs)
    return totals


def gather_parallel(
    spec: TableSpec,
    traffic: Traffic | None,
    workers: int,
    on_block: Callable[[AllPairs | None], None] | None = None,
) -> Totals:
    """``gather`` over the spec's blocks shared by `workers` processes (fork), totals added in block order.

    Loads are summed per worker and then added, so they may differ from one process's running sum in
    the last bits (within 1e-12 relative).
    """
    raise NotImplementedError
