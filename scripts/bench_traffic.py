#!/usr/bin/env python3
"""Probe throughput through an emulated network: offered load per host stepped up on one network.

    sudo .venv/bin/python scripts/bench_traffic.py fattree --k 4 --n 2 --twin --routing destro \\
        --traffic uniform --rates 25,50,100,200 --duration 3 [--json out/bench.json]

For every rate (probes/s per host) the script runs ``twinnet run``'s measurement
on the same network (tables re-installed between steps) and prints: offered and
carried probes/s for the whole network (carried: received over the first send to the
last arrival), loss, late sends, latency percentiles,
whether every received probe followed the model's path, and the cards' cost: card
visits per CPU-second of the switch processes. A card visit is one card a received
probe crossed (one hop of its trace); the CPU-seconds are the user + system time the
switch processes spent during the step (/proc/PID/stat), so the figure compares
directly with one isolated card's frames per CPU-second (scripts/bench_switch.py).
The injector alone (no cards) is measured first on a veth pair, so that its own
ceiling is known.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from controller.analysis.traffic import Traffic  # noqa: E402
from emulation.headroom import process_cpu_s  # noqa: E402
from emulation.measure import distribution, verdict_counts  # noqa: E402
from emulation.network import build_network, stderr_progress  # noqa: E402
from emulation.run import RunSettings, plan_run, run_on_network  # noqa: E402
from emulation.traffic import HostEndpoint, TrafficEngine, make_schedule  # noqa: E402
from topologies.build import add_topology_arguments, topology_from_args  # noqa: E402


def injector_ceiling(probes: int = 20000) -> dict:
    """Probes/s the engine sends and receives over one veth pair between two namespaces of its own."""
    prefix = f"ttrb{os.getpid() % 10000}"
    names = [f"{prefix}a", f"{prefix}b"]
    try:
        for name in names:
            subprocess.run(["ip", "netns", "add", name], check=True)
        subprocess.run(
            ["ip", "link", "add", f"{prefix}x", "type", "veth", "peer", "name", f"{prefix}y"], check=True
        )
        for name, end in zip(names, (f"{prefix}x", f"{prefix}y"), strict=True):
            subprocess.run(["ip", "link", "set", end, "netns", name], check=True)
            subprocess.run(["ip", "-n", name, "link", "set", end, "up"], check=True)
        endpoints = [
            HostEndpoint(0, f"/run/netns/{names[0]}", f"{prefix}x"),
            HostEndpoint(1, f"/run/netns/{names[1]}", f"{prefix}y"),
        ]
        traffic = Traffic("pair", np.array([0]), np.array([1]), np.ones(1))
        schedule = make_schedule(traffic, 2, probes, rate_pps=1e9)  # as fast as it goes
        with TrafficEngine(endpoints) as engine:
            started = time.monotonic()
            record = engine.inject(schedule, 64)
            sent_s = time.monotonic() - started
            engine.wait_for(probes, quiet_s=0.5, limit_s=10)
            received = engine.received_count()
        return {"probes": probes, "send_pps": round(record.sent / sent_s), "received": received}
    finally:
        for name in names:
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


def cpu_seconds(pids: set[int]) -> float:
    """User + system CPU time of the processes so far (s); a process gone counts 0."""
    return sum(process_cpu_s(pids).values())


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_topology_arguments(parser)
    parser.add_argument("--routing")
    parser.add_argument("--traffic", default="uniform")
    parser.add_argument("--rates", default="25,50,100,200", help="probes/s per host, comma-separated")
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--target", default="embedded")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--switch-processes", type=int, help="embedded switch processes")
    args = parser.parse_args()
    topology = topology_from_args(args)
    results = {"injector_alone": injector_ceiling()}
    print(f"injector alone over one veth pair: {results['injector_alone']}")
    steps = []
    started = time.monotonic()
    with build_network(
        topology, target=args.target, progress=stderr_progress, switch_processes=args.switch_processes
    ) as network:
        results["bring_up_s"] = round(time.monotonic() - started, 1)
        pids = {card.switch_pid for card in network.cards.values() if card.switch_pid is not None}
        results["switch_processes"] = len(pids)
        print(
            f"{'pps/host':>9} {'offered':>9} {'carried/s':>11} {'lost':>6} {'late':>6} {'p50 us':>9} "
            f"{'p99 us':>9} {'visits/CPU-s':>13} equal"
        )
        for rate in [float(value) for value in args.rates.split(",")]:
            settings = RunSettings(
                routing=args.routing,
                traffic=args.traffic,
                rate=rate,
                duration=args.duration,
                target=args.target,
                check_capacity=False,
            )
            plan = plan_run(topology, settings)
            cpu_before = cpu_seconds(pids)
            outcome = run_on_network(plan, network, show_bars=False)
            switch_cpu = cpu_seconds(pids) - cpu_before
            received = [r for r in outcome.results if r.arrival is not None]
            visits = sum(len(r.arrival.hops) for r in received)
            window = outcome.timings["inject_s"] + outcome.timings["drain_s"]
            latency = distribution([r.latency_us for r in received])
            # what the network carried: the probes received over the first send to the last arrival (the
            # sender process's start-up left out; a backlog drained after the last send counted)
            span_s = (
                (max(r.arrival.receive_us for r in received) - min(r.send_us for r in received)) / 1e6
                if received
                else 0.0
            )
            step = {
                "rate_pps_per_host": rate,
                "offered_pps": outcome.injection["offered_pps_total"],
                "sent": outcome.accounting.sent,
                "received": len(received),
                "carried_pps": round(len(received) / span_s, 1) if span_s > 0 else None,
                "window_s": round(window, 2),
                "lost": outcome.accounting.lost,
                "latency_us": latency,
                "verdicts": verdict_counts(outcome.results),
                "late_probes": outcome.injection["late_probes"],
                "card_visits": visits,
                "switch_cpu_s": round(switch_cpu, 2),
                "visits_per_cpu_s": round(visits / switch_cpu) if switch_cpu > 0 else None,
            }
            steps.append(step)
            equal = step["verdicts"]["equal"] == len(received)
            print(
                f"{rate:>9g} {step['offered_pps']:>9} {step['carried_pps'] or 0:>11} {step['lost']:>6} "
                f"{step['late_probes']:>6} {latency['p50'] or 0:>9.0f} {latency['p99'] or 0:>9.0f} "
                f"{step['visits_per_cpu_s'] or 0:>13} {equal}"
            )
    results["steps"] = steps
    results["topology"] = topology.counts()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
