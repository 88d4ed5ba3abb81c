"""Python's cyclic garbage collector paused while many long-lived, acyclic objects are made.

Its full passes scan every tracked object again and again and find nothing to
free (a third of the time of 8x8x8's 2.1M route entries; 0.5 s of the 0.8 s
the 8,192-PE topology model takes); reference counting still frees the rest.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block with the cyclic collector off (as it was before, after)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
