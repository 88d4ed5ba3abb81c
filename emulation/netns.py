"""Entering another network namespace from one thread, to open sockets that belong to it.

A socket belongs to the namespace it was created in, whichever thread uses it later, and ``setns``
moves only the calling thread: so a thread enters the namespace, creates its sockets, and returns
to its own (also on errors). The hosts' packet sockets (emulation.traffic) and their neighbour
tables' netlink sockets (emulation.neighbours) are opened this way, from the run process.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterator

CLONE_NEWNET = 0x40000000

_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"setns: {os.strerror(error)}")


@contextlib.contextmanager
def entered(netns: str) -> Iterator[None]:
    """This thread inside the network namespace `netns` (a path such as ``/proc/<pid>/ns/net``) while
    inside; back in its own afterwards. OSError when the namespace cannot be opened or entered."""
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        try:
            target = os.open(netns, os.O_RDONLY)
        except OSError as error:
            raise OSError(error.errno, f"cannot open network namespace {netns}: {error.strerror}") from error
        try:
            _setns(target)
        finally:
            os.close(target)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(own)
