"""TwinnetError: the base of twinnet's own errors, so that the command line catches them in one place.

Each error keeps its built-in base too (ValueError for bad input, RuntimeError for a failing
environment), so that code catching those still does. It lives in ``topologies`` because every
part may import that package; p4switch, a separate program, keeps errors of its own
(:class:`p4switch.errors.P4SwitchError`).
"""

from __future__ import annotations


class TwinnetError(Exception):
    """Bad input or a failing environment, reported to the user as one message (exit status 2)."""
