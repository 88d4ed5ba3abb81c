"""A one-line progress bar on stderr for long analyses: shown only on a terminal, after the first second.

>>> import io
>>> bar = Progress(10, stream=io.StringIO())
>>> bar.update(5); bar.close()          # not a terminal: prints nothing
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

#: seconds before the bar appears (short runs print nothing)
DELAY = 1.0


class Progress:
    """Counts `total` steps; draws ``label [#####     ] done/total  elapsed`` once a run lasts over DELAY."""

    def __init__(self, total: int, label: str = "analyze", stream: TextIO | None = None) -> None:
        self.total, self.label = max(1, total), label
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.monotonic()
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.drawn = False

    def update(self, done: int) -> None:
        """Redraw the bar for `done` steps finished (if on a terminal and past the delay)."""
        elapsed = time.monotonic() - self.start
        if not self.enabled or elapsed < DELAY:
            return
        width = 30
        filled = width * min(done, self.total) // self.total
        rest = elapsed * (self.total - done) / done if done else 0.0
        self.stream.write(
            f"\r{self.label} [{'#' * filled}{' ' * (width - filled)}] {done}/{self.total} "
            f"{elapsed:5.1f} s, ~{rest:.0f} s left "
        )
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        """Erase the bar (the report then prints on a clean line)."""
        if self.drawn:
            self.stream.write("\r" + " " * 79 + "\r")
            self.stream.flush()
