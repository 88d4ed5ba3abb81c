"""The block loop of the analysis: tables of a few destinations at a time, validated, added to Totals.

The blocks come from ``TableSpec.blocks()`` (the same builder the installer
uses, one block of destinations at a time) or from slicing whole tables, so
memory holds one block's entries and paths, never all N(N-1) paths.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from controller.analysis.follow import FOLLOW_CELLS, CardFollow
from controller.analysis.paths import AllPairs
from controller.analysis.totals import Totals
from controller.analysis.traffic import Traffic
from controller.routing.builder import ANALYSIS_CELLS, TableSpec
from controller.routing.table import RoutingTables

#: a block: destinations [first, last) and their entries
Block = tuple[int, int, RoutingTables]


def table_blocks(tables: RoutingTables, dsts_per_block: int | None = None) -> Iterator[Block]:
    """Whole tables cut into blocks of consecutive destinations (entries are sorted by destination)."""
    net = tables.network
    step = dsts_per_block or max(1, ANALYSIS_CELLS // max(1, net.num_cards))
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


def follow(
    spec: TableSpec,
    traffic: Traffic | None = None,
    ranges: list[tuple[int, int]] | None = None,
    on_block: Callable[[AllPairs | None], None] | None = None,
) -> Totals:
    """``gather`` over the spec's blocks followed on their cards (controller/analysis/follow.py): the
    same Totals, from the builder's grids of each block instead of its compacted entries' paths.

    ``on_block`` is called with None after each block (no paths are made).
    """
    net = spec.network
    fattree = spec.network.topology.family == "twin-fattree"
    totals = Totals(net, spec.num_classes, traffic=traffic is not None, unit_loads=fattree)
    cards = CardFollow(spec)
    for first, last in spec.ranges(spec.default_block(FOLLOW_CELLS)) if ranges is None else ranges:
        matrix = traffic.pair_weights(first, last, net.num_pes) if traffic is not None else None
        cards.add(totals, spec.grids(first, last), matrix)
        if on_block is not None:
            on_block(None)
    return totals


def gather_parallel(
    spec: TableSpec,
    traffic: Traffic | None,
    workers: int,
    on_block: Callable[[AllPairs | None], None] | None = None,
    meanwhile: Callable[[], None] | None = None,
) -> Totals:
    """``gather`` over the spec's blocks shared by `workers` forked processes, their Totals then added.

    Worker w takes blocks w, w + workers, ...; loads are summed per worker and
    then added, so they may differ from one process's running sum in the last
    bits (within 1e-12 relative). ``on_block`` is called (with None) as blocks finish;
    ``meanwhile`` runs in this process once the workers have started.
    """
    ranges = spec.ranges(_per_block(spec, workers))
    workers = max(1, min(workers, len(ranges)))
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    processes = [
        context.Process(target=_worker, args=(spec, traffic, ranges[w::workers], w, queue), daemon=True)
        for w in range(workers)
    ]
    for process in processes:
        process.start()
    results: dict[int, Totals] = {}
    try:
        if meanwhile is not None:
            meanwhile()
        while len(results) < workers:
            kind, worker, payload = queue.get()
            if kind == "block":
                if on_block is not None:
                    on_block(None)
            elif kind == "error":
                raise payload
            else:
                payload.network = spec.network
                results[worker] = payload
    finally:
        for process in processes:
            if process.is_alive() and len(results) < workers:
                process.terminate()
            process.join()
    totals = results[0]
    for w in range(1, workers):
        totals.merge(results[w])
    return totals


def _per_block(spec: TableSpec, workers: int) -> int:
    """Destinations per block of the follow: the default, or fewer so that each of several workers gets
    four blocks."""
    most = spec.default_block(FOLLOW_CELLS)
    if workers <= 1:
        return most
    return max(1, min(most, -(-spec.network.num_pes // (4 * workers))))


def blocks_of(spec: TableSpec, workers: int = 1, follow: bool = True) -> int:
    """Number of blocks an analysis on `workers` processes goes through (for its progress bar); with
    ``follow=False``, of the walk of every path (``spec_blocks``, one process)."""
    return len(spec.ranges(_per_block(spec, workers) if follow else None))


def _worker(
    spec: TableSpec, traffic: Traffic | None, ranges: list[tuple[int, int]], worker: int, queue
) -> None:
    """One worker's share: its blocks followed, a message per block, then its Totals (or the error)."""
    try:
        totals = follow(spec, traffic, ranges, on_block=lambda _: queue.put(("block", worker, None)))
        queue.put(("totals", worker, totals))
    except BaseException as error:  # noqa: BLE001 - sent to the parent, which raises it
        queue.put(("error", worker, error))
