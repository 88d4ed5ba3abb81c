"""``twinnet run --link-rate --load`` end to end on a 4-ring (embedded target): the workload is sent,
every packet follows the model's path, and report.json has latency in packet times and the load's
figures in link units."""

from __future__ import annotations

import json

import pytest
from test_run_cli import twinnet

pytestmark = pytest.mark.root

LINK_RATE, LOAD, SECONDS, WARMUP = 100.0, 0.3, 3.0, 1.0


def test_a_load_run_reports_offered_accepted_and_packet_times(tmp_path) -> None:
    out = tmp_path / "load"
    result = twinnet(
        "run", "torus", "--dims", "4", "--routing", "dor", "--target", "embedded",
        "--link-rate", f"{LINK_RATE:g}", "--load", f"{LOAD:g}", "--duration", f"{SECONDS:g}",
        "--warmup", f"{WARMUP:g}", "--message-sizes", "1:0.5,2:0.5", "--out", str(out), "--quiet",
        "--no-pictures",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    assert "  load        offered" in result.stdout and "in packet times median" in result.stdout
    data = json.loads((out / "report.json").read_text())
    figures = data["performance"]
    # 4 PEs x 100 packets/s x 0.3 over the 2 s window: ~240 packets; a 4-ring's bound is 1, so all
    # arrive: accepted = offered but for the packets in flight at the window's edges (< 4 each)
    assert abs(figures["offered"] - LOAD) < 0.1
    assert abs(figures["accepted"] - figures["offered"]) <= 2 * 4 / ((SECONDS - WARMUP) * 4 * LINK_RATE)
    assert figures["lost_measured"] == 0 and figures["workload"]["message_sizes"] == {"1": 0.5, "2": 0.5}
    times, micros = data["latency_packet_times"]["all"], data["latency_us"]["all"]
    for key in ("min", "p50", "p99", "max"):
        assert times[key] == pytest.approx(micros[key] * LINK_RATE / 1e6)
    assert data["traffic"]["link_rate_pps"] == LINK_RATE and data["ok"]
