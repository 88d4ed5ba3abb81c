"""Refuse, before allocating, an analysis that would not fit in the memory available now.

The analysis follows one block of destinations at a time on its cards (its
(destination, class, card) grids and loads, the dense (destination, class,
card, port) entry marks, and its entries' loads read in table order), adds it
into running totals over links and channels, and at the end reads the traffic's per-source sums. ``estimate``
adds these up from the network's size alone, with per-cell costs measured on 3D
twin tori and twin fat trees (scripts/bench_analysis.py prints the peak RSS to
compare). With ``--paths-out`` every path of a block is walked instead
(``paths=True``): a cost per table entry.
"""

from __future__ import annotations

import os

from controller.analysis.deadlock import queue_stride
from controller.analysis.follow import FOLLOW_CELLS
from controller.analysis.traffic import SOURCES_AT_ONCE, AllPairsTraffic, Traffic
from controller.routing.builder import ANALYSIS_CELLS, TableSpec
from controller.routing.table import queue_number
from topologies.errors import TwinnetError

#: bytes of the interpreter, numpy and the analysis's modules before the network is built
BASE_BYTES = 40 << 20
#: bytes of the topology model and the card network per card and per PE (measured ~2,200 on nDTs)
BYTES_PER_NODE = 3072
#: peak bytes per (destination, class, card) cell of a followed block: decisions, tree, levels, loads
#: (the fold's row of cell loads included)
BYTES_PER_CELL = 88
#: peak bytes per (destination, class, card, port) cell of a followed block: entry marks
BYTES_PER_PORT_CELL = 2
#: peak bytes per table entry of a followed block (entry order, where its load is read, loads, link
#: and channel indices)
BYTES_PER_FOLLOWED_ENTRY = 40
#: peak bytes per table entry of a block whose paths are all walked (--paths-out)
BYTES_PER_WALKED_ENTRY = 160
#: queues per port assumed for the deadlock flags when the routing names no VCs
QUEUES = 8


class MemoryEstimateError(TwinnetError, ValueError):
    """The analysis of this network would need more memory than is available."""


def estimate(spec: TableSpec, traffic: Traffic | None = None, workers: int = 1, paths: bool = False) -> int:
    """Bytes the analysis of `spec`'s tables (with `traffic`, on `workers` processes) needs at its peak;
    ``paths``: walking every path (``--paths-out``, one process) instead of following the cards."""
    net = spec.network
    width = net.max_port + 1
    per_block = spec.default_block(ANALYSIS_CELLS if paths else FOLLOW_CELLS)
    cells = per_block * spec.num_classes * net.num_cards
    # per destination: a first hop per source PE, and per class one entry behind each card it reaches
    entries = per_block * (net.num_pes + net.num_cards * spec.num_classes)
    if paths:
        block = entries * BYTES_PER_WALKED_ENTRY + cells * width * 8  # marks and successor look-up
    else:
        block = cells * (BYTES_PER_CELL + width * BYTES_PER_PORT_CELL) + entries * BYTES_PER_FOLLOWED_ENTRY
    links = net.num_cards * width
    stride = _queue_stride(spec)
    totals = links * stride * stride * width + links * stride  # dependency and channel flags
    weights = 0
    flows = 0
    if traffic is not None:
        totals += links * 8 * (1 + stride)  # link and channel loads
        weights = net.num_pes * per_block * 8 * 3  # the block's weight matrix, padded and summed
        if isinstance(traffic, AllPairsTraffic):  # the injection, a few sources' weights at a time
            flows = 3 * SOURCES_AT_ONCE * net.num_pes * 8
        else:
            flows = traffic.num_flows * 32
    topology = (net.num_cards + net.num_pes) * BYTES_PER_NODE
    merging = (workers + 1) * totals if workers > 1 else 0  # the parent's sum and chunks waiting for it
    return BASE_BYTES + topology + flows + workers * (block + totals + weights) + merging


def _queue_stride(spec: TableSpec) -> int:
    """Queues per port the deadlock flags are laid out for (a power of two): from the VCs the routing
    names, or QUEUES if it names none."""
    vcs = max((max(names) + 1 for names in spec.vc_names.values() if names), default=QUEUES)
    return queue_stride(queue_number(spec.queue_rule, spec.num_classes - 1, vcs - 1) + 1)


def available() -> int:
    """Memory the system can give now (MemAvailable), in bytes."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_memory(
    spec: TableSpec, traffic: Traffic | None = None, workers: int = 1, paths: bool = False
) -> None:
    """Raise MemoryEstimateError (one line) if the analysis needs more than the available memory."""
    need, have = estimate(spec, traffic, workers, paths), available()
    if need > have:
        raise MemoryEstimateError(
            f"analysing {spec.network.num_pes} PEs ({spec.algorithm}) needs about {need / 2**30:.1f} GiB "
            f"but {have / 2**30:.1f} GiB are available; use a smaller network"
            + (" or fewer --workers" if workers > 1 else "")
        )
