"""Is the emulator faster than the links it emulates? CPU headroom before and after a run.

Every packet costs a card's CPU once per card it crosses, and the injector once.
Before a run the work asked for (card visits per second = offered packets/s x
mean cards per path) is compared with what this machine's free cores forward
(:data:`CARD_VISITS_PER_CORE_S`, measured by ``scripts/bench_traffic.py``, or
``--cpu-capacity``): beyond :data:`REFUSE_FRACTION` of it the run is refused,
beyond :data:`WARN_FRACTION` it is warned about, with the numbers. After the run
the cards' own CPU time per card visit gives the capacity as measured, and late
sends say whether the injector kept time: results measured while the CPU was
the bottleneck measure the emulator, not the network.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from topologies.errors import TwinnetError

#: Card visits per second one core forwards on the embedded target, the hosts' side included
#: (3DT 4x4x4 on a 2-core machine carried 12.1-12.9k probes/s of ~5.8 cards each: ~36k visits/s
#: per core), rounded down.
CARD_VISITS_PER_CORE_S = 30_000.0
#: Probes per second the injector (one thread, all hosts) sends on time.
INJECTOR_PPS = 20_000.0
#: Refuse when the work needs more than this share of the capacity ...
REFUSE_FRACTION = 1.0
#: ... warn beyond this share (queueing in the cards' CPU grows well before 100%).
WARN_FRACTION = 0.5
#: Late sends above this share of all sends mean the injector did not keep time.
LATE_SHARE_LIMIT = 0.01
#: A switch process busier than this share of one core is the bottleneck, not its links.
CARD_BUSY_LIMIT = 0.8


class HeadroomError(TwinnetError, ValueError):
    """The offered load does not fit this machine's CPU."""


@dataclass(frozen=True)
class Headroom:
    """The work a run asks for and what the machine can do, per second."""

    offered_pps: float
    cards_per_packet: float
    free_cores: float
    visits_per_core_s: float

    @property
    def needed_visits_s(self) -> float:
        return self.offered_pps * self.cards_per_packet

    @property
    def capacity_visits_s(self) -> float:
        return self.free_cores * self.visits_per_core_s

    @property
    def share(self) -> float:
        """Share of the capacity the run needs (cards and injector, whichever is the larger)."""
        return max(self.needed_visits_s / self.capacity_visits_s, self.offered_pps / INJECTOR_PPS)

    def summary(self) -> str:
        return (
            f"{self.offered_pps:,.0f} packets/s x {self.cards_per_packet:.2f} cards = "
            f"{self.needed_visits_s:,.0f} card visits/s; {self.free_cores:.1f} free cores x "
            f"{self.visits_per_core_s:,.0f} = {self.capacity_visits_s:,.0f} visits/s "
            f"({self.share:.0%} of capacity; injector {self.offered_pps / INJECTOR_PPS:.0%} "
            f"of {INJECTOR_PPS:,.0f} packets/s)"
        )


#: Seconds over which free_cores watches the CPUs.
IDLE_SAMPLE_S = 0.5


def cpu_times(cpus: Iterable[int]) -> dict[int, tuple[int, int]]:
    """(idle, total) jiffies of each of ``cpus`` so far (/proc/stat; idle counts iowait too)."""
    wanted = {f"cpu{cpu}" for cpu in cpus}
    times: dict[int, tuple[int, int]] = {}
    with open("/proc/stat") as stat:
        for line in stat:
            name, *fields = line.split()
            if name in wanted:
                ticks = [int(value) for value in fields[:8]]  # user nice system idle iowait irq softirq steal
                times[int(name[3:])] = (ticks[3] + ticks[4], sum(ticks))
    return times


def idle_cores(before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]]) -> float:
    """Cores' worth of idle time between two ``cpu_times`` snapshots (a CPU that did not tick counts idle)."""
    idle = 0.0
    for cpu, (idle_after, total_after) in after.items():
        idle_before, total_before = before.get(cpu, (idle_after, total_after))
        elapsed = total_after - total_before
        idle += (idle_after - idle_before) / elapsed if elapsed > 0 else 1.0
    return idle


def free_cores(sample_s: float = IDLE_SAMPLE_S) -> float:
    """Cores this process may use that are idle now (measured over ``sample_s``), at least a quarter core.

    Measured, not the load average: that lags by a minute and counts this process's own
    work just before (a sweep's planning), which refused loads the idle machine carried.
    """
    cpus = os.sched_getaffinity(0)
    before = cpu_times(cpus)
    time.sleep(sample_s)
    return max(0.25, idle_cores(before, cpu_times(cpus)))


def check_headroom(
    offered_pps: float,
    cards_per_packet: float,
    *,
    cores: float | None = None,
    visits_per_core_s: float | None = None,
) -> tuple[Headroom, str | None]:
    """The headroom and a warning (or None); HeadroomError when the load cannot be emulated."""
    headroom = Headroom(
        offered_pps,
        cards_per_packet,
        free_cores() if cores is None else cores,
        CARD_VISITS_PER_CORE_S if visits_per_core_s is None else visits_per_core_s,
    )
    if headroom.share > REFUSE_FRACTION:
        raise HeadroomError(
            f"the offered load does not fit this machine's CPU: {headroom.summary()}; lower the link rate "
            "or the load (results would measure the emulator, not the network)"
        )
    if headroom.share > WARN_FRACTION:
        return headroom, f"little CPU headroom: {headroom.summary()}; watch late sends"
    return headroom, None


def mean_cards_per_packet(
    all_pairs, src: np.ndarray, dst: np.ndarray, weight: np.ndarray | None = None
) -> float:
    """Mean cards a packet of the (src, dst) pairs (weighted, default equally) visits on the model's paths."""
    weights = all_pairs.weights_of(src, dst, np.ones(src.size) if weight is None else weight)
    total = float(weights.sum())
    return float(((all_pairs.links() + 1) * weights).sum() / total) if total else 0.0


def process_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (the process state first), or None
    when the process is gone: utime, stime, cutime and cstime are fields 11 to 14, in clock ticks."""
    try:
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def process_user_system_s(pids: Iterable[int]) -> dict[int, tuple[float, float]]:
    """User and system CPU seconds of each live process (utime, stime from /proc/<pid>/stat)."""
    ticks = os.sysconf("SC_CLK_TCK")
    times = {}
    for pid in pids:
        fields = process_stat(pid)
        if fields is not None:
            times[pid] = (int(fields[11]) / ticks, int(fields[12]) / ticks)
    return times


def process_cpu_s(pids: Iterable[int]) -> dict[int, float]:
    """User + system CPU seconds of each live process."""
    return {pid: user + system for pid, (user, system) in process_user_system_s(pids).items()}


def verdict_after(
    *,
    late_sends: int,
    sends: int,
    process_cpu_s: dict[str, float],
    elapsed_s: float,
    card_visits: int,
) -> dict[str, object]:
    """What the run says about the CPU: late sends, busiest switch process, capacity as measured, a verdict.

    ``process_cpu_s``: CPU seconds of each switch process during the run, by its name (a card's
    name when it has a process of its own, else the shared process's, emulation.switch_groups).
    """
    busiest = max(process_cpu_s.items(), key=lambda item: item[1], default=("", 0.0))
    total_cpu = sum(process_cpu_s.values())
    busy_share = busiest[1] / elapsed_s if elapsed_s > 0 else 0.0
    late_share = late_sends / sends if sends else 0.0
    problems = []
    if late_share > LATE_SHARE_LIMIT:
        problems.append(f"{late_sends} of {sends} sends late ({late_share:.1%})")
    if busy_share > CARD_BUSY_LIMIT:
        problems.append(f"switch process {busiest[0]} used {busy_share:.0%} of a core")
    return {
        "late_sends": late_sends,
        "late_share": round(late_share, 5),
        "switches_cpu_s": round(total_cpu, 3),
        "busiest_switch_process": busiest[0] or None,
        "busiest_core_share": round(busy_share, 3),
        "measured_visits_per_core_s": round(card_visits / total_cpu, 1) if total_cpu > 0 else None,
        "cpu_bound": bool(problems),
        "warning": "; ".join(problems) or None,
    }
