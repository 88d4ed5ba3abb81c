"""Errors of the embedded P4 target: compile errors with source positions, control-plane and packet errors."""

from __future__ import annotations


class P4SwitchError(Exception):
    """Base of the target's own errors (p4switch imports nothing of twinnet, so not twinnet's base)."""


class P4CompileError(P4SwitchError):
    """A P4 program the target cannot compile; str() is "file:line:col: error: message"."""

    def __init__(self, file: str, line: int, column: int, message: str) -> None:
        """Keep the position and message; str() is the gcc-style line."""
        self.file = file
        self.line = line
        self.column = column
        self.message = message
        super().__init__(f"{file}:{line}:{column}: error: {message}")


class EntryError(P4SwitchError, ValueError):
    """An invalid control-plane request (table entry, counter or register access); state is unchanged."""


class TableFullError(EntryError):
    """An insert into a table that holds its declared size already; state is unchanged."""

    code = 8  # google.rpc.Code RESOURCE_EXHAUSTED, as P4Runtime reports a full table


class PacketError(P4SwitchError):
    """A packet whose processing failed inside the pipeline; the pipeline stays usable for the next packet."""
