"""What ``twinnet run`` is asked for, and its defaults: light to import, so the command line loads fast.

emulation.run validates these settings (``plan_run``) and carries them out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emulation.workload_options import DEFAULT_FRAME_BYTES, WorkloadOptions
from topologies.errors import TwinnetError

#: Probes per second each host offers when --rate is not given.
DEFAULT_RATE_PPS = 100.0
#: Probes per host when neither --packets nor --duration is given (all-to-all: one per destination).
DEFAULT_PACKETS = 20
DEFAULT_SIZE = DEFAULT_FRAME_BYTES
#: After the last probe: wait for stragglers until none arrived for this long (s) ...
DRAIN_QUIET_S = 2.0
#: ... or at most this long (s).
DRAIN_LIMIT_S = 30.0
#: The most probes one run sends, all hosts together. A run keeps a few hundred bytes per probe
#: (schedule, send times, the judged result: BYTES_PER_PROBE, an estimate), so this bounds it near 1 GB;
#: a larger request is refused before anything is allocated.
MAX_RUN_PROBES = 2_000_000
BYTES_PER_PROBE = 500
#: Card port rate (packets/s) of a --lossless run without --link-rate: queues only build (and PFC
#: only acts) where a link is slower than what arrives, so a lossless run needs rated links.
DEFAULT_LOSSLESS_LINK_PPS = 500.0
#: Seconds a cycle of paused queues must stall before a lossless run calls it a deadlock.
DEFAULT_DEADLOCK_AFTER_S = 3.0
#: Exit status of `twinnet run` on a deadlock (kept for deadlock alone).
EXIT_DEADLOCK = 3


#: ``--control`` of ``twinnet run`` and ``twinnet cli``: where the cards' control surfaces listen
CONTROL_OPTION = {
    "choices": ("unix", "tcp"),
    "default": "unix",
    "help": "cards' P4Runtime and side channel: unix (default; sockets in a folder only you can enter) "
    "or tcp (127.0.0.1 ports as simple_switch_grpc has them: any local user can reach them)",
}


#: ``--selection`` of ``twinnet run`` and ``twinnet sweep`` (controller.routing.selection.SELECTIONS)
SELECTION_OPTION = {
    "choices": ("round-robin", "no-internal", "2-priority", "3-priority"),
    "type": str.lower,
    "default": None,
    "help": "--routing adaptive: the selection function among the adaptive candidates (the thesis's "
    "four; default 3-priority)",
}


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return value


#: ``--switch-processes`` of every command that builds a network: how many embedded switch processes
#: share the cards (p4switch serves many cards per process; bmv2 keeps one process per card)
SWITCH_PROCESSES_OPTION = {
    "type": positive_int,
    "default": None,
    "metavar": "N",
    "help": "embedded target: switch processes that share the cards (default: one per CPU core; "
    "each hosts a block of consecutive cards); bmv2 and --control tcp run one process per card",
}


class RunInputError(TwinnetError, ValueError):
    """The run cannot be done as asked; nothing was started."""


@dataclass
class RunSettings:
    """What ``twinnet run`` was asked for (besides the topology)."""

    routing: str | None = None
    #: adaptive routing's selection function (controller.routing.selection; default 3-priority)
    selection: str | None = None
    traffic: str = "all-to-all"
    packets: int | None = None
    duration: float | None = None
    rate: float | None = None
    size: int = DEFAULT_SIZE
    target: str = "auto"
    out: Path | None = None
    seed: int = 0
    kill: tuple[str, float] | None = None
    #: packets per second of every link (cards' queues, the injector's pacing); None: as fast as the CPU
    link_rate: float | None = None
    control: str = "unix"
    #: embedded switch processes sharing the cards (None: one per CPU core; see SWITCH_PROCESSES_OPTION)
    switch_processes: int | None = None
    check_capacity: bool = True
    pattern_options: dict[str, Any] = field(default_factory=dict)
    lossless: bool = False
    deadlock_after: float = DEFAULT_DEADLOCK_AFTER_S
    #: offered load per host as a fraction of the link rate: the schedule is a workload of messages
    #: (emulation.workload) instead of probes at --rate; needs link_rate and duration
    load: float | None = None
    #: how that workload is shaped (process, message sizes, warm-up, Zipf exponent)
    workload: WorkloadOptions = WorkloadOptions()

    def effective_link_rate(self) -> float | None:
        """Card port rate, packets/s: --link-rate, else the lossless default, else unlimited."""
        if self.link_rate is not None:
            return self.link_rate
        return DEFAULT_LOSSLESS_LINK_PPS if self.lossless else None
