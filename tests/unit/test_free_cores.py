"""Free cores are the CPUs' idle time measured now (/proc/stat), not the load average."""

from __future__ import annotations

import os
import subprocess
import sys

from emulation.headroom import cpu_times, free_cores, idle_cores


def test_idle_cores_from_two_snapshots() -> None:
    before = {0: (100, 1000), 1: (500, 1000)}
    after = {0: (150, 1100), 1: (500, 1100), 2: (7, 9)}  # cpu0 half idle, cpu1 busy, cpu2 not seen before
    assert idle_cores(before, after) == 0.5 + 0.0 + 1.0
    assert idle_cores(after, after) == 3.0  # no time passed: nothing is known busy


def test_the_snapshot_reads_the_cpus_asked_for() -> None:
    cpus = os.sched_getaffinity(0)
    times = cpu_times(cpus)
    assert set(times) == set(cpus)
    assert all(0 <= idle <= total for idle, total in times.values())


def test_a_busy_process_takes_a_core_off() -> None:
    """A child spinning on one CPU of ours leaves at most the others free (and never less than 0.25)."""
    cpus = sorted(os.sched_getaffinity(0))
    spin = f"import os, time\nos.sched_setaffinity(0, {{{cpus[0]}}})\nend = time.time() + 3\n"
    child = subprocess.Popen([sys.executable, "-c", spin + "while time.time() < end: pass\n"])
    try:
        free = free_cores(sample_s=1.0)
    finally:
        child.kill()
        child.wait()
    assert 0.25 <= free <= max(0.25, len(cpus) - 0.8)
