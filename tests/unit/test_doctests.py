"""The examples in the docstrings of every twinnet and p4switch module run and hold."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("topologies", "controller", "emulation", "p4src", "p4switch")


def modules_with_examples() -> list[str]:
    """Dotted names of the modules whose source holds a ``>>>`` example (a text scan: no imports)."""
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if any(line.lstrip().startswith(">>> ") for line in path.read_text().splitlines()):
                names.append(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return names


MODULES = modules_with_examples()


def test_the_scan_finds_the_examples() -> None:
    assert "topologies.cost" in MODULES and "emulation.packets" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), report=False)
    assert result.attempted > 0 and result.failed == 0, f"{result.failed} of {result.attempted} failed"
