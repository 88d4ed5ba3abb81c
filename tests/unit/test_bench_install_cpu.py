"""scripts/bench_install_cpu.py runs against the installer it measures (a change to the installer's
internals once left it failing on its first card)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_install_cpu.py"


def test_two_cards_give_both_sides_costs() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--cards", "2", "--batch-size", "500"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    figures = re.search(r"(\d+) updates.*controller ([\d.]+) .*switch ([\d.]+)", done.stdout)
    assert figures is not None, done.stdout
    updates, controller_us, switch_us = int(figures[1]), float(figures[2]), float(figures[3])
    assert updates > 0 and controller_us > 0 and switch_us > 0
