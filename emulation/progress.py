"""A one-line progress bar on stderr (redrawn in place on a terminal, a line every few seconds otherwise)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH = 30
#: Seconds between lines when stderr is not a terminal.
LOG_INTERVAL = 5.0


class ProgressBar:
    """``bar.update(done, extra)`` as often as you like; ``bar.finish()`` ends the line."""

    def __init__(self, label: str, total: int, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.label = label
        self.total = max(1, total)
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.interactive = enabled and self.stream.isatty()
        self.started = time.monotonic()
        self._last_log = 0.0
        self._drawn = False

    def line(self, done: int, extra: str = "") -> str:
        fraction = min(1.0, done / self.total)
        filled = int(round(fraction * BAR_WIDTH))
        elapsed = time.monotonic() - self.started
        return (
            f"twinnet: {self.label} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] "
            f"{done}/{self.total} {elapsed:5.1f} s{('  ' + extra) if extra else ''}"
        )

    def update(self, done: int, extra: str = "") -> None:
        if not self.enabled:
            return
        if self.interactive:
            self.stream.write("\r" + self.line(done, extra) + "\033[K")
            self.stream.flush()
            self._drawn = True
            return
        now = time.monotonic()
        if now - self._last_log >= LOG_INTERVAL:
            self._last_log = now
            print(self.line(done, extra), file=self.stream, flush=True)

    def finish(self, done: int, extra: str = "") -> None:
        if not self.enabled:
            return
        if self.interactive:
            self.stream.write("\r" + self.line(done, extra) + "\033[K\n")
        else:
            print(self.line(done, extra), file=self.stream)
        self.stream.flush()
