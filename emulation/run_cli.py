"""``twinnet run``: build a network, install routing, send probes, compare their paths with the model.

    sudo twinnet run fattree --k 4 --n 2 --twin --routing destro --traffic all-to-all
    sudo twinnet run ndt --dims 2x4x2 --routing ts-dor --traffic uniform --packets 200 --rate 200 --out out/r1
    sudo twinnet run ndt --dims 4x4x4 --routing dort --traffic tornado --duration 10 --rate 50
    sudo twinnet run torus --dims 4x4 --routing dor --link-rate 200 --load 0.3 --duration 5 --warmup 1
    sudo twinnet run ndt --dims 2x4x2 --routing adaptive --selection 3-priority --lossless --rate 200

Everything is checked before anything starts (emulation.run.plan_run); the
network is torn down at the end, on an error and on Ctrl-C; the last lines
name the report (emulation.report). Exit status: 0 when every probe arrived
along the model's path (adaptive routing: along a path the candidate tables
allow), 1 when some did not (the report says which), 2 on bad input or an
environment problem, 3 when a lossless run deadlocked (the report's
``deadlock`` entry gives the cycle of waits).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from emulation.run_settings import CONTROL_OPTION, SELECTION_OPTION, SWITCH_PROCESSES_OPTION
from emulation.workload_options import WorkloadOptions, add_workload_arguments, pattern_options
from topologies.build import add_topology_arguments, topology_from_args


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Topology options and the run's options."""
    from controller.routing import ALGORITHMS, routing_help
    from controller.routing.registry import ADAPTIVE
    from emulation.run_settings import DEFAULT_DEADLOCK_AFTER_S, DEFAULT_LOSSLESS_LINK_PPS, DEFAULT_RATE_PPS

    add_topology_arguments(parser)
    run = parser.add_argument_group("run")
    run.add_argument(
        "--routing",
        choices=sorted(ALGORITHMS) + [ADAPTIVE],
        type=str.lower,
        help=f"routing algorithm: {routing_help()} (default: the first that routes the family: "
        "destro for fattree, dort for ndt, dor for torus)",
    )
    run.add_argument("--selection", **SELECTION_OPTION)
    add_workload_arguments(
        run,
        traffic_default=None,
        link_rate_help=f"as fast as the cards' CPU ({DEFAULT_LOSSLESS_LINK_PPS:g} packets/s with --lossless)",
    )
    run.add_argument(
        "--load",
        type=float,
        metavar="L",
        help="offered load per host as a fraction of --link-rate: messages as twinnet sweep sends them "
        "(--message-sizes, --process, --warmup, --traffic uniform|zipf|PATTERN) for --duration seconds, "
        "instead of probes at --rate",
    )
    run.add_argument(
        "--packets",
        type=int,
        metavar="N",
        help="probes each host sends (default: N-1 for all-to-all, i.e. every pair once; "
        "rate x duration with --duration; else 20)",
    )
    run.add_argument("--duration", type=float, metavar="S", help="seconds of injection")
    run.add_argument(
        "--rate",
        type=float,
        metavar="PPS",
        help=f"offered load per host, probes per second (default {DEFAULT_RATE_PPS:g})",
    )
    run.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="report and logs directory (default /tmp/twinnet/out/<run id>)",
    )
    run.add_argument("--control", **CONTROL_OPTION)
    run.add_argument("--switch-processes", **SWITCH_PROCESSES_OPTION)
    run.add_argument(
        "--kill",
        metavar="CARD@S",
        help="fault injection: kill card CARD's switch S seconds after injection starts",
    )
    run.add_argument(
        "--lossless",
        action="store_true",
        help="lossless links: IEEE 802.1Qbb priority flow control per VC queue on every card and host "
        "(embedded target only: bmv2 has no PFC); a deadlock ends the run with status 3",
    )
    run.add_argument(
        "--deadlock-after",
        type=float,
        default=DEFAULT_DEADLOCK_AFTER_S,
        metavar="S",
        help="--lossless: a cycle of paused queues that sent nothing for S seconds is a deadlock "
        f"(default {DEFAULT_DEADLOCK_AFTER_S:g})",
    )
    run.add_argument("--no-pictures", action="store_true", help="write report.json and paths.csv only")
    run.add_argument("--quiet", action="store_true", help="no progress bars")


def settings_from_args(args: argparse.Namespace):
    from emulation.link_rate import parse_link_rate
    from emulation.run_settings import RunInputError, RunSettings

    kill = None
    if args.kill:
        card, _, seconds = args.kill.partition("@")
        try:
            kill = (card, float(seconds))
        except ValueError:
            raise RunInputError(f"--kill takes CARD@SECONDS, e.g. c3@1.5, got {args.kill!r}") from None
    return RunSettings(
        routing=args.routing,
        selection=args.selection,
        # without a pattern: every pair once, or with --load destinations uniform as in twinnet sweep
        traffic=args.traffic or ("all-to-all" if args.load is None else "uniform"),
        packets=args.packets,
        duration=args.duration,
        rate=args.rate,
        size=args.size,
        target=args.target,
        out=args.out,
        seed=args.seed,
        kill=kill,
        link_rate=parse_link_rate(args.link_rate, args.size) if args.link_rate else None,
        control=args.control,
        switch_processes=args.switch_processes,
        pattern_options=pattern_options(args),
        lossless=args.lossless,
        deadlock_after=args.deadlock_after,
        load=args.load,
        workload=WorkloadOptions.from_args(args),
    )


def main(args: argparse.Namespace) -> int:
    """Plan (refusing bad input before anything starts), run, report; the network always goes away."""
    from emulation.network import stderr_progress
    from emulation.report import outcome_ok, summary_lines, write_report
    from emulation.run import execute, plan_run
    from emulation.run_settings import EXIT_DEADLOCK

    topology = topology_from_args(args)
    plan = plan_run(topology, settings_from_args(args))
    sending = (
        f"{plan.packets_per_host} per host at {plan.rate:g}/s"
        if plan.workload is None
        else f"messages at load {plan.settings.load:g} of {plan.settings.link_rate:g} packets/s"
    )
    stderr_progress(
        f"{len(plan.schedule)} probes: {sending}, "
        f"pattern {plan.traffic.name}, routing {plan.routing_name}"
        + (f"; memory {plan.memory_summary}" if plan.memory_summary else "")
    )
    # twinnet's errors from here on reach twinnet's CLI (one message, exit 2) with the network torn down
    outcome = execute(plan, progress=stderr_progress, show_bars=not args.quiet)
    files = write_report(outcome, pictures=not args.no_pictures)
    for line in summary_lines(outcome, files):
        print(line)
    sys.stdout.flush()
    if outcome.deadlock is not None:
        print("twinnet run: DEADLOCK: the network was torn down; the report's 'deadlock' gives the cycle")
        return EXIT_DEADLOCK
    if outcome.interrupted:
        print(f"twinnet run: {outcome.interrupted}; the report covers the probes sent until then")
        return 130
    return 0 if outcome_ok(outcome) else 1
