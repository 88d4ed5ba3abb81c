"""`twinnet analyze --routing adaptive`: the adaptive tables, Duato's condition and the paths pairs may take.

The adaptive tables are held whole and walked per destination in Python, so the
analysis is refused beyond MAX_PES PEs (one pair, ``--pair``, needs only its
destination's tables and works at any size).
"""

from __future__ import annotations

import argparse
from typing import Any

from controller.analysis.duato import check_duato, path_set, path_summary
from controller.routing.adaptive import PORT_CLASSES, AdaptiveTables, adaptive_tables
from controller.routing.errors import RoutingError
from controller.routing.selection import LEVELS, check_selection
from topologies.model import Topology

#: largest network the all-pairs adaptive analysis accepts (a 3DT 8x8x4 or a 16x16 torus: 512 PEs)
MAX_PES = 512


def run_adaptive(topology: Topology, args: argparse.Namespace) -> int:
    """Print the adaptive analysis (or one pair's paths) of `topology`."""
    selection = check_selection(args.selection)
    num_pes = len(topology.hosts)
    if args.pair:
        src, dst = args.pair
        if not (0 <= src < num_pes and 0 <= dst < num_pes) or src == dst:
            raise RoutingError(f"--pair needs two different PEs in 0..{num_pes - 1}, got {src} {dst}")
        model = adaptive_tables(topology, args.escape, dsts=range(dst, dst + 1))
        print_pair(model, src, dst)
        return 0
    if args.traffic or args.paths_out or args.workers not in (None, 1):
        raise RoutingError("--routing adaptive takes neither --traffic, --paths-out nor --workers yet")
    if num_pes > MAX_PES:
        raise RoutingError(
            f"the adaptive analysis walks every destination in Python: at most {MAX_PES} PEs, "
            f"this network has {num_pes} (use --pair SRC DST for one pair)"
        )
    from controller.analysis.cli import print_report

    print_report(adaptive_report(adaptive_tables(topology, args.escape), selection), args.json, summary)
    return 0


def adaptive_report(model: AdaptiveTables, selection: str) -> dict[str, Any]:
    """The JSON report: routing conventions, Duato's condition (``deadlock_free``) and the path summary."""
    duato = check_duato(model)
    levels = dict(zip(PORT_CLASSES, LEVELS[selection], strict=True))
    return {
        "topology": {"family": model.topology.family, "params": model.topology.params},
        "routing": {
            "algorithm": "adaptive",
            "escape": model.escape_algorithm,
            "selection": selection,
            "selection_levels": {cls: level for cls, level in levels.items()},
            "entries": len(model),
            "notes": model.notes,
        },
        "vc_plan": model.vc_plan,
        "queues_per_port": model.queues_per_port(),
        "emulable": model.queues_per_port() <= 8,
        "deadlock_free": duato.deadlock_free,
        "duato": duato.to_json(),
        "paths": path_summary(model),
    }


def summary(report: dict[str, Any]) -> str:
    """A few readable lines of the adaptive report."""
    routing, duato, paths = report["routing"], report["duato"], report["paths"]
    lines = [
        f"{report['topology']['family']} {report['topology']['params']}",
        f"routing adaptive, escape {routing['escape']}, selection {routing['selection']} "
        f"(levels {routing['selection_levels']}): {routing['entries']} entries, "
        f"{report['queues_per_port']} queues per port",
        "VC plan: "
        + "; ".join(
            f"{k} escape {v['escape']} adaptive {v['adaptive']}" for k, v in report["vc_plan"].items()
        ),
        f"paths per pair: mean {paths['mean_paths_per_pair']:.3f}, max {paths['max_paths_per_pair']}; "
        f"hops: fewest {paths['mean_fewest_hops']:.4f}, most {paths['mean_most_hops']:.4f}, "
        f"escape {paths['mean_escape_hops']:.4f} (means over {paths['pairs']} pairs)",
        f"deadlock free (Duato): {report['deadlock_free']} ({duato['escape_channels']} escape channels, "
        f"{duato['direct_dependencies']} direct and {duato['indirect_dependencies']} indirect dependencies)",
    ]
    if duato["cycle"]:
        lines.append("  cycle: " + " -> ".join(duato["cycle"]))
    return "\n".join(lines)


def print_pair(model: AdaptiveTables, src: int, dst: int, limit: int = 32) -> None:
    """Print the link paths one pair may take."""
    found = path_set(model, src, dst, limit=limit)
    print(
        f"PE {src} -> PE {dst}: {found.count} link paths, {found.shortest}..{found.longest} hops "
        f"(escape path {found.escape_hops})"
    )
    for path in found.paths:
        print("  " + " ".join(path))
    if found.count > len(found.paths):
        print(f"  ... {found.count - len(found.paths)} more")
