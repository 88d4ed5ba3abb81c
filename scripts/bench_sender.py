#!/usr/bin/env python3
"""Late sends of the sender process while every CPU is busy: SCHED_FIFO against normal scheduling.

    sudo .venv/bin/python scripts/bench_sender.py [--bursts 150 --burst 64 --gap-ms 20 --rounds 2]

A veth pair in a network namespace of its own (deleted afterwards), one host socket
at each end (emulation.traffic.TrafficEngine). The schedule: bursts of ``--burst``
probes due at the same instant every ``--gap-ms`` ms, from one end to the other, as a
sweep's hosts all start their slots together. While ``--busy`` busy-looping processes
compete for the cores at normal priority (as the switch processes do), the sender
process sends the schedule under SCHED_FIFO and under normal scheduling, alternately,
``--rounds`` times each, in the same run. Per run it prints the sends more than
LATE_THRESHOLD_S late, the worst lateness and the probes received.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from emulation.traffic import LATE_THRESHOLD_S, HostEndpoint, Schedule, TrafficEngine  # noqa: E402

SPIN = "while True: pass"


def burst_schedule(bursts: int, burst: int, gap_s: float) -> Schedule:
    """``bursts`` times ``burst`` probes from PE 0 to PE 1, each burst due at one instant."""
    at = np.repeat(np.arange(bursts) * gap_s + 0.2, burst)
    return Schedule(np.zeros(at.size, dtype=np.int64), np.ones(at.size, dtype=np.int64), at)


def run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bursts", type=int, default=150)
    parser.add_argument("--burst", type=int, default=64, help="probes due at the same instant")
    parser.add_argument("--gap-ms", type=float, default=20.0, help="between bursts")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--busy", type=int, default=2 * (os.cpu_count() or 1), help="busy processes (default 2 per CPU)"
    )
    args = parser.parse_args()
    if min(args.bursts, args.burst, args.rounds) < 1 or args.gap_ms <= 0 or args.busy < 0:
        parser.error("--bursts, --burst and --rounds must be at least 1, --gap-ms above 0, --busy 0 or more")
    if os.geteuid() != 0:
        parser.error("needs root (a network namespace and SCHED_FIFO)")
    namespace = f"tsb{os.getpid() % 100000}"
    schedule = burst_schedule(args.bursts, args.burst, args.gap_ms / 1000)
    spinners: list[subprocess.Popen] = []
    run("ip", "netns", "add", namespace)
    try:
        run("ip", "-n", namespace, "link", "add", "va", "type", "veth", "peer", "name", "vb")
        for interface in ("va", "vb"):
            run("ip", "-n", namespace, "link", "set", interface, "up")
        hosts = [HostEndpoint(pe, f"/run/netns/{namespace}", name) for pe, name in enumerate(("va", "vb"))]
        spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(args.busy)]
        print(
            f"{len(schedule)} probes in bursts of {args.burst} every {args.gap_ms:g} ms; "
            f"{len(spinners)} busy processes; late: more than {LATE_THRESHOLD_S * 1e3:g} ms"
        )
        for round_number in range(args.rounds):
            for real_time in (True, False):
                with TrafficEngine(hosts) as engine:
                    record = engine.inject(schedule, size=64, real_time=real_time)
                    engine.wait_for(len(schedule), quiet_s=0.5, limit_s=10)
                    received = len(engine.take_received())
                print(
                    f"round {round_number + 1}, sender {record.sender}: late {record.late_probes} of "
                    f"{len(schedule)}, worst {record.max_late_s * 1e3:.1f} ms, received {received}"
                )
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
        subprocess.run(["ip", "netns", "delete", namespace], capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
