"""Refuse, before allocating, an analysis that would not fit in the memory available now.

The analysis holds one block of destinations at a time (its table entries,
paths and a dense successor look-up), the running totals over links and
channels, and the traffic's flow arrays. ``estimate`` adds these up from the
network's size alone, with per-entry costs measured on 3D twin tori and twin
fat trees (scripts/bench_analysis.py prints the peak RSS to compare).
"""

from __future__ import annotations

import os

from controller.analysis.traffic import AllPairsTraffic, Traffic
from controller.routing.builder import ANALYSIS_CELLS, TableSpec
from topologies.errors import TwinnetError

#: peak bytes per table entry of a block while it is built and analysed (measured, with margin)
BYTES_PER_ENTRY = 160
#: bytes of the interpreter, numpy and the topology model before the analysis starts
BASE_BYTES = 150 << 20
#: queues per port assumed for the deadlock flags (DORT with two split dimensions uses 8)
QUEUES = 8


class MemoryEstimateError(TwinnetError, ValueError):
    """The analysis of this network would need more memory than is available."""


def estimate(spec: TableSpec, traffic: Traffic | None = None, workers: int = 1) -> int:
    """Bytes the analysis of `spec`'s tables (with `traffic`, on `workers` processes) needs at its peak."""
    net = spec.network
    per_block = spec.default_block(ANALYSIS_CELLS)
    # per destination: a first hop per source PE, and per class one entry behind each card it reaches
    entries = per_block * (net.num_pes + net.num_cards * spec.num_classes)
    # dense (destination, class, card, port) cells: the builder's entry marks and the successor look-up
    cells = per_block * spec.num_classes * net.num_cards * (net.max_port + 1) * 8
    links = net.num_cards * (net.max_port + 1)
    totals = links * QUEUES * QUEUES * (net.max_port + 1) + links * 8 * (2 + QUEUES)
    flows = 0
    if traffic is not None and not isinstance(traffic, AllPairsTraffic):
        flows = traffic.num_flows * 32
    weights = net.num_pes * per_block * 8 if traffic is not None else 0
    topology = (net.num_cards + net.num_pes) * 4096
    return BASE_BYTES + topology + flows + workers * (entries * BYTES_PER_ENTRY + cells + totals + weights)


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


def check_memory(spec: TableSpec, traffic: Traffic | None = None, workers: int = 1) -> None:
    """Raise MemoryEstimateError (one line) if the analysis needs more than the available memory."""
    need, have = estimate(spec, traffic, workers), available()
    if need > have:
        raise MemoryEstimateError(
            f"analysing {spec.network.num_pes} PEs ({spec.algorithm}) needs about {need / 2**30:.1f} GiB "
            f"but {have / 2**30:.1f} GiB are available; use a smaller network"
            + (" or fewer --workers" if workers > 1 else "")
        )
