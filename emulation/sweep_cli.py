"""``twinnet sweep``: accepted traffic and latency against offered load, one or more networks in one plot.

    sudo twinnet sweep torus --dims 4x4 --routing dor --traffic uniform --link-rate 200 --out out/s1
    sudo twinnet sweep ndt --dims 2x4x2 --config cbest --routing dort --link-rate 200 \\
        --compare "torus --dims 8x4 --routing dor" --loads 0.1,0.2,0.3,0.4,0.5 --out out/s2
    sudo twinnet sweep ndt --dims 4x4x4 --routing dort --label DORT --lossless --link-rate 200 \\
        --compare "ndt --dims 4x4x4 --routing adaptive --selection all --label adaptive" --out out/s3

The first configuration comes from the topology options, each ``--compare`` adds
one more (its own topology and routing options, the same workload); an adaptive
configuration with several selection functions (``--selection all`` or a comma
list) is one configuration per function. Writes
``sweep.json``, ``sweep.csv`` and, unless ``--no-pictures``, ``latency.png``
(latency against accepted traffic) and ``throughput.png`` (accepted against
offered, each configuration's throughput bound dashed) in ``--out``.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from emulation.run_settings import SWITCH_PROCESSES_OPTION
from emulation.workload_options import WorkloadOptions, add_workload_arguments, pattern_options
from topologies.build import add_topology_arguments, topology_from_args


def _configuration_options(parser: argparse.ArgumentParser) -> None:
    from controller.routing import ALGORITHMS
    from controller.routing.registry import ADAPTIVE

    add_topology_arguments(parser)
    parser.add_argument(
        "--routing", choices=sorted(ALGORITHMS) + [ADAPTIVE], type=str.lower, help="routing algorithm"
    )
    parser.add_argument(
        "--selection",
        type=str.lower,
        metavar="F1,F2,..",
        help="--routing adaptive: selection function(s), round-robin, no-internal, 2-priority, 3-priority "
        "or all; several make one configuration each (default 3-priority)",
    )
    parser.add_argument("--label", help="name of this configuration in the report (default: its options)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _configuration_options(parser)
    sweep = parser.add_argument_group("sweep")
    sweep.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="'FAMILY OPTIONS'",
        help='another configuration, e.g. "torus --dims 16x8 --routing dor" (repeatable)',
    )
    add_workload_arguments(sweep, traffic_default="uniform", link_rate_help=None)
    sweep.add_argument(
        "--loads",
        metavar="L1,L2,..",
        help="offered loads per PE as fractions of the link rate (default: 0.2 to 1.5 x the bound)",
    )
    sweep.add_argument("--duration", type=float, default=3.0, metavar="S", help="injection per point (3)")
    sweep.add_argument(
        "--cpu-capacity",
        type=float,
        metavar="VISITS",
        help="card visits per second one core forwards (default: emulation.headroom's measured figure)",
    )
    sweep.add_argument("--switch-processes", **SWITCH_PROCESSES_OPTION)
    sweep.add_argument(
        "--lossless",
        action="store_true",
        help="lossless links (IEEE 802.1Qbb PFC per VC queue, embedded target); a deadlocked point ends "
        "its configuration",
    )
    sweep.add_argument("--out", type=Path, metavar="DIR", help="output folder (default /tmp/twinnet/sweep)")
    sweep.add_argument("--no-pictures", action="store_true")
    sweep.add_argument("--quiet", action="store_true", help="no progress lines")


def _loads(text: str | None) -> tuple[float, ...] | None:
    from emulation.run_settings import RunInputError

    if not text:
        return None
    try:
        loads = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise RunInputError(f"--loads takes numbers separated by commas, got {text!r}") from None
    if any(not 0 < load for load in loads):
        raise RunInputError(f"--loads must be positive fractions of the link rate, got {text!r}")
    return loads


def configurations_from_args(args: argparse.Namespace) -> list:
    """The main configuration and every --compare one."""
    from emulation.run_settings import RunInputError
    from emulation.sweep import Configuration

    options = pattern_options(args)

    def make(parsed: argparse.Namespace, words: str) -> list[Configuration]:
        topology = topology_from_args(parsed)
        selections = _selections(parsed)
        if len(selections) == 1:
            label = parsed.label or words
            return [
                Configuration(label, topology, parsed.routing, args.traffic, dict(options), selections[0])
            ]
        return [
            Configuration(
                f"{parsed.label or words} {selection}",
                topology,
                parsed.routing,
                args.traffic,
                dict(options),
                selection,
            )
            for selection in selections
        ]

    configurations = make(args, _describe(args))
    for text in args.compare:
        parser = argparse.ArgumentParser(prog="--compare", exit_on_error=False, add_help=False)
        _configuration_options(parser)
        try:
            parsed = parser.parse_args(shlex.split(text))
        except (argparse.ArgumentError, SystemExit, ValueError) as error:
            raise RunInputError(f"--compare {text!r}: {error}") from None
        configurations.extend(make(parsed, text))
    return configurations


def _selections(parsed: argparse.Namespace) -> list[str | None]:
    """The selection functions a configuration's --selection names (all: the four), checked."""
    from controller.routing.registry import ADAPTIVE
    from controller.routing.selection import SELECTIONS
    from emulation.run_settings import RunInputError

    if parsed.selection is None:
        return [None]
    if parsed.routing != ADAPTIVE:
        raise RunInputError(f"--selection {parsed.selection}: selection functions need --routing {ADAPTIVE}")
    names = (
        list(SELECTIONS) if parsed.selection == "all" else [s.strip() for s in parsed.selection.split(",")]
    )
    unknown = [name for name in names if name not in SELECTIONS]
    if unknown or not names:
        raise RunInputError(
            f"--selection takes {', '.join(SELECTIONS)} or all (comma-separated), got {parsed.selection!r}"
        )
    return names


def _describe(args: argparse.Namespace) -> str:
    words = [args.family]
    for name in ("k", "n", "dims", "r", "config"):
        value = getattr(args, name, None)
        if value not in (None, False):
            words.append(f"--{name} {value}")
    if getattr(args, "twin", False):
        words.append("--twin")
    if args.routing:
        words.append(f"--routing {args.routing}")
    if getattr(args, "selection", None) and "," not in args.selection and args.selection != "all":
        words.append(f"--selection {args.selection}")
    return " ".join(words)


def settings_from_args(args: argparse.Namespace):
    from emulation.link_rate import parse_link_rate
    from emulation.sweep import SweepSettings
    from emulation.workload import MessageSizes

    workload = WorkloadOptions.from_args(args)
    return SweepSettings(
        switch_processes=args.switch_processes,
        lossless=args.lossless,
        link_rate_pps=parse_link_rate(args.link_rate, args.size),
        duration_s=args.duration,
        warmup_s=workload.warmup_s,
        loads=_loads(args.loads),
        process=workload.process,
        sizes=MessageSizes.parse(workload.message_sizes),
        zipf_exponent=workload.zipf_exponent,
        size=args.size,
        target=args.target,
        seed=args.seed,
        cpu_capacity=args.cpu_capacity,
    )


def main(args: argparse.Namespace) -> int:
    from emulation.network import stderr_progress
    from emulation.sweep import plan_sweep, run_sweep
    from emulation.sweep_report import write_sweep

    settings = settings_from_args(args)
    plans = plan_sweep(configurations_from_args(args), settings)
    say = (lambda message: None) if args.quiet else stderr_progress
    out = args.out or Path("/tmp/twinnet/sweep")
    # files rewritten after each configuration: an interrupted sweep keeps what it finished
    result = run_sweep(
        plans, settings, say=say, checkpoint=lambda partial: write_sweep(partial, out, pictures=False)
    )
    for path in write_sweep(result, out, pictures=not args.no_pictures):
        print(f"wrote {path}")
    for configuration in result["configurations"]:
        print(
            f"{configuration['label']}: saturation throughput {configuration['saturation_throughput']} "
            f"(bound {configuration['throughput_bound']}) packets per PE per link time"
        )
    return 0
