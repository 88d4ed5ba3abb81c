"""Keep freed memory in the process while the analysis runs: its blocks allocate and free arrays of
megabytes each, and glibc's malloc otherwise returns them to the system and takes fresh pages again,
one page fault per 4 KiB (1.6 million faults and 7 s of system time for 8,192 PEs).
"""

from __future__ import annotations

import ctypes
import ctypes.util

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
