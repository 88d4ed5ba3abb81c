#!/usr/bin/env python3
"""Issue 16's "Show it" runs: routings above saturation with and without --lossless; the cyclic variants.

    sudo .venv/bin/python scripts/lossless_runs.py [--duration 120] [--link-rate 10] [--over 1.3]
        [--only dort,dort-merged-vcs] [--no-lossy] [--json out.jsonl]

Runs ``twinnet run`` once per case (3DT 4x4x4 with DORT and TS-DOR, its equivalent
16x8 torus with DOR and datelines, a twin 4-ary 3-tree with DESTRO; the unsafe
variants, lossless only, on 32 cards: 3DT 2x4x2 and an 8x4 torus, with hosts offering
``cyclic-load`` x the link rate) under uniform traffic. Every host offers ``over`` x
the analysis's throughput bound x the link rate (at most the link rate, all a host's
link carries: DESTRO's bound is 0.98), so every safe routing runs above saturation:
with --lossless nothing may be dropped and nothing may deadlock; without it, full
queues drop. Per run it prints probes sent, delivered and lost, queue drops,
PFC pause frames sent and received by the cards, time paused, whether a deadlock was
found and, for the cyclic variants, how long into the run it formed; and the
injector's late sends with the load average, since a CPU-bound emulator measures
itself rather than the network. Rows are appended to --json as they finish.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: how twinnet run refuses a load the machine's free cores cannot emulate
CPU_REFUSED = "does not fit this machine's CPU"
sys.path.insert(0, str(REPO))

from controller.analysis.report import analyze  # noqa: E402
from controller.analysis.traffic import make_traffic  # noqa: E402
from controller.routing import UNSAFE, compute_tables  # noqa: E402
from topologies.build import build_topology  # noqa: E402


@dataclass(frozen=True)
class Case:
    """One network and routing: the `twinnet run` topology arguments and the analysis's topology."""

    name: str
    family: str
    options: dict[str, str]
    routing: str

    @property
    def unsafe(self) -> bool:
        return self.routing in UNSAFE

    def arguments(self) -> list[str]:
        flags = []
        for key, value in self.options.items():
            flags += [f"--{key}"] if value == "" else [f"--{key}", value]
        return [self.family, *flags, "--routing", self.routing]


CASES = [
    Case("dort", "ndt", {"dims": "4x4x4"}, "dort"),
    Case("ts-dor", "ndt", {"dims": "4x4x4"}, "ts-dor"),
    Case("dor", "torus", {"dims": "16x8"}, "dor"),
    Case("destro", "fattree", {"k": "4", "n": "3", "twin": ""}, "destro"),
    # the cyclic variants on 32 cards, so that a heavy load fits the CPU (on 4x4x4 at 1.3 x the
    # bound, dort-merged-vcs ran 185 s under --lossless without deadlock)
    Case("dort-merged-vcs", "ndt", {"dims": "2x4x2"}, "dort-merged-vcs"),
    Case("ts-dor-unmirrored", "ndt", {"dims": "2x4x2"}, "ts-dor-unmirrored"),
    Case("dor-no-dateline", "torus", {"dims": "8x4"}, "dor-no-dateline"),
]


def throughput_bound(case: Case, traffic: str) -> float:
    """The analysis's throughput bound (fraction of a link's rate per host) of the safe routing."""
    safe = {"dort-merged-vcs": "dort", "ts-dor-unmirrored": "ts-dor", "dor-no-dateline": "dor"}
    options = case.options
    topology = build_topology(
        case.family,
        dims=options.get("dims"),
        k=int(options["k"]) if "k" in options else None,
        n=int(options["n"]) if "n" in options else None,
        twin="twin" in options,
    )
    tables = compute_tables(topology, safe.get(case.routing, case.routing))
    return float(analyze(tables, make_traffic(traffic, topology))["throughput_bound"])


def run_showing_progress(command: list[str]) -> subprocess.CompletedProcess:
    """Run `command` in the checkout; its stderr (twinnet's progress lines) echoed as it comes, and kept."""
    with tempfile.TemporaryFile("w+") as output:  # a file, so a long stdout never blocks the child
        with subprocess.Popen(command, cwd=REPO, stdout=output, stderr=subprocess.PIPE, text=True) as child:
            assert child.stderr is not None
            errors = []
            for text in child.stderr:
                errors.append(text)
                print(f"    {text.rstrip()}", file=sys.stderr, flush=True)
        output.seek(0)
        return subprocess.CompletedProcess(command, child.returncode, output.read(), "".join(errors))


def run_case(case: Case, *, lossless: bool, rate: float, args: argparse.Namespace, out: Path) -> dict:
    """One `twinnet run`; its report's figures as one row."""
    command = [
        sys.executable, "-m", "emulation.cli", "run", *case.arguments(),
        "--traffic", args.traffic, "--rate", f"{rate:.2f}", "--duration", str(args.duration),
        "--link-rate", str(args.link_rate), "--out", str(out), "--no-pictures", "--quiet",
        "--seed", str(args.seed),
    ]  # fmt: skip
    if lossless:
        command += ["--lossless", "--deadlock-after", str(args.deadlock_after)]
    waited = time.monotonic()
    while True:
        load_before = os.getloadavg()[0]
        started = time.monotonic()
        done = run_showing_progress(command)
        wall = time.monotonic() - started
        # twinnet refuses a load the free cores cannot emulate (other jobs): wait for them, within limits
        if CPU_REFUSED not in done.stderr or time.monotonic() - waited > args.wait_cpu:
            break
        load = os.getloadavg()[0]
        print(f"  {case.name}: the machine is busy (load {load:.1f}); retrying in 30 s", flush=True)
        time.sleep(30)
    row = {
        "case": case.name,
        "routing": case.routing,
        "unsafe": case.unsafe,
        "lossless": lossless,
        "rate_pps_per_host": round(rate, 2),
        "link_rate_pps": args.link_rate,
        "duration_s": args.duration,
        "exit": done.returncode,
        "wall_s": round(wall, 1),
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "command": "twinnet " + " ".join(command[3:]),
        "cpu_check": next((text for text in done.stdout.splitlines() if "CPU" in text), None),
        "waited_for_cpu_s": round(started - waited, 1),
    }
    report_file = out / "report.json"
    if not report_file.exists():
        row["error"] = (done.stderr.strip().splitlines() or ["no report"])[-1]
        return row
    report = json.loads(report_file.read_text())
    accounting, injection = report["accounting"], report["traffic"]
    pfc = (report.get("lossless") or {}).get("cards", {})
    hosts = (report.get("lossless") or {}).get("hosts", {})
    deadlock = report.get("deadlock")
    row.update(
        sent=accounting["sent"],
        delivered=accounting["received"],
        lost=accounting["lost"],
        on_model_path=report["verdicts"]["equal"],
        queue_drops=(report.get("queue_drops") or {}).get("total"),
        pause_frames_sent=pfc.get("pause_frames_sent"),
        pause_frames_received=pfc.get("pause_frames_received"),
        paused_s=pfc.get("paused_s"),
        hosts_paused=hosts.get("pause_frames_received"),
        deadlock=deadlock is not None,
        deadlocked_after_s=deadlock.get("deadlocked_after_s") if deadlock else None,
        deadlock_found_after_s=deadlock.get("found_after_s") if deadlock else None,
        deadlock_cycle_in_graph=deadlock.get("cycle_in_dependency_graph") if deadlock else None,
        deadlock_cycle_length=len(deadlock["cycle"]) if deadlock else None,
        late_probes=injection.get("late_probes"),
        max_lateness_s=injection.get("max_lateness_s"),
        sending_pps=injection.get("achieved_send_pps_total"),
        inject_s=report["timings_s"].get("inject_s"),
    )
    return row


def line(row: dict) -> str:
    """A row in one line."""
    mode = "lossless" if row["lossless"] else "lossy   "
    head = f"{row['case']:<18} {mode} {row['rate_pps_per_host']:>6} pps/host"
    if "error" in row:
        return f"{head}  exit {row['exit']}: {row['error']}"
    deadlock = (
        f"DEADLOCK after {row['deadlocked_after_s']} s (found {row['deadlock_found_after_s']} s, "
        f"{row['deadlock_cycle_length']} channels, in graph: {row['deadlock_cycle_in_graph']})"
        if row["deadlock"]
        else "no deadlock"
    )
    return (
        f"{head}  sent {row['sent']} delivered {row['delivered']} lost {row['lost']} "
        f"(on the model's path {row['on_model_path']}), queue drops {row['queue_drops']}, "
        f"pause frames sent {row['pause_frames_sent']} received {row['pause_frames_received']}, "
        f"paused {row['paused_s']} s, {deadlock}; late sends {row['late_probes']} "
        f"(max {row['max_lateness_s']} s), sending {row['inject_s']} s, wall {row['wall_s']} s, "
        f"load {row['load_average'][0]}->{row['load_average'][1]}, exit {row['exit']}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--duration", type=float, default=120.0, help="seconds of injection per run (default 120)"
    )
    parser.add_argument("--link-rate", type=float, default=10.0, help="every link's packets/s (default 10)")
    parser.add_argument(
        "--over", type=float, default=1.3, help="offered load / throughput bound (default 1.3)"
    )
    parser.add_argument(
        "--cyclic-load", type=float, default=2.5, help="cyclic variants: load per host in link rates (2.5)"
    )
    parser.add_argument("--traffic", default="uniform")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--deadlock-after", type=float, default=3.0)
    parser.add_argument(
        "--wait-cpu", type=float, default=1800.0, help="seconds to retry a run refused for CPU (default 1800)"
    )
    parser.add_argument(
        "--only", default="", help="comma-separated case names: " + ", ".join(c.name for c in CASES)
    )
    parser.add_argument("--no-lossy", action="store_true", help="skip the runs without --lossless")
    parser.add_argument("--json", type=Path, help="append one JSON row per run to this file")
    parser.add_argument(
        "--out", type=Path, help="folder for the runs' reports (default: a new temporary one)"
    )
    args = parser.parse_args(argv)
    names = [name for name in args.only.split(",") if name]
    unknown = sorted(set(names) - {case.name for case in CASES})
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(c.name for c in CASES)}")
    if min(args.duration, args.link_rate, args.over, args.cyclic_load) <= 0:
        parser.error("--duration, --link-rate, --over and --cyclic-load must be positive")
    cases = [case for case in CASES if not names or case.name in names]
    base = args.out or Path(tempfile.mkdtemp(prefix="twinnet-lossless-"))
    print(f"reports under {base}; {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}", flush=True)
    failed = 0
    for case in cases:
        bound = throughput_bound(case, args.traffic)
        # a host's link carries at most the link rate (twinnet refuses more without --lossless);
        # the cyclic variants get a heavy load, in link rates, so that their deadlock comes soon
        rate = (args.cyclic_load if case.unsafe else min(args.over * bound, 1.0)) * args.link_rate
        print(
            f"{case.name}: throughput bound {bound:.4f} of a link, offering {rate:.2f} pps/host", flush=True
        )
        modes = [True] if case.unsafe or args.no_lossy else [True, False]
        for lossless in modes:
            out = base / f"{case.name}-{'lossless' if lossless else 'lossy'}"
            row = run_case(case, lossless=lossless, rate=rate, args=args, out=out)
            row["throughput_bound"] = round(bound, 4)
            print(line(row), flush=True)
            if args.json:
                with args.json.open("a") as handle:
                    handle.write(json.dumps(row) + "\n")
            expected_exit = 3 if case.unsafe else (0 if lossless else None)
            if expected_exit is not None and row["exit"] != expected_exit:
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
