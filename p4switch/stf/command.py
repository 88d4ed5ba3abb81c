"""``twinnet-switch --stf TEST.stf PROGRAM.p4``: exit 0 if every expected frame arrived and nothing else.

Exit status 1 with a readable list of the differences otherwise, 2 for a program the
target refuses (or an STF line it cannot run). Includes are resolved as p4c does: the
program's folder, then the target's own ``core.p4``/``v1model.p4``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from p4switch.errors import P4CompileError
from p4switch.stf.runner import run_stf
from p4switch.stf.script import read_stf

PASSED, FAILED, REFUSED = 0, 1, 2


@dataclass
class StfOutcome:
    """Exit status and the text to print."""

    status: int
    text: str


def run_stf_file(
    stf_file: str | Path, program_file: str | Path, include_dirs=(), fused: bool = False
) -> StfOutcome:
    """Compile `program_file`, run `stf_file` on it, and say how it went."""
    from p4switch.compiler.compile import compile_program  # the compiler only when a test is run

    program_file = Path(program_file)
    try:
        program = compile_program(program_file, (program_file.parent, *include_dirs), use_disk_cache=False)
        commands = read_stf(stf_file)
        result = run_stf(program, commands, str(stf_file), fused=fused)
    except P4CompileError as error:
        return StfOutcome(REFUSED, str(error))
    if result.passed:
        return StfOutcome(PASSED, f"{stf_file}: passed")
    return StfOutcome(FAILED, f"{stf_file}: frames differ\n{result.report()}")
