"""Time and peak memory of `twinnet analyze` (uniform traffic, --json) from 1,024 to 32,768 PEs.

Run from the project root:

    .venv/bin/python scripts/bench_analysis.py                    # 1,024 .. 10,648 PEs, 1 and 2 workers
    .venv/bin/python scripts/bench_analysis.py --max-pes 4096     # the smaller ones only
    .venv/bin/python scripts/bench_analysis.py --workers 2 --reference
    .venv/bin/python scripts/bench_analysis.py --large --pes 32768 --workers 2   # 3DT 32x32x16

Every case runs as its own process (``python -m emulation.cli analyze ...``);
the table gives its wall time, CPU seconds (user + system, workers included),
peak resident memory (the largest of the process and its workers, as
``/usr/bin/time -v`` reports it), and how time and memory grow from the row
above. ``--reference`` also runs, in the same way and on the cases of at most
4,096 PEs, the analysis as it was before it streamed blocks (every path at
once, kept in tests/unit/analysis_reference.py), as the figure to compare
with. The twin fat tree of at least 8,192 hosts is the 22-ary 3-tree (10,648
hosts): the 32-ary 3-tree has 32,768. The 32,768-PE case runs only with
``--large``. Wall-clock figures depend on the load of the machine (the 1-minute
load average is printed with every row and at the end); CPU seconds less so.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: (label, PEs, `twinnet analyze` topology and routing arguments)
CASES = [
    ("3DT 8x8x8 DORT", 1024, ["ndt", "--dims", "8x8x8", "--routing", "dort"]),
    ("3DT 16x8x8 DORT", 2048, ["ndt", "--dims", "16x8x8", "--routing", "dort"]),
    ("twin 16-ary 3-tree DESTRO", 4096, ["fattree", "--k", "16", "--n", "3", "--twin"]),
    ("3DT 16x16x8 DORT", 4096, ["ndt", "--dims", "16x16x8", "--routing", "dort"]),
    ("3DT 16x16x16 DORT", 8192, ["ndt", "--dims", "16x16x16", "--routing", "dort"]),
    ("twin 22-ary 3-tree DESTRO", 10648, ["fattree", "--k", "22", "--n", "3", "--twin"]),
    ("3DT 32x32x16 DORT", 32768, ["ndt", "--dims", "32x32x16", "--routing", "dort"]),
]

#: cases above this many PEs run only with --large
LARGE = 10_648

#: the old analysis (all paths at once) run on one case, printing the report as JSON
REFERENCE = """
import json, sys
sys.path[:0] = [{root!r}, {tests!r}]
from analysis_reference import analyze
from controller.analysis.traffic import make_traffic
from controller.routing import algorithms_for, compute_tables
from topologies.build import topology_from_args
from emulation.cli import build_parser
args = build_parser().parse_args(["analyze", *sys.argv[1:]])
topology = topology_from_args(args)
routing = args.routing or algorithms_for(topology.family)[0]
print(json.dumps(analyze(compute_tables(topology, routing), make_traffic("uniform", topology))))
"""


def measure(command: list[str]) -> tuple[float, float, float, dict | None]:
    """Run `command`; (wall s, CPU s, peak RSS MiB, its JSON output or None if it failed)."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, cwd=ROOT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        error = process.stderr.read().decode() if process.stderr else ""
        out.seek(0)
        report = json.loads(out.read()) if process.returncode == 0 else None
    if report is None:
        print(f"  failed ({process.returncode}): {error.strip()[-300:]}", file=sys.stderr)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-pes", type=int, default=None, help="skip cases with more PEs")
    parser.add_argument("--pes", type=int, nargs="+", help="run only the cases with these PE counts")
    parser.add_argument(
        "--workers", type=int, nargs="+", default=[1, 2], help="worker counts to run (default 1 2)"
    )
    parser.add_argument("--reference", action="store_true", help="also time the old analysis (<= 4,096 PEs)")
    parser.add_argument("--large", action="store_true", help="also run the 32,768-PE case (3DT 32x32x16)")
    args = parser.parse_args()
    print(
        f"{'case':<27} {'PEs':>6} {'how':>10} {'wall s':>7} {'CPU s':>7} {'RSS MiB':>8} "
        f"{'x wall':>6} {'x RSS':>6} {'entries':>11} {'avg links':>9} {'load':>5} deadlock-free",
        flush=True,
    )
    last: dict[str, tuple[float, float]] = {}
    for label, pes, topology in CASES:
        if (args.max_pes and pes > args.max_pes) or (args.pes and pes not in args.pes):
            continue
        if pes > LARGE and not args.large:
            continue
        runs = [(f"{w} worker" + ("s" if w > 1 else ""), w) for w in args.workers]
        if args.reference and pes <= 4096:
            runs.append(("reference", 0))
        for how, workers in runs:
            if workers:
                command = [sys.executable, "-m", "emulation.cli", "analyze", *topology]
                command += ["--traffic", "uniform", "--json", "--workers", str(workers)]
            else:
                script = REFERENCE.format(root=str(ROOT), tests=str(ROOT / "tests" / "unit"))
                command = [sys.executable, "-c", script, *topology]
            load = os.getloadavg()[0]
            wall, cpu, rss, report = measure(command)
            grow_wall, grow_rss = (
                (f"{wall / last[how][0]:6.1f}", f"{rss / last[how][1]:6.1f}") if how in last else ("", "")
            )
            last[how] = (wall, rss)
            entries = report["routing"]["entries"] if report else "failed"
            links = f"{report['hops']['avg']:9.4f}" if report else ""
            free = report["deadlock_free"] if report else ""
            print(
                f"{label:<27} {pes:>6} {how:>10} {wall:>7.1f} {cpu:>7.1f} {rss:>8.0f} "
                f"{grow_wall:>6} {grow_rss:>6} {entries:>11} {links:>9} {load:>5.1f} {free}",
                flush=True,
            )
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
