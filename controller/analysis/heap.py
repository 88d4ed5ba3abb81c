"""Keep the process's memory management out of the analysis's way.

Its blocks allocate and free arrays of megabytes each, and glibc's malloc
otherwise returns them to the system and takes fresh pages again, one page
fault per 4 KiB (1.6 million faults and 7 s of system time for 8,192 PEs).
The topology model is ~10^5 small objects kept to the end, which Python's
cyclic garbage collector would otherwise scan again and again while they are
made (0.5 s of the 8,192-PE model's 0.8 s), finding nothing to free.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: glibc's mallopt parameters (malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
#: the largest mmap threshold glibc accepts on 64-bit systems: arrays below it come from the heap
MMAP_THRESHOLD = 32 << 20
#: freed heap memory kept before it is given back
TRIM_THRESHOLD = 1 << 30


def keep_freed_memory() -> bool:
    """Ask glibc's malloc to serve arrays up to 32 MiB from its heap and to keep what is freed (the
    peak stays the same: memory is reused, not added). False where there is no glibc (nothing done)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Run the block with Python's cyclic garbage collector paused (reference counting still frees)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
