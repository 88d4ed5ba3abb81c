"""Where the ``twinnet-switch`` command is: for the Mininet switch class, the tests and the benchmark.

scripts/setup.sh builds the switch its own environment in ``.venv/switch`` (a current
protobuf for a fast P4Runtime server, see switch_protos.py); without it the switch runs
on the interpreter at hand (correct, with slower P4Runtime parsing).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SWITCH_ENVIRONMENT = REPO / ".venv" / "switch"


def switch_command() -> list[str]:
    """The argv prefix that starts ``twinnet-switch`` (options follow)."""
    fast = SWITCH_ENVIRONMENT / "bin" / "twinnet-switch"
    if fast.exists():
        return [str(fast)]
    return [sys.executable, "-m", "p4switch.daemon.cli"]
