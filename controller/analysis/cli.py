"""`twinnet analyze`: tables, all-pairs paths, deadlock check, the papers' metrics and loads (no emulation).

    twinnet analyze ndt --dims 8x8x8 --routing ts-dor --json
    twinnet analyze fattree --k 4 --n 3 --twin --routing destro --traffic bit-reversal
    twinnet analyze ndt --dims 4x4x4 --routing dort --pair 1 40

    twinnet analyze ndt --dims 16x16x16 --routing dort --traffic uniform --workers 1

Takes the same topology arguments as ``twinnet topo``. The JSON fields, their
units and scopes are listed under "units" in the output (see
controller/analysis/report.py). The tables are built and analysed one block of
destinations at a time (controller/analysis/stream.py), so memory stays
bounded; a network whose analysis would not fit in the available memory is
refused before anything is allocated, and runs over a second show a progress
bar on a terminal. Networks of 4,096 PEs or more are shared by one process per
CPU unless ``--workers`` says otherwise (``--workers 1``: loads bit for bit
those of the whole tables; more: within 1e-12).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from topologies.build import add_topology_arguments, topology_from_args

if TYPE_CHECKING:
    from controller.analysis.paths import AllPairs
    from controller.analysis.traffic import Traffic
    from controller.routing.builder import TableSpec


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Topology arguments (as `twinnet topo`) plus routing, traffic and output options."""
    add_topology_arguments(parser)
    from controller.routing import routing_help

    group = parser.add_argument_group("analysis")
    group.add_argument(
        "--routing",
        help=f"{routing_help()}; default: the first safe one that fits the topology",
    )
    group.add_argument(
        "--selection",
        default="3-priority",
        help="adaptive routing's selection function: round-robin, no-internal, 2-priority, "
        "3-priority (default)",
    )
    group.add_argument(
        "--escape",
        help="adaptive routing's escape routing (default dort on an nDT, dor on a torus; "
        "dort-merged-vcs and dor-no-dateline are unsafe on purpose)",
    )
    group.add_argument(
        "--traffic",
        help="traffic pattern for loads and the throughput bound: uniform, "
        "all-to-all, bit-reversal, bit-complement, transpose, perfect-shuffle, "
        "butterfly, tornado, neighbour, hotspot, random-permutation, "
        "bit-reverse-shift, bit-reverse-family",
    )
    group.add_argument("--seed", type=int, default=0, help="random-permutation: generator seed (default 0)")
    group.add_argument("--hotspot", type=int, default=0, help="hotspot: the hot PE (default 0)")
    group.add_argument(
        "--fraction",
        type=float,
        default=1.0,
        help="hotspot: fraction of each PE's traffic sent to the hot PE (default 1)",
    )
    group.add_argument("--shift", type=int, default=1, help="bit-reverse-shift: i of pi_i (1..N, default 1)")
    group.add_argument("--json", action="store_true", help="print the report as JSON")
    group.add_argument("--paths-out", metavar="FILE", help="write every path as a JSON line to FILE")
    group.add_argument("--pair", nargs=2, type=int, metavar=("SRC", "DST"), help="print one path hop by hop")
    group.add_argument(
        "--workers",
        type=_positive,
        default=None,
        help=f"processes sharing the blocks of destinations (default: 1 below {PARALLEL_FROM:,} PEs, "
        "else one per CPU as memory allows; any number above 1 gives the same report, whose loads may "
        "differ from one process's in the last bits, within 1e-12)",
    )


#: networks of at least this many PEs are analysed by one process per CPU unless --workers says otherwise
PARALLEL_FROM = 4096


def default_workers(spec: TableSpec, traffic: Traffic | None) -> int:
    """One process below PARALLEL_FROM PEs (the report bit for bit that of the whole tables), else one
    per usable CPU, fewer if the memory estimate of that many would not fit."""
    from controller.analysis.memory import available, estimate

    if spec.network.num_pes < PARALLEL_FROM:
        return 1
    workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    have = available()
    while workers > 1 and estimate(spec, traffic, workers) > have:
        workers -= 1
    return max(1, workers)


def main(args: argparse.Namespace) -> int:
    from controller.collector import collector_paused

    with collector_paused():  # the topology model: ~10^5 objects kept to the end
        return _analyze(args)


def _analyze(args: argparse.Namespace) -> int:
    """`twinnet analyze` with parsed arguments: the report, one path (--pair) or the adaptive report."""
    from controller.analysis.traffic import make_traffic
    from controller.routing import algorithms_for, routing_spec

    topology = topology_from_args(args)  # refuses, before building, a topology too large to hold
    routing = args.routing or (algorithms_for(topology.family) or ["destro"])[0]
    if routing.strip().lower() == "adaptive":
        from controller.analysis.adaptive_report import run_adaptive

        return run_adaptive(topology, args)
    # No bound on table entries here: the analysis streams blocks of destinations and never
    # holds all tables; its memory estimate (controller.analysis.memory) refuses what won't fit.
    spec = routing_spec(topology, routing)
    if args.pair:
        print_pair(spec, *args.pair)
        return 0
    traffic = None
    if args.traffic:
        traffic = make_traffic(
            args.traffic,
            topology,
            seed=args.seed,
            hotspot=args.hotspot,
            fraction=args.fraction,
            shift=args.shift,
        )
    report = run_analysis(spec, traffic, args.paths_out, workers=args.workers)
    print_report(report, args.json, summary)
    return 0


def print_report(report: dict, as_json: bool, text: Callable[[dict], str]) -> None:
    """The report as indented JSON, or as the readable lines `text` makes of it."""
    if as_json:
        json.dump(report, sys.stdout, indent=1)
        print()
    else:
        print(text(report))


def print_pair(spec: TableSpec, src: int, dst: int) -> None:
    """Print one path hop by hop, from the tables of its destination alone."""
    from controller.routing import walk

    net = spec.network
    tables = spec.block(dst, dst + 1) if 0 <= dst < net.num_pes else spec.tables([[]] * 7)
    path = walk(tables, src, dst)
    print(
        f"PE {path.src} -> PE {path.dst}, routing class {path.routing_class}, "
        f"{path.external_hops} external + {path.internal_hops} internal links"
    )
    for hop in path.hops:
        print(
            f"  {net.card_names[hop.card_id]:>6} in {hop.ingress_port} "
            f"({net.port_name(hop.card_id, hop.ingress_port)})"
            f" -> out {hop.egress_port} ({net.port_name(hop.card_id, hop.egress_port)}) vc {hop.vc} "
            f"queue {hop.queue} {hop.link_kind} {hop.use}"
        )


def run_analysis(
    spec: TableSpec, traffic: Traffic | None, paths_out: str | None = None, workers: int | None = 1
) -> dict:
    """The report of `spec`'s tables, built block by block (paths streamed to `paths_out`), with a
    progress bar on a terminal; refuses first, in one line, a network whose analysis would not fit.
    ``workers=None`` chooses (``default_workers``)."""
    from controller.analysis.heap import keep_freed_memory
    from controller.analysis.memory import check_memory
    from controller.analysis.progress import Progress
    from controller.analysis.report import build_report, prepare_report, write_paths
    from controller.analysis.stream import blocks_of, follow, gather, gather_parallel, spec_blocks

    if paths_out:
        workers = 1  # the paths file lists the paths in table order: one process writes it
    elif workers is None:
        workers = default_workers(spec, traffic)
    check_memory(spec, traffic, workers, paths=paths_out is not None)
    keep_freed_memory()
    out = open(paths_out, "w", encoding="utf-8") if paths_out else None  # noqa: SIM115
    progress = Progress(blocks_of(spec, follow=out is None))
    done = 0

    def on_block(pairs: AllPairs | None) -> None:
        nonlocal done
        if out is not None and pairs is not None:
            write_paths(pairs, out)
        done += 1
        progress.update(done)

    try:
        if workers > 1:
            conventions = spec.tables([[]] * 7)

            def meanwhile() -> None:  # the report's parts that need no totals, while the workers run
                prepare_report(conventions, traffic)

            totals = gather_parallel(spec, traffic, workers, on_block=on_block, meanwhile=meanwhile)
        elif out is not None:  # the paths file needs every path: the blocks' tables walked whole
            totals = gather(spec.tables([[]] * 7), spec_blocks(spec), traffic, on_block=on_block)
        else:
            totals = follow(spec, traffic, on_block=on_block)
    except BaseException:
        if out is not None:
            out.close()
            os.remove(paths_out)  # type: ignore[arg-type]
        raise
    finally:
        progress.close()
    if out is not None:
        out.close()
    return build_report(spec.tables([[]] * 7), totals, traffic)


def summary(report: dict) -> str:
    """A few readable lines of the report."""
    hops, routing = report["hops"], report["routing"]
    lines = [
        f"{report['topology']['family']} {report['topology']['params']}",
        f"routing {routing['algorithm']}: {routing['entries']} entries "
        f"(max {routing['max_entries_per_card']} per card), VCs per link {report['vcs_per_link']}, "
        f"{report['queues_per_port']} queues per port",
        f"paths {report['paths']}: links avg {hops['avg']:.4f} max {hops['max']} "
        f"(external avg {hops['external']['avg']:.4f}, internal avg {hops['internal']['avg']:.4f}, "
        f"{100 * hops['paths_with_internal']:.1f}% of paths use an internal link)",
        f"internal-link crossings {report['internal_link_crossings']}",
    ]
    if routing.get("unsafe"):
        lines.insert(2, f"  {routing['unsafe']}")
    if "switch_hops" in report:
        lines.append(f"switch hops avg {report['switch_hops']['avg']:.4f} max {report['switch_hops']['max']}")
    metric = report["paper_metric"]
    if metric is None:
        lines.append(f"paper metric: none ({report.get('paper_metric_reason')})")
    elif "per_stage" in metric:
        stages = ", ".join(
            f"stage {s['stage']}: {s['min']}" + (f"..{s['max']}" if s["max"] != s["min"] else "")
            for s in metric["per_stage"]
        )
        lines.append(f"paper metric (internal-link crossings per twin switch): {stages}")
    else:
        lines.append(
            f"paper metric (transit paths crossing a node's internal link, DOR): {metric['value']} "
            f"of {metric['transit_paths']} ({metric['config']})"
        )
    deadlock = report["deadlock"]
    lines.append(
        f"deadlock free: {report['deadlock_free']} ({deadlock['channels']} channels, "
        f"{deadlock['dependencies']} dependencies)"
    )
    if deadlock["cycle"]:
        lines.append("  cycle: " + " -> ".join(deadlock["cycle"]))
    if "throughput_bound" in report:
        bound = report["throughput_bound"]
        lines.append(
            f"traffic {report['traffic']}: max link load {report['max_link_load']:.4f} at "
            f"{report['bottleneck']}, max channel load {report['max_channel_load']:.4f}, "
            f"throughput bound {bound:.4f}"
            if bound
            else f"traffic {report['traffic']}: no load"
        )
    return "\n".join(lines)
