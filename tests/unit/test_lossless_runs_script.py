"""scripts/lossless_runs.py: its cases are issue 16's networks and routings, and bad options are refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from controller.routing import UNSAFE, algorithms_for

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))

import lossless_runs  # noqa: E402


def test_cases_cover_the_issue_and_every_unsafe_variant() -> None:
    by_routing = {case.routing: case for case in lossless_runs.CASES}
    assert {"dor", "dort", "ts-dor", "destro"} | set(UNSAFE) == set(by_routing)
    families = {"ndt": "ndt", "torus": "torus", "fattree": "twin-fattree"}
    for case in lossless_runs.CASES:
        assert case.routing in algorithms_for(families[case.family], include_unsafe=True)
        assert case.unsafe == (case.routing in UNSAFE)
    assert by_routing["dort"].arguments() == ["ndt", "--dims", "4x4x4", "--routing", "dort"]
    assert by_routing["destro"].arguments()[:6] == ["fattree", "--k", "4", "--n", "3", "--twin"]


def test_the_cyclic_variants_run_where_the_analysis_finds_a_cycle() -> None:
    from controller.analysis.deadlock import check_deadlock
    from controller.analysis.paths import AllPairs
    from controller.routing import compute_tables
    from topologies.build import build_topology

    for case in lossless_runs.CASES:
        if case.unsafe:
            topology = build_topology(case.family, dims=case.options["dims"])
            assert not check_deadlock(AllPairs(compute_tables(topology, case.routing))).deadlock_free


def test_throughput_bounds_order_the_routings() -> None:
    """1 / the max link load: TS-DOR's is above DORT's on 4x4x4 (the contracts' shorter paths)."""
    cases = {case.name: case for case in lossless_runs.CASES}
    bound = lossless_runs.throughput_bound
    assert 0 < bound(cases["dort"], "uniform") < bound(cases["ts-dor"], "uniform") <= 1


def test_unknown_case_and_bad_numbers_are_refused_in_one_line() -> None:
    script = REPO / "scripts" / "lossless_runs.py"
    for options, message in [
        (["--only", "nope"], "unknown case(s) nope"),
        (["--duration", "0"], "must be positive"),
    ]:
        done = subprocess.run([sys.executable, str(script), *options], capture_output=True, text=True)
        assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
