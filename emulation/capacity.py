"""Will a network fit in this machine's memory? An estimate made before anything starts.

    need = cards x switch memory per card (a card's Mininet node starts no shell)
         + table entries x what an installed entry costs in its card
         + switch processes x (what a switch process costs before its cards)
         + hosts x (namespace shell + namespace kernel state)
         + links x (veth pair kernel state)
         + the builder itself

The switch figures come from the switch class (:meth:`P4CardSwitch.memory_plan`: bmv2 ~64 MB
a process per card; the embedded target sharing processes as measured by
scripts/bench_bringup.py). The network is refused when `need` exceeds
:data:`USABLE_FRACTION` of MemAvailable.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from topologies.errors import TwinnetError
from topologies.model import Topology

# Calibrated on 3DT 4x4x4 and 8x8x8 with DORT tables installed (scripts/bench_bringup.py --install;
# MemAvailable sampled during `twinnet run`): 128 hosts and 384 links cost ~0.19 GB, 1,024 hosts
# and 3,072 links ~1.4 GB; the controller grew to 1.5 GB RSS installing 2.1M entries.
#: bash shell of a Mininet host (PSS: its pages are mostly shared with every other shell), MB
NODE_SHELL_MB = 0.4
#: kernel state of a network namespace with its loopback, routes and ARP table, MB
NAMESPACE_MB = 0.75
#: kernel state of one veth pair with its queues, MB
VETH_PAIR_MB = 0.1
#: the Python process that builds and runs the network (Mininet, scapy later), MB ...
BUILDER_MB = 300.0
#: ... and what it holds per table entry while installing (the plans, the updates in flight), KB
BUILDER_ENTRY_KB = 0.6
#: share of MemAvailable a network may take
USABLE_FRACTION = 0.8


class CapacityError(TwinnetError, RuntimeError):
    """The network would not fit in this machine's memory."""


@dataclass(frozen=True)
class SwitchMemory:
    """What the switch processes of a network cost: per card, and per process beyond its cards (MB)."""

    card_mb: float
    process_mb: float = 0.0
    processes: int = 0
    #: an installed table entry, KB (0: counted in card_mb)
    entry_kb: float = 0.0


@dataclass(frozen=True)
class MemoryEstimate:
    cards_mb: float
    hosts_mb: float
    links_mb: float
    builder_mb: float
    available_mb: float

    @property
    def need_mb(self) -> float:
        return self.cards_mb + self.hosts_mb + self.links_mb + self.builder_mb

    @property
    def fits(self) -> bool:
        return self.need_mb <= USABLE_FRACTION * self.available_mb

    def summary(self) -> str:
        return (
            f"estimated {self.need_mb / 1024:.1f} GiB (cards {self.cards_mb / 1024:.1f}, hosts "
            f"{self.hosts_mb / 1024:.2f}, links {self.links_mb / 1024:.2f}, builder "
            f"{self.builder_mb / 1024:.2f}) of {self.available_mb / 1024:.1f} GiB available"
        )


def available_memory_mb() -> float:
    """MemAvailable from /proc/meminfo, MB."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    raise OSError("/proc/meminfo has no MemAvailable")


def estimate_memory(
    topology: Topology, switches: SwitchMemory, available_mb: float | None = None, entries: int = 0
) -> MemoryEstimate:
    """What the network needs with ``entries`` table entries installed over all its cards."""
    return MemoryEstimate(
        cards_mb=len(topology.cards) * switches.card_mb
        + entries * switches.entry_kb / 1024
        + switches.processes * switches.process_mb,
        hosts_mb=len(topology.hosts) * (NODE_SHELL_MB + NAMESPACE_MB),
        links_mb=len(topology.links) * VETH_PAIR_MB,
        builder_mb=BUILDER_MB + entries * BUILDER_ENTRY_KB / 1024,
        available_mb=available_memory_mb() if available_mb is None else available_mb,
    )


def check_memory(topology: Topology, switches: SwitchMemory, target: str, entries: int = 0) -> MemoryEstimate:
    """The estimate, or CapacityError with the figures if the network would not fit."""
    estimate = estimate_memory(topology, switches, entries=entries)
    if not estimate.fits:
        counts = topology.counts()
        raise CapacityError(
            f"{counts['cards']} cards and {counts['hosts']} hosts on the {target} target need "
            f"{estimate.summary()}; at most {USABLE_FRACTION:.0%} may be used: choose a smaller topology"
        )
    return estimate
