"""`twinnet analyze`: JSON fields, one path hop by hop, and clear errors for bad input."""

from __future__ import annotations

import json

from emulation.cli import main


def test_json_report_has_the_documented_fields(capsys, tmp_path):
    out = tmp_path / "paths.jsonl"
    code = main(
        [
            "analyze",
            "ndt",
            "--dims",
            "3x3x3",
            "--routing",
            "dort",
            "--traffic",
            "uniform",
            "--json",
            "--paths-out",
            str(out),
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["paths"] == 54 * 53
    assert report["deadlock_free"] is True
    assert report["paper_metric"]["value"] == 16
    assert report["vcs_per_link"] == {"external": 2, "internal": 4, "host": 1}
    assert 0 < report["throughput_bound"] <= 1
    lines = out.read_text().splitlines()
    assert len(lines) == 54 * 53
    first = json.loads(lines[0])
    assert first["hops"][-1][5] == "host"


def test_pair_prints_the_path(capsys):
    assert main(["analyze", "fattree", "--k", "4", "--n", "2", "--twin", "--pair", "0", "15"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("PE 0 -> PE 15")


def test_summary_without_json(capsys):
    assert main(["analyze", "torus", "--dims", "4x4"]) == 0
    assert "deadlock free: True" in capsys.readouterr().out


def test_bad_input_is_a_message_not_a_trace(capsys):
    assert main(["analyze", "torus", "--dims", "4x4", "--routing", "destro"]) == 2
    assert "destro does not route a 'torus'" in capsys.readouterr().err
    assert main(["analyze", "torus", "--dims", "3x3", "--traffic", "bit-reversal"]) == 2
    assert "power-of-two" in capsys.readouterr().err
    assert main(["analyze", "torus", "--dims", "4x4", "--traffic", "nope"]) == 2
    assert "must be one of" in capsys.readouterr().err
