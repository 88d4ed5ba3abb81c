"""The workload and link options ``twinnet run`` and ``twinnet sweep`` share, defined once.

Light to import (argparse and dataclasses only), so that the command line loads
fast: :mod:`emulation.workload` makes the schedule from what is chosen here.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

#: The thesis's message sizes: 70% of 2 packets, 30% of 8 (size:probability in packets).
THESIS_SIZES = "2:0.7,8:0.3"
#: Injection processes per host: Bernoulli (at most one message per link time) or Poisson.
PROCESSES = ("bernoulli", "poisson")
DEFAULT_WARMUP_S = 0.5
DEFAULT_ZIPF_EXPONENT = 1.0
#: Frame size as the host sends it, Ethernet header included (bytes).
DEFAULT_FRAME_BYTES = 64
#: Destinations a workload draws itself besides the patterns (Zipf needs a workload: --load)
WORKLOAD_DESTINATIONS = ("uniform", "zipf")
TARGETS = ("auto", "bmv2", "embedded")

#: WorkloadOptions field -> the command-line option that sets it
_OPTION_OF = {
    "process": "--process",
    "message_sizes": "--message-sizes",
    "warmup_s": "--warmup",
    "zipf_exponent": "--zipf-exponent",
}


@dataclass(frozen=True)
class WorkloadOptions:
    """How a workload is shaped besides its load: process, message sizes, warm-up, Zipf exponent.

    ``given`` names the options written on the command line (a run refuses them without --load).
    """

    process: str = PROCESSES[0]
    message_sizes: str = THESIS_SIZES
    warmup_s: float = DEFAULT_WARMUP_S
    zipf_exponent: float = DEFAULT_ZIPF_EXPONENT
    given: tuple[str, ...] = ()

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> WorkloadOptions:
        """The options parsed by :func:`add_workload_arguments`; the defaults where none was given."""
        chosen = {name: getattr(args, name) for name in _OPTION_OF if getattr(args, name) is not None}
        return cls(**chosen, given=tuple(_OPTION_OF[name] for name in chosen))


def add_workload_arguments(
    group: argparse._ActionsContainer, *, traffic_default: str | None, link_rate_help: str | None
) -> None:
    """Destinations, link rate, message sizes, process, warm-up, frame size, target, seeds and the
    patterns' options. ``link_rate_help`` None makes --link-rate required, else it says its default."""
    from controller.analysis.traffic import PATTERNS

    group.add_argument(
        "--traffic",
        default=traffic_default,
        metavar="PATTERN",
        help=f"destinations: a pattern ({', '.join(PATTERNS)}) or, for a workload at a load, "
        f"{' or '.join(WORKLOAD_DESTINATIONS)} "
        f"(default {traffic_default or 'all-to-all; uniform with --load'})",
    )
    group.add_argument(
        "--zipf-exponent",
        type=float,
        metavar="S",
        help=f"--traffic zipf: destination d drawn with probability ~ 1/rank(d)^S (default "
        f"{DEFAULT_ZIPF_EXPONENT:g})",
    )
    group.add_argument(
        "--link-rate",
        required=link_rate_help is None,
        metavar="RATE",
        help="every link's rate: packets/s (200, 200pps) or bits/s for --size frames (1Mbit)"
        + (f"; default: {link_rate_help}" if link_rate_help else ""),
    )
    group.add_argument(
        "--message-sizes",
        metavar="SIZE:P,..",
        help=f"message sizes in packets and their probabilities (default the thesis's {THESIS_SIZES})",
    )
    group.add_argument(
        "--process",
        choices=PROCESSES,
        help=f"injection process per host (default {PROCESSES[0]}: at most one message per link time)",
    )
    group.add_argument(
        "--warmup",
        type=float,
        metavar="S",
        dest="warmup_s",
        help=f"first seconds of injection, not measured (default {DEFAULT_WARMUP_S:g})",
    )
    group.add_argument(
        "--size",
        type=int,
        default=DEFAULT_FRAME_BYTES,
        metavar="BYTES",
        help=f"frame size as the host sends it, Ethernet header included (default {DEFAULT_FRAME_BYTES})",
    )
    group.add_argument(
        "--target",
        choices=TARGETS,
        default="auto",
        help="P4 switch: bmv2 (simple_switch_grpc + p4c), the embedded target, or auto "
        "(bmv2 when both are on PATH)",
    )
    group.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of random destinations, message sizes and injection times, and of random-permutation",
    )
    group.add_argument("--hotspot", type=int, metavar="PE", help="hotspot: the PE that attracts the traffic")
    group.add_argument(
        "--fraction", type=float, help="hotspot: share of each PE's traffic sent to the hotspot"
    )
    group.add_argument("--shift", type=int, help="bit-reverse-shift: the permutation's shift i")


def pattern_options(args: argparse.Namespace) -> dict[str, Any]:
    """The traffic pattern's keyword options: the seed, and hotspot, fraction, shift where given."""
    options: dict[str, Any] = {"seed": args.seed}
    for name in ("hotspot", "fraction", "shift"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    return options
