"""The analysis keeps freed memory in the process: arrays of megabytes allocated block after block
reuse the same pages instead of faulting fresh ones in."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

FAULTS = """
import resource, sys
import numpy as np
from controller.analysis.heap import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
np.ones(1 << 20)  # 8 MiB once, so that the heap has grown
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    np.ones(1 << 20)  # 8 MiB: 2,048 pages, allocated, written and freed
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> int:
    result = subprocess.run(
        [sys.executable, "-c", FAULTS, mode], capture_output=True, text=True, check=True, timeout=60
    )
    return int(result.stdout)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_freed_arrays_are_reused_without_page_faults() -> None:
    pages = 20 * (8 << 20) // 4096
    assert _faults("default") >= pages // 2  # each 8 MiB array is a fresh mapping
    assert _faults("keep") < pages // 10
