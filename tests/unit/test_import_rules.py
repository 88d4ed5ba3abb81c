"""The parts of twinnet import each other in one direction only (README: Layout).

topologies -> nothing; p4src -> nothing; p4switch (a program of its own) -> nothing of
twinnet; controller -> topologies, p4src, and p4switch only to compile without p4c;
emulation -> anything. Every import counts, including those inside functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PARTS = ("topologies", "controller", "emulation", "p4switch", "p4src")
#: part -> parts it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "topologies": set(),
    "p4src": set(),
    "p4switch": set(),
    "controller": {"topologies", "p4src"},
    "emulation": {"topologies", "controller", "p4switch", "p4src"},
}
#: the controller's one use of the switch package: compiling the card program without p4c
CONTROLLER_USES_OF_P4SWITCH = {"controller/compile.py"}


def imported_parts(path: Path) -> set[str]:
    """The twinnet parts that the module at `path` imports, anywhere in its body."""
    parts: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        parts.update(name.split(".")[0] for name in names if name.split(".")[0] in PARTS)
    return parts


def modules_of(part: str) -> list[Path]:
    return sorted((REPO / part).rglob("*.py"))


@pytest.mark.parametrize("part", PARTS)
def test_each_part_imports_only_what_the_layout_allows(part: str) -> None:
    modules = modules_of(part)
    assert modules, f"no modules found under {part}/"
    violations = []
    for path in modules:
        relative = path.relative_to(REPO).as_posix()
        allowed = ALLOWED[part] | {part}
        if relative in CONTROLLER_USES_OF_P4SWITCH:
            allowed = allowed | {"p4switch"}
        forbidden = imported_parts(path) - allowed
        if forbidden:
            violations.append(f"{relative} imports {', '.join(sorted(forbidden))}")
    assert not violations, "\n".join(violations)


def test_the_checker_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import os\n\ndef f():\n    from emulation.state import read_state\n    import p4switch.daemon\n"
    )
    assert imported_parts(module) == {"emulation", "p4switch"}
