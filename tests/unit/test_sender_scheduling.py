"""The sender process's CPU scheduling: SCHED_FIFO when it may and the machine has two CPUs, else normal."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = """
import os, sys
from emulation.sender import _real_time
if len(sys.argv) > 1:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
said = _real_time()
print(said, os.sched_getscheduler(0) == os.SCHED_FIFO, os.sched_getparam(0).sched_priority, sep="|")
"""


def _probe(*args: str) -> tuple[str, bool, int]:
    """Run ``_real_time`` in a fresh interpreter (it changes the calling thread's policy for good)."""
    done = subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True, text=True, check=True)
    said, fifo, priority = done.stdout.strip().split("|")
    return said, fifo == "True", int(priority)


def test_one_cpu_keeps_normal_scheduling() -> None:
    said, fifo, priority = _probe("one-cpu")
    assert not fifo and priority == 0
    assert said == "normal scheduling (SCHED_FIFO needs two CPUs)"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_real_time_when_allowed_else_says_why() -> None:
    from emulation.sender import SENDER_RT_PRIORITY

    said, fifo, priority = _probe()
    if os.geteuid() == 0:
        assert fifo and priority == SENDER_RT_PRIORITY and said == f"SCHED_FIFO {SENDER_RT_PRIORITY}"
    else:  # an unprivileged user may not (RLIMIT_RTPRIO is 0 by default)
        assert not fifo and said.startswith("normal scheduling (SCHED_FIFO refused: ")
