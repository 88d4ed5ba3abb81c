"""The analysis keeps freed memory in the process: an array of megabytes allocated again after it was
freed reuses the same pages instead of faulting fresh ones in."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

FAULTS = """
import resource, sys
import numpy as np
from controller.analysis.heap import keep_freed_memory
print(keep_freed_memory() if sys.argv[1] == "keep" else None)
np.ones(3 << 20)  # 24 MiB, allocated, written and freed
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
np.ones(3 << 20)  # the same again
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _run(mode: str) -> tuple[str, int]:
    result = subprocess.run(
        [sys.executable, "-c", FAULTS, mode], capture_output=True, text=True, check=True, timeout=60
    )
    kept, faults = result.stdout.split()
    return kept, int(faults)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_a_freed_array_is_reused_without_page_faults() -> None:
    kept, faults = _run("keep")
    assert kept == "True"
    assert faults < 64  # 24 MiB are 6,144 pages of 4 KiB


def test_without_glibc_nothing_is_done(monkeypatch) -> None:
    import ctypes.util

    from controller.analysis.heap import keep_freed_memory

    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    assert keep_freed_memory() is False
