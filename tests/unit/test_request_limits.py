"""Requests too large for memory, or meaningless, are refused in one line before anything is allocated.

The topology's size is estimated in closed form (topologies/size.py) and checked against
what the builders really build for small networks; a run's schedule is bounded by
``MAX_RUN_PROBES``; a fault time must fall while probes are sent.
"""

from __future__ import annotations

import math
import time

import pytest

from emulation.cli import main
from emulation.run import RunInputError, RunSettings, check_schedule_size, plan_run
from emulation.run_settings import MAX_RUN_PROBES
from topologies.build import build_topology
from topologies.model import TopologyError
from topologies.size import MAX_ROUTE_ENTRY_BOUND, MAX_TOPOLOGY_ELEMENTS, estimate_size, topology_size
from topologies.torus import parse_dims

SMALL = [
    ("fattree", {"k": 2, "n": 3}),
    ("fattree", {"k": 4, "n": 2}),
    ("fattree", {"k": 4, "n": 3, "twin": True}),
    ("fattree", {"k": 8, "n": 2, "twin": True}),
    ("fattree", {"k": 6, "n": 2, "twin": True, "r": 3}),
    ("torus", {"dims": "4x4"}),
    ("torus", {"dims": "3x5x2"}),
    ("ndt", {"dims": "4x4"}),
    ("ndt", {"dims": "3x3x3"}),
]


@pytest.mark.parametrize(("family", "parameters"), SMALL, ids=lambda v: str(v))
def test_the_estimate_counts_what_the_builders_build(family: str, parameters: dict) -> None:
    topology = build_topology(family, **parameters)
    counts = topology.counts()
    given = dict(parameters)
    if "dims" in given:
        given["dims"] = parse_dims(given["dims"])
    size = estimate_size(family, **given)
    assert size.cards == counts["cards"] and size.hosts == counts["hosts"]
    assert size.links == counts["external_links"] + counts["internal_links"] + counts["host_links"]
    assert size.ports == sum(card.num_ports for card in topology.cards.values())
    assert topology_size(topology) == size


@pytest.mark.parametrize(
    ("family", "parameters"),
    [
        ("fattree", {"k": 4, "n": 100}),
        ("fattree", {"k": 4, "n": 10**12, "twin": True}),
        ("fattree", {"k": 10**6, "n": 2}),
        ("ndt", {"dims": "100000x100000x100000"}),
        ("torus", {"k": 2, "n": 10**9}),
        ("torus", {"dims": "1500x1500"}),
    ],
    ids=str,
)
def test_topologies_past_the_limit_are_refused_at_once(family: str, parameters: dict) -> None:
    started = time.monotonic()
    with pytest.raises(TopologyError, match="too large to build|dimensions"):
        build_topology(family, **parameters)
    assert time.monotonic() - started < 1.0


def test_the_limit_lets_a_large_realistic_topology_through() -> None:
    size = estimate_size("ndt", dims=(16, 16, 16))  # 8,192 cards: the capacity check's example
    assert size.elements < MAX_TOPOLOGY_ELEMENTS


@pytest.mark.parametrize(
    "argv",
    [
        ["topo", "fattree", "--k", "4", "--n", "100"],
        ["topo", "ndt", "--dims", "100000x100000x100000"],
        ["analyze", "fattree", "--k", "4", "--n", "100"],
        ["analyze", "ndt", "--dims", "100000x100000x100000"],
        ["run", "fattree", "--k", "4", "--n", "2", "--twin", "--duration", "1e12"],
        ["run", "fattree", "--k", "4", "--n", "2", "--twin", "--rate", "1e9", "--duration", "1"],
        ["run", "fattree", "--k", "4", "--n", "2", "--twin", "--packets", "1000000000"],
        ["run", "fattree", "--k", "4", "--n", "2", "--twin", "--kill", "c1@nan"],
        ["run", "fattree", "--k", "4", "--n", "2", "--twin", "--kill", "c1@-5"],
        ["run", "fattree", "--k", "4", "--n", "2", "--twin", "--kill", "c1@inf"],
    ],
    ids=" ".join,
)
def test_the_command_line_refuses_in_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in lines[0]


@pytest.fixture(scope="module")
def fattree():
    return build_topology("fattree", k=4, n=2, twin=True)


def plan_for(topology, **settings):
    settings.setdefault("target", "embedded")
    return plan_run(topology, RunSettings(**settings), need_root=False)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"duration": 1e12}, "a run sends at most"),
        ({"duration": 1e308, "rate": 1e308}, "a run sends at most"),
        ({"rate": 1e9, "duration": 1.0}, "a run sends at most"),
        ({"packets": 10**9}, "a run sends at most"),
        ({"packets": MAX_RUN_PROBES // 16 + 1}, "a run sends at most"),
        ({"duration": math.inf}, "--duration must be"),
        ({"duration": math.nan}, "--duration must be"),
        ({"rate": math.nan}, "--rate must be"),
        ({"kill": ("c1", math.nan)}, "the time must be"),
        ({"kill": ("c1", -5.0)}, "the time must be"),
        ({"kill": ("c1", math.inf)}, "the time must be"),
        ({"kill": ("c1", 3600.0)}, "the time must be"),
    ],
    ids=str,
)
def test_runs_past_the_limits_are_refused(fattree, settings: dict, message: str) -> None:
    with pytest.raises(RunInputError, match=message):
        plan_for(fattree, **settings)


def test_runs_within_the_limits_are_planned(fattree) -> None:
    check_schedule_size(MAX_RUN_PROBES // 16, 16)  # at the limit: no error
    plan = plan_for(fattree, packets=5, duration=1e308, rate=1e308, kill=("c1", 0.0))
    assert plan.packets_per_host == 5


def test_the_routing_bound_admits_the_largest_benchmark() -> None:
    size = estimate_size("fattree", k=16, n=3, twin=True)  # scripts/bench_analysis.py's largest case
    assert size.ports * size.hosts <= MAX_ROUTE_ENTRY_BOUND
