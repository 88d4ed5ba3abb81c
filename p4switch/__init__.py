"""An embedded P4_16 (v1model) switch: compiler, runtime, P4Runtime server and daemon.

A program of its own (``twinnet-switch``), a drop-in for bmv2's ``simple_switch_grpc``;
it imports nothing of twinnet. See p4switch/README.md for the supported subset and
docs/target-api.md for the API. The names below load on first use, so that the daemon's
and the command line's imports stay light.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "CompiledProgram": "p4switch.compiler.compile",
    "compile_program": "p4switch.compiler.compile",
    "EntryError": "p4switch.errors",
    "P4CompileError": "p4switch.errors",
    "P4SwitchError": "p4switch.errors",
    "PacketError": "p4switch.errors",
    "IngressResult": "p4switch.runtime.pipeline",
    "Pipeline": "p4switch.runtime.pipeline",
    "Entry": "p4switch.runtime.tables",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    """Import an exported name's module when the name is first asked for."""
    if name not in _EXPORTS:
        raise AttributeError(f"module 'p4switch' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
