"""Time the analysis layer: route tables, all-pairs paths and the deadlock check, small and large networks.

Run from the project root:  .venv/bin/python scripts/bench_analysis.py [--only small|large]

Prints one line per case: PEs, table entries, seconds to build the tables, to
link and count all paths, and to check the channel dependency graph, and the
average path length as a sanity figure. Wall-clock figures depend on the
machine and its load; compare sizes within one run.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller.analysis.deadlock import check_deadlock  # noqa: E402
from controller.analysis.paths import AllPairs  # noqa: E402
from controller.routing import compute_tables  # noqa: E402
from topologies.fattree import twin_fattree  # noqa: E402
from topologies.torus import ndt_torus  # noqa: E402

CASES = [
    ("small", "3DT 4x4x4 DORT", lambda: ndt_torus((4, 4, 4)), "dort"),
    ("small", "3DT 4x4x4 TS-DOR", lambda: ndt_torus((4, 4, 4)), "ts-dor"),
    ("small", "5DT 4x4x2x2x2 TS-DOR", lambda: ndt_torus((4, 4, 2, 2, 2)), "ts-dor"),
    ("small", "twin 8-ary 3-tree DESTRO", lambda: twin_fattree(8, 3), "destro"),
    ("large", "3DT 8x8x8 DORT", lambda: ndt_torus((8, 8, 8)), "dort"),
    ("large", "3DT 8x8x8 TS-DOR", lambda: ndt_torus((8, 8, 8)), "ts-dor"),
    ("large", "5DT 4x4x4x4x4 DORT", lambda: ndt_torus((4, 4, 4, 4, 4)), "dort"),
    ("large", "5DT 4x4x4x4x4 TS-DOR", lambda: ndt_torus((4, 4, 4, 4, 4)), "ts-dor"),
    ("large", "twin 16-ary 3-tree DESTRO", lambda: twin_fattree(16, 3), "destro"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("small", "large"), help="run only the small or the large cases")
    args = parser.parse_args()
    print(f"{'case':<28} {'PEs':>5} {'entries':>10} {'topo s':>7} {'tables s':>8} {'paths s':>8} "
          f"{'CDG s':>6} {'total s':>8} {'avg links':>9} deadlock-free")
    for size, name, build, algorithm in CASES:
        if args.only and size != args.only:
            continue
        start = time.perf_counter()
        topology = build()
        built = time.perf_counter()
        tables = compute_tables(topology, algorithm)
        tabled = time.perf_counter()
        pairs = AllPairs(tables)
        walked = time.perf_counter()
        report = check_deadlock(pairs)
        checked = time.perf_counter()
        print(f"{name:<28} {len(topology.hosts):>5} {len(tables):>10} {built - start:>7.2f} "
              f"{tabled - built:>8.2f} {walked - tabled:>8.2f} {checked - walked:>6.2f} "
              f"{checked - built:>8.2f} {float(pairs.links().mean()):>9.4f} {report.deadlock_free}",
              flush=True)
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
