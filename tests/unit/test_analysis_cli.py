"""`twinnet analyze`: JSON fields, one path hop by hop, and clear errors for bad input."""

from __future__ import annotations

import json

import pytest

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


def test_pair_walks_the_same_path_as_the_whole_tables(capsys):
    from controller.routing import compute_tables, walk
    from topologies.torus import ndt_torus

    assert main(["analyze", "ndt", "--dims", "4x4x2", "--routing", "ts-dor", "--pair", "3", "60"]) == 0
    lines = capsys.readouterr().out.splitlines()
    path = walk(compute_tables(ndt_torus((4, 4, 2)), "ts-dor"), 3, 60)
    assert len(lines) == 1 + len(path.hops)
    assert [line.split()[0] for line in lines[1:]] == [
        compute_tables(ndt_torus((4, 4, 2)), "ts-dor").network.card_names[h.card_id] for h in path.hops
    ]
    assert main(["analyze", "ndt", "--dims", "4x4x2", "--pair", "3", "64"]) == 2
    assert "dst_pe must be a PE index in 0..63, got 64" in capsys.readouterr().err


def test_workers_give_the_report_of_one_process(capsys, monkeypatch):
    import controller.analysis.stream as stream
    from controller.routing import routing_spec
    from topologies.torus import ndt_torus

    args = ["analyze", "ndt", "--dims", "4x4x4", "--routing", "dort", "--traffic", "uniform", "--json"]
    assert main(args) == 0
    one = json.loads(capsys.readouterr().out)
    monkeypatch.setattr(stream, "FOLLOW_CELLS", 4 * 128)  # blocks of 4 destinations: 32 chunks
    assert len(stream.chunk_ranges(routing_spec(ndt_torus((4, 4, 4)), "dort"))) == stream.CHUNKS
    assert main([*args, "--workers", "2"]) == 0
    two = json.loads(capsys.readouterr().out)
    assert two.keys() == one.keys()
    for key in one:
        if isinstance(one[key], float):
            assert abs(two[key] - one[key]) <= 1e-12 * abs(one[key])
        elif key not in ("busiest_links", "bottleneck"):  # equal loads may be listed in another order
            assert two[key] == one[key], key
    with pytest.raises(SystemExit):  # argparse refuses it with a usage message
        main([*args, "--workers", "0"])
    assert "must be at least 1" in capsys.readouterr().err


def test_a_network_too_large_for_memory_is_refused_in_one_line(capsys, monkeypatch, tmp_path):
    import controller.analysis.memory as memory

    monkeypatch.setattr(memory, "available", lambda: 64 << 20)
    out = tmp_path / "paths.jsonl"
    code = main(["analyze", "ndt", "--dims", "4x4x4", "--traffic", "uniform", "--paths-out", str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs about" in err and "GiB are available" in err
    assert not out.exists()  # refused before anything was written


def test_failed_analysis_leaves_no_paths_file(capsys, monkeypatch, tmp_path):
    import controller.analysis.stream as stream
    from controller.routing.errors import RoutingLoopError

    def broken(*args, **kwargs):
        raise RoutingLoopError("packets loop")

    monkeypatch.setattr(stream, "AllPairs", broken)
    out = tmp_path / "paths.jsonl"
    assert main(["analyze", "torus", "--dims", "3x3", "--paths-out", str(out)]) == 2
    assert "packets loop" in capsys.readouterr().err
    assert not out.exists()


def test_default_workers_one_below_the_threshold_else_one_per_cpu_as_memory_allows(monkeypatch):
    import os

    import controller.analysis.memory as memory
    from controller.analysis.cli import PARALLEL_FROM, default_workers
    from controller.routing import routing_spec
    from topologies.torus import ndt_torus

    small = routing_spec(ndt_torus((4, 4, 4)), "dort")
    large = routing_spec(ndt_torus((16, 16, 8)), "dort")
    assert small.network.num_pes < PARALLEL_FROM <= large.network.num_pes
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    monkeypatch.setattr(memory, "available", lambda: 1 << 50)
    assert default_workers(small, None) == 1
    assert default_workers(large, None) == 3
    # room for two workers' estimate but not three: two
    monkeypatch.setattr(memory, "available", lambda: memory.estimate(large, None, 2))
    assert default_workers(large, None) == 2
    monkeypatch.setattr(memory, "available", lambda: 0)
    assert default_workers(large, None) == 1


def test_the_command_imports_only_the_asked_sub_command(monkeypatch):
    import importlib

    from emulation import cli

    imported = []
    real = importlib.import_module
    monkeypatch.setattr(importlib, "import_module", lambda name: imported.append(name) or real(name))
    modules = [module for module, _ in cli.SUBCOMMANDS.values()]
    cli.build_parser("analyze")
    assert [name for name in imported if name in modules] == ["controller.analysis.cli"]
    imported.clear()
    cli.build_parser()  # no sub-command named (e.g. `twinnet --help`): all of them
    assert [name for name in imported if name in modules] == modules
    assert cli._command_of(["analyze", "ndt", "--dims", "4x4"]) == "analyze"
    assert cli._command_of(["--help"]) is None
