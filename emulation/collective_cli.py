"""``twinnet collective``: binomial broadcast, reduce, allgather and all-to-all on rate-limited links.

    sudo twinnet collective torus --dims 4x2 --routing dor --link-rate 100 --collective all-to-all \\
        --out out/c1

Builds the network, installs the routing, rate-limits every link, runs each
collective asked for (emulation.collectives) and writes ``collectives.json`` in
``--out``: per collective its step times, completion time (s and packet times)
and message latency.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from emulation.run_settings import SWITCH_PROCESSES_OPTION
from topologies.build import add_topology_arguments, topology_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from controller.routing import ALGORITHMS
    from emulation.collectives import COLLECTIVES

    add_topology_arguments(parser)
    group = parser.add_argument_group("collective")
    group.add_argument("--routing", choices=sorted(ALGORITHMS), type=str.lower, help="routing algorithm")
    group.add_argument(
        "--collective",
        action="append",
        choices=COLLECTIVES,
        help="collective to run (repeatable; default all-to-all)",
    )
    group.add_argument("--block", type=int, default=1, metavar="PACKETS", help="packets per PE's block (1)")
    group.add_argument(
        "--link-rate", required=True, metavar="RATE", help="packets/s or bits/s (e.g. 100, 1Mbit)"
    )
    group.add_argument("--size", type=int, default=64, metavar="BYTES", help="frame size (64)")
    group.add_argument("--cpu-capacity", type=float, metavar="VISITS", help="card visits/s per core")
    group.add_argument("--target", choices=("auto", "bmv2", "embedded"), default="auto")
    group.add_argument("--switch-processes", **SWITCH_PROCESSES_OPTION)
    group.add_argument(
        "--lossless",
        action="store_true",
        help="lossless links (IEEE 802.1Qbb PFC per VC queue on every card and host; embedded target)",
    )
    group.add_argument(
        "--out", type=Path, metavar="DIR", help="output folder (default /tmp/twinnet/collective)"
    )


def main(args: argparse.Namespace) -> int:
    import numpy as np

    from emulation.card_access import open_cards
    from emulation.collectives import collective_steps, run_collective
    from emulation.headroom import check_headroom, mean_cards_per_packet
    from emulation.link_rate import parse_link_rate
    from emulation.network import build_network, stderr_progress
    from emulation.run import lossless_switch_arguments, plan_run
    from emulation.run_settings import RunSettings

    topology = topology_from_args(args)
    link_rate = parse_link_rate(args.link_rate, args.size)
    names = args.collective or ["all-to-all"]
    num_pes = len(topology.hosts)
    plan = plan_run(
        topology,
        RunSettings(
            routing=args.routing,
            traffic="uniform",
            packets=1,
            size=args.size,
            target=args.target,
            lossless=args.lossless,
        ),
        check_load=False,  # its planning schedule is never sent: the collective's own load is checked below
    )
    for name in names:  # every PE may send at the link rate at once
        messages = [m for step in collective_steps(name, num_pes, args.block) for m in step]
        src, dst = np.array([m[0] for m in messages]), np.array([m[1] for m in messages])
        _, warning = check_headroom(
            len({m[0] for m in messages}) * link_rate,
            mean_cards_per_packet(plan.all_pairs, src, dst),
            visits_per_core_s=args.cpu_capacity,
        )
        if warning:
            stderr_progress(f"{name}: {warning}")
    results = []
    with build_network(
        topology,
        target=plan.switch_class.target_name,
        progress=stderr_progress,
        switch_processes=args.switch_processes,
        switch_arguments=lossless_switch_arguments(plan.settings),
    ) as network:
        with open_cards(network) as cards:
            cards.install(plan.tables)
        network.set_link_rates(link_rate)
        for name in names:
            results.append(
                run_collective(
                    network,
                    name,
                    link_rate_pps=link_rate,
                    block=args.block,
                    size=args.size,
                    say=stderr_progress,
                    lossless=args.lossless,
                )
            )
    out = args.out or Path("/tmp/twinnet/collective")
    out.mkdir(parents=True, exist_ok=True)
    path = out / "collectives.json"
    path.write_text(
        json.dumps(
            {
                "link_rate_pps": link_rate,
                "lossless": args.lossless,
                "routing": plan.tables.algorithm,
                "collectives": results,
            },
            indent=2,
        )
        + "\n"
    )
    for result in results:
        print(
            f"{result['collective']}: completion {result['completion_time_s']:.4f} s = "
            f"{result['completion_time_packet_times']:g} packet times, "
            f"{result['missing_packets']} packets missing, {result['late_sends']} sends late "
            f"(at most {result['max_lateness_ms']:g} ms)"
        )
    print(f"wrote {path}")
    return 0 if all(result["missing_packets"] == 0 for result in results) else 1
