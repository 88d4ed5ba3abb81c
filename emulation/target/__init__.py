"""The embedded P4 target's language core: compile a P4_16 v1model program and run packets through it.

See emulation/target/README.md for the supported subset and docs/target-api.md for the API.
"""

from .compiler import CompiledProgram, compile_program
from .errors import EntryError, P4CompileError, PacketError
from .pipeline import IngressResult, Pipeline
from .tables import Entry

__all__ = [
    "CompiledProgram",
    "Entry",
    "EntryError",
    "IngressResult",
    "P4CompileError",
    "PacketError",
    "Pipeline",
    "compile_program",
]
