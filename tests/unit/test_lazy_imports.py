"""Imports made inside functions (kept lazy so that `twinnet --help` starts fast) name things that
exist: such an import fails only when its command runs, so no other test may reach it."""

from __future__ import annotations

import ast
import importlib
import pkgutil

import pytest

PARTS = ("topologies", "controller", "emulation", "p4src", "p4switch")


def function_level_imports() -> list[tuple[str, int, str, str]]:
    """(module, line, imported module, name) for every `from M import N` inside a function body."""
    found = []
    for part in PARTS:
        package = importlib.import_module(part)
        for info in pkgutil.walk_packages(package.__path__, f"{part}."):
            spec = importlib.util.find_spec(info.name)
            if spec is None or not spec.origin or not spec.origin.endswith(".py"):
                continue
            tree = ast.parse(open(spec.origin, encoding="utf-8").read())
            for function in ast.walk(tree):
                if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for node in ast.walk(function):
                    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                        if node.module.split(".")[0] in PARTS:
                            found.extend((info.name, node.lineno, node.module, a.name) for a in node.names)
    return found


IMPORTS = function_level_imports()


def test_the_scan_finds_the_lazy_imports_of_the_commands() -> None:
    modules = {module for module, *_ in IMPORTS}
    assert {"emulation.sweep_cli", "emulation.collective_cli", "emulation.run_cli"} <= modules


@pytest.mark.parametrize(("module", "line", "source", "name"), IMPORTS, ids=lambda v: str(v))
def test_a_lazy_import_names_something_that_exists(module: str, line: int, source: str, name: str) -> None:
    imported = importlib.import_module(source)
    if not hasattr(imported, name):
        importlib.import_module(f"{source}.{name}")  # a submodule is fine; anything else fails here
