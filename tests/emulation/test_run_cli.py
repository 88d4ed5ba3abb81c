"""``twinnet run`` and ``twinnet cli`` as a user types them: bad input refused before anything starts,
a run end to end with its report, and the CLI's path tools, ping included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
FATTREE = ["fattree", "--k", "4", "--n", "2", "--twin"]


def twinnet(*arguments: str, stdin: str | None = None, env: dict | None = None, timeout: float = 300):
    return subprocess.run(
        [sys.executable, "-m", "emulation.cli", *arguments],
        cwd=REPO,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([*FATTREE, "--traffic", "zigzag"], "traffic pattern must be one of"),
        (
            [*FATTREE, "--packets", "500", "--duration", "2", "--rate", "100"],
            "cannot be sent in --duration 2 s",
        ),
        (["ndt", "--dims", "16x16x16"], "choose a smaller topology"),
        (["ndt", "--dims", "2x4x2", "--routing", "destro"], "does not route a 'ndt'"),
        ([*FATTREE, "--kill", "c3"], "--kill takes CARD@SECONDS"),
    ],
)
def test_bad_input_is_refused_before_anything_starts(tmp_path, arguments, message) -> None:
    state_dir = tmp_path / "state"
    started = time.monotonic()
    result = twinnet(
        "run", *arguments, "--out", str(tmp_path / "out"), env={"TWINNET_STATE_DIR": str(state_dir)}
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert time.monotonic() - started < 60
    assert not state_dir.exists() and not (tmp_path / "out").exists(), "nothing may have started"


def test_run_end_to_end_prints_where_the_report_is(tmp_path) -> None:
    out = tmp_path / "report"
    result = twinnet(
        "run",
        *FATTREE,
        "--routing",
        "destro",
        "--traffic",
        "bit-reversal",
        "--packets",
        "3",
        "--rate",
        "20",
        "--target",
        "embedded",
        "--out",
        str(out),
        "--quiet",
    )
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    assert f"report      {out / 'report.json'}" in result.stdout
    data = json.loads((out / "report.json").read_text())
    assert (
        data["ok"] and data["verdicts"]["equal"] == 12 * 3
    )  # bit reversal: 12 of 16 PEs are no fixed point and data["accounting"]["lost"] == 0
    for name in ("paths.csv", "link_loads.png", "path_lengths.png", "latency.png"):
        assert (out / name).stat().st_size > 0


def test_cli_shows_measured_paths_beside_the_model_and_ping_works(tmp_path) -> None:
    commands = "path h0 h15\ncounters c0\nload\nh0 ping -c 2 -W 2 h15\nexit\n"
    result = twinnet("cli", *FATTREE, "--target", "embedded", "--out", str(tmp_path), stdin=commands)
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    output = result.stdout
    assert "probe " in output and "PE 0 -> PE 15" in output and "verdict: equal" in output, output
    assert "card c0 drops:" in output and "model paths" in output
    everything = output + result.stderr  # Mininet logs its commands' output to stderr
    assert "2 packets transmitted, 2 received" in everything, everything[-3000:]
