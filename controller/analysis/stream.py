"""The block loop of the analysis: tables of a few destinations at a time, validated, added to Totals.

The blocks come from ``TableSpec.blocks()`` (the same builder the installer
uses, one block of destinations at a time) or from slicing whole tables, so
memory holds one block's entries and paths, never all N(N-1) paths.
"""

from __future__ import annotations

import multiprocessing
import queue
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
    cards: CardFollow | None = None,
) -> Totals:
    """``gather`` over the spec's blocks followed on their cards (controller/analysis/follow.py): the
    same Totals, from the builder's grids of each block instead of its compacted entries' paths.

    ``on_block`` is called with None after each block (no paths are made); ``cards``: the spec's
    CardFollow, if one is made already.
    """
    net = spec.network
    fattree = spec.network.topology.family == "twin-fattree"
    totals = Totals(net, spec.num_classes, traffic=traffic is not None, unit_loads=fattree)
    cards = cards or CardFollow(spec)
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
    dsts_per_block: int | None = None,
) -> Totals:
    """``follow`` over the spec's chunks of blocks, shared by `workers` forked processes (in this
    process if 1): each chunk summed on its own, the chunks' Totals then added in order.

    The chunks depend on the network alone and a worker takes the next chunk when it is done with
    one, so the processes stay busy to the end and the report is the same for any number of
    workers; its loads may differ from one running sum over the whole tables (``follow``) in the
    last bits (within 1e-12 relative). ``on_block`` is called (with None) as blocks finish;
    ``meanwhile`` runs in this process once the workers have started.
    """
    chunks = chunk_ranges(spec, dsts_per_block)
    workers = max(1, min(workers, len(chunks)))
    if workers == 1:
        if meanwhile is not None:
            meanwhile()
        cards = CardFollow(spec)
        merged = None
        for blocks in chunks:
            merged = _add(merged, follow(spec, traffic, blocks, on_block, cards))
        assert merged is not None
        return merged
    context = multiprocessing.get_context("fork")
    tasks, results = context.Queue(), context.Queue()
    for index in range(len(chunks)):
        tasks.put(index)
    for _ in range(workers):
        tasks.put(None)  # no more chunks
    processes = [
        context.Process(target=_worker, args=(spec, traffic, chunks, tasks, results), daemon=True)
        for _ in range(workers)
    ]
    for process in processes:
        process.start()
    merged: Totals | None = None  # the chunks so far, in order
    waiting: dict[int, Totals] = {}  # chunks done before one of an earlier index
    added = 0
    try:
        if meanwhile is not None:
            meanwhile()
        while added < len(chunks):
            try:
                kind, index, payload = results.get(timeout=WORKER_CHECK_SECONDS)
            except queue.Empty:
                _check_alive(processes)
                continue
            if kind == "block":
                if on_block is not None:
                    on_block(None)
            elif kind == "error":
                raise payload
            else:
                payload.network = spec.network
                waiting[index] = payload
                while added in waiting:
                    merged = _add(merged, waiting.pop(added))
                    added += 1
    finally:
        for process in processes:
            if process.is_alive() and added < len(chunks):
                process.terminate()
            process.join()
    assert merged is not None
    return merged


#: how often the parent checks that its workers are alive while it waits for their chunks
WORKER_CHECK_SECONDS = 1.0
#: chunks of destinations the blocks are grouped in for several workers: enough that the workers
#: finish close together, few enough that passing and adding their Totals costs little
CHUNKS = 32


def chunk_ranges(spec: TableSpec, dsts_per_block: int | None = None) -> list[list[tuple[int, int]]]:
    """The follow's blocks of destinations (``dsts_per_block``, default by FOLLOW_CELLS) in about
    CHUNKS chunks of consecutive blocks: from the network alone, whatever the number of workers."""
    ranges = spec.ranges(dsts_per_block or spec.default_block(FOLLOW_CELLS))
    per_chunk = -(-len(ranges) // CHUNKS)
    return [ranges[at : at + per_chunk] for at in range(0, len(ranges), per_chunk)]


def _check_alive(processes: list) -> None:
    """Raise if a worker ended without sending its chunks or an error (killed, out of memory)."""
    for process in processes:
        if process.exitcode not in (None, 0):
            raise RuntimeError(
                f"an analysis worker (pid {process.pid}) ended with exit code {process.exitcode} "
                "before its chunks were done (killed, or out of memory?)"
            )


def _add(merged: Totals | None, chunk: Totals) -> Totals:
    """The Totals of the chunks before `chunk` (None: none) with `chunk`'s added."""
    if merged is None:
        return chunk
    merged.merge(chunk)
    return merged


def blocks_of(spec: TableSpec, follow: bool = True) -> int:
    """Number of blocks the analysis goes through (for its progress bar), on any number of workers;
    with ``follow=False``, of the walk of every path (``spec_blocks``, one process)."""
    return len(spec.ranges(spec.default_block(FOLLOW_CELLS) if follow else None))


def _worker(
    spec: TableSpec, traffic: Traffic | None, chunks: list[list[tuple[int, int]]], tasks, results
) -> None:
    """One worker: chunks taken one after the other until none is left, a message per block, then
    each chunk's Totals (or the error)."""
    try:
        cards = CardFollow(spec)
        while (index := tasks.get()) is not None:
            totals = follow(
                spec, traffic, chunks[index], lambda _: results.put(("block", index, None)), cards
            )
            results.put(("chunk", index, totals))
    except BaseException as error:  # noqa: BLE001 - sent to the parent, which raises it
        results.put(("error", -1, error))
