#!/usr/bin/env python3
"""How late injection starts: frame preparation, then the first second of sending.

    .venv/bin/python scripts/bench_injection.py ndt --dims 4x4x4 --traffic uniform --rate 50 --duration 20
    sudo .venv/bin/python scripts/bench_injection.py ndt --dims 2x4x2 --traffic uniform --rate 50 \\
        --duration 5 --network

Without ``--network`` (no root needed): the seconds to prepare the probe frames of
the run's schedule, one scapy build per pair (the reference, as the injector did it
before) against the template copies the injector uses now. With ``--network``:
the run on a real network, printing the delay from ``inject()`` to the first
send, the probes sent in the first second against those scheduled, and late sends.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from emulation.packets import now_us  # noqa: E402
from emulation.run import RunSettings, execute, plan_run  # noqa: E402
from emulation.traffic import FrameFactory, SendRecord, TrafficEngine, probe_frame  # noqa: E402
from topologies.build import add_topology_arguments, topology_from_args  # noqa: E402


def frame_preparation(pairs: list[tuple[int, int]], size: int, reference_limit: int) -> dict[str, float]:
    """Seconds to build every pair's frame: scapy per pair (timed on a sample, scaled) and template copies."""
    sample = pairs[:reference_limit]
    started = time.perf_counter()
    for src, dst in sample:
        probe_frame(src, dst, size)
    scapy_s = (time.perf_counter() - started) * len(pairs) / max(1, len(sample))
    started = time.perf_counter()
    factory = FrameFactory(size)
    for src, dst in pairs:
        factory.frame(src, dst)
    return {"pairs": len(pairs), "scapy_per_pair_s": scapy_s, "template_s": time.perf_counter() - started}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_topology_arguments(parser)
    parser.add_argument("--routing")
    parser.add_argument("--traffic", default="uniform")
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--network", action="store_true", help="also run on a real network (root)")
    parser.add_argument(
        "--reference",
        action="store_true",
        help="with --network: build the frames one scapy build per pair, as the injector did before",
    )
    args = parser.parse_args()
    settings = RunSettings(
        routing=args.routing, traffic=args.traffic, rate=args.rate, duration=args.duration, target="embedded"
    )
    plan = plan_run(topology_from_args(args), settings, need_root=args.network)
    schedule = plan.schedule
    pairs = sorted(set(zip(schedule.src.tolist(), schedule.dst.tolist(), strict=True)))
    prep = frame_preparation(pairs, settings.size, reference_limit=500)
    print(
        f"frames for {prep['pairs']} pairs: scapy per pair {prep['scapy_per_pair_s']:.2f} s (reference), "
        f"template copies {prep['template_s']:.3f} s"
    )
    if not args.network:
        return 0
    captured: dict[str, object] = {}
    original = TrafficEngine.inject

    def timed_inject(self, schedule, size, tick=None, tick_every=0.2) -> SendRecord:
        captured["called"] = now_us()
        record = original(self, schedule, size, tick, tick_every)
        captured["record"] = record
        return record

    TrafficEngine.inject = timed_inject  # type: ignore[method-assign]
    if args.reference:
        FrameFactory.frame = lambda self, src, dst: probe_frame(src, dst, len(self.template))  # type: ignore
    execute(plan, show_bars=False)
    record: SendRecord = captured["record"]  # type: ignore[assignment]
    sent = record.send_us[record.send_us >= 0]
    called_us = int(captured["called"])  # type: ignore[arg-type]
    first = int(sent.min()) if sent.size else 0
    in_first_second = int(np.count_nonzero(sent < first + 1_000_000))
    scheduled_first_second = int(np.count_nonzero(schedule.at < 1.0))
    print(
        ("reference (scapy per pair): " if args.reference else "template frames: ")
        + f"inject() to first send {(first - called_us) / 1e3:.1f} ms; "
        f"first second: {in_first_second} sent of "
        f"{scheduled_first_second} scheduled; late sends {record.late_probes} of {len(schedule)}, "
        f"max lateness {record.max_late_s * 1e3:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
