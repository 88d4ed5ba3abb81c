"""The parts of twinnet import each other in one direction only (README: Layout).

topologies -> nothing; p4src -> nothing; p4switch (a program of its own) -> nothing of
twinnet; controller -> topologies, p4src, p4switch's protobuf-only P4Info module (the one
P4InfoIndex and bytestring codec, shared by server and client), and the rest of p4switch
only to compile without p4c; emulation -> anything. Every import counts, including those
inside functions.
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
#: the controller's use of the switch package beyond SHARED_MODULES: compiling the card program without p4c
CONTROLLER_USES_OF_P4SWITCH = {"controller/compile.py"}
#: modules of another part that the controller may import anywhere (protobuf-only, no switch behind them)
SHARED_MODULES = {"controller": {"p4switch.p4runtime.info"}}


def imported_modules(path: Path) -> set[str]:
    """The twinnet modules that the module at `path` imports, anywhere in its body."""
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        modules.update(name for name in names if name.split(".")[0] in PARTS)
    return modules


def imported_parts(path: Path, shared: set[str] = frozenset()) -> set[str]:
    """The twinnet parts that the module at `path` imports, not counting the `shared` modules."""
    return {name.split(".")[0] for name in imported_modules(path) - shared}


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
        forbidden = imported_parts(path, SHARED_MODULES.get(part, set())) - allowed
        if forbidden:
            violations.append(f"{relative} imports {', '.join(sorted(forbidden))}")
    assert not violations, "\n".join(violations)


def test_the_checker_sees_imports_inside_functions(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import os\n\ndef f():\n    from emulation.state import read_state\n    import p4switch.daemon\n"
    )
    assert imported_parts(module) == {"emulation", "p4switch"}


def test_the_controller_may_use_the_p4info_module_and_nothing_else_of_the_switch(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("from p4switch.p4runtime.info import P4InfoIndex\nimport p4switch.p4runtime.server\n")
    assert imported_parts(module, SHARED_MODULES["controller"]) == {"p4switch"}
    module.write_text("from p4switch.p4runtime.info import P4InfoIndex\n")
    assert imported_parts(module, SHARED_MODULES["controller"]) == set()
