"""Sweeps without a network: link-rate units, the CPU headroom check, a point's figures, saturation, files."""

from __future__ import annotations

import csv
import dataclasses
import json

import numpy as np
import pytest

from emulation.headroom import (
    CARD_BUSY_LIMIT,
    HeadroomError,
    check_headroom,
    mean_cards_per_packet,
    verdict_after,
)
from emulation.link_rate import LinkRateError, parse_link_rate
from emulation.measure import EQUAL, LOST, Arrival, ProbeResult
from emulation.packets import TraceHop
from emulation.perf_metrics import point_metrics
from emulation.run_settings import RunInputError
from emulation.sweep import Configuration, SweepSettings, plan_sweep, saturation
from emulation.sweep_cli import configurations_from_args
from emulation.sweep_report import CSV_COLUMNS, write_sweep
from emulation.traffic import Schedule
from emulation.workload import MessageSizes, Workload, WorkloadSpec
from topologies.build import build_topology


@pytest.mark.parametrize(
    ("text", "frame", "pps"),
    [("1000", 64, 1000.0), ("250pps", 64, 250.0), ("1Mbit", 125, 1000.0), ("512kbps", 64, 1000.0)],
)
def test_link_rate_units(text, frame, pps):
    assert parse_link_rate(text, frame) == pytest.approx(pps)


@pytest.mark.parametrize("text", ["0", "-1", "fast", "1Tbit"])
def test_bad_link_rates_are_refused(text):
    with pytest.raises(LinkRateError):
        parse_link_rate(text, 64)


def test_headroom_refuses_warns_and_passes_with_the_numbers():
    # 1000 packets/s x 5 cards = 5000 visits/s against 2 cores x 2000 = 4000: refused
    with pytest.raises(HeadroomError, match="5,000 card visits/s.*4,000 visits/s"):
        check_headroom(1000, 5.0, cores=2, visits_per_core_s=2000)
    _, warning = check_headroom(1000, 3.0, cores=2, visits_per_core_s=2000)  # 75%
    assert warning is not None and "75%" in warning
    headroom, warning = check_headroom(100, 3.0, cores=2, visits_per_core_s=2000)  # 7.5%
    assert warning is None and headroom.needed_visits_s == 300


def test_a_sweep_the_machine_cannot_emulate_is_refused_before_anything_starts():
    configuration = Configuration("ring", build_topology("torus", dims="4"), "dor", "uniform")
    settings = SweepSettings(link_rate_pps=1e7, loads=(0.5,), duration_s=0.01, warmup_s=0.0)
    with pytest.raises(HeadroomError, match="does not fit this machine's CPU"):
        plan_sweep([configuration], settings, need_root=False)
    modest = SweepSettings(link_rate_pps=20, loads=(0.5,), duration_s=1.0, cpu_capacity=1e6)
    (plan,) = plan_sweep([configuration], modest, need_root=False)
    # 4-ring, DOR, uniform (1/3 to each other PE): link i -> i+1 carries distance 1 from i (1/3) and
    # distance 2, the tie going +, from i and i-1 (2/3): load 1, bound 1
    assert plan.bound == pytest.approx(1.0)


def test_a_lossless_sweep_carries_pfc_to_its_runs_and_is_refused_on_bmv2():
    configuration = Configuration("ring", build_topology("torus", dims="4"), "dor", "uniform")
    lossless = SweepSettings(link_rate_pps=20, loads=(0.5,), cpu_capacity=1e6, lossless=True)
    (plan,) = plan_sweep([configuration], lossless, need_root=False)
    assert plan.base.settings.lossless and plan.base.settings.effective_link_rate() == 20
    on_bmv2 = dataclasses.replace(lossless, target="bmv2")
    with pytest.raises(RunInputError, match="bmv2 has no PFC"):
        plan_sweep([configuration], on_bmv2, need_root=False)


def test_a_lossless_sweep_is_checked_at_its_own_loads_only():
    """The sweep plans each configuration with a run plan whose probe schedule is never sent: a
    lossless sweep (its plan carries the link rate for PFC) is judged by its loads, not by that
    schedule (3DT 4x4x4: the schedule alone asks for ~128 hosts x 100 probes/s x 6.5 cards)."""
    configuration = Configuration("A", build_topology("ndt", dims="4x4x4"), "dort", "uniform")
    gentle = SweepSettings(link_rate_pps=1, loads=(0.1,), lossless=True)
    (plan,) = plan_sweep([configuration], gentle, need_root=False)
    assert plan.loads == (0.1,)


def test_cards_per_packet_of_the_model_paths():
    configuration = Configuration("ring", build_topology("torus", dims="8"), "dor", "uniform")
    (plan,) = plan_sweep(
        [configuration], SweepSettings(link_rate_pps=10, loads=(0.1,), cpu_capacity=1e6), need_root=False
    )
    src, dst = np.array([0, 0, 0]), np.array([1, 4, 7])
    # hops on an 8-ring: 1, 4 (tie goes +), 1; cards = hops + 1
    assert mean_cards_per_packet(plan.base.all_pairs, src, dst) == pytest.approx((2 + 5 + 2) / 3)


def test_cpu_verdict_after_a_run():
    quiet = verdict_after(
        late_sends=0, sends=1000, process_cpu_s={"p0": 0.1}, elapsed_s=1.0, card_visits=2000
    )
    assert not quiet["cpu_bound"] and quiet["measured_visits_per_core_s"] == pytest.approx(20000)
    busy = verdict_after(
        late_sends=50, sends=1000, process_cpu_s={"p0": CARD_BUSY_LIMIT + 0.1}, elapsed_s=1.0, card_visits=10
    )
    assert busy["cpu_bound"] and "50 of 1000 sends late" in busy["warning"] and "p0" in busy["warning"]


def _result(probe_id, src, dst, send_us, receive_us=None, hops=()):
    arrival = None
    if receive_us is not None:
        arrival = Arrival(probe_id, dst, src, dst, 0, send_us, receive_us, tuple(hops))
    return ProbeResult(probe_id, src, dst, send_us, EQUAL if arrival else LOST, None, arrival)


def test_point_figures_in_link_units():
    # link rate 1000 pps (1 ms link time), 2 PEs, 1 s run with 0.5 s warm-up
    spec = WorkloadSpec(
        load=0.5, duration_s=1.0, link_rate_pps=1000, sizes=MessageSizes.parse("1"), warmup_s=0.5
    )
    at = np.array([0.1, 0.6, 0.7, 0.8])
    schedule = Schedule(np.array([0, 0, 1, 1]), np.array([1, 1, 0, 0]), at)
    workload = Workload(spec, schedule, np.arange(4), at.copy(), np.ones(4, dtype=np.int64))
    start = 10_000_000
    hop = TraceHop(1, 1, 2, vc=1, prio=1, qdepth=3, timestamp=0)
    results = [
        _result(1, 0, 1, start + 100_000, start + 102_000, [hop]),  # warm-up: not measured
        _result(2, 0, 1, start + 600_000, start + 604_000, [hop]),  # 4 ms = 4 packet times
        _result(3, 1, 0, start + 700_000, start + 702_000, [hop]),  # 2 ms
        _result(4, 1, 0, start + 800_000),  # lost
    ]
    figures = point_metrics(results, workload, num_pes=2, start_us=start)
    per_pe_time = 0.5 * 2 * 1000  # window x PEs x link rate
    assert figures["offered"] == pytest.approx(3 / per_pe_time)
    assert figures["accepted"] == pytest.approx(2 / per_pe_time)
    assert figures["latency_packet_times"]["mean"] == pytest.approx(3.0)
    assert figures["latency_us"]["max"] == pytest.approx(4000)
    assert figures["lost_measured"] == 1
    assert figures["queue_depth_by_vc"] == {"1": {"mean": 3.0, "max": 3}}


def _point(offered, accepted):
    return {
        "offered": offered,
        "accepted": accepted,
        "latency_packet_times": {"mean": 2.0, "p99": 5.0},
        "latency_us": {"mean": 20.0, "p99": 50.0},
        "late_sends": 0,
        "max_lateness_ms": 1.5,
        "lost": 0,
        "queue_drops": 0,
        "cpu": {"cpu_bound": False},
    }


def test_saturation_and_files(tmp_path):
    points = [_point(0.1, 0.1), _point(0.2, 0.199), _point(0.3, 0.24), _point(0.4, 0.25)]
    assert saturation(points) == (0.25, 0.3)
    assert saturation([]) == (None, None)
    result = {
        "configurations": [
            {"label": "a", "throughput_bound": 0.26, "saturation_throughput": 0.25, "points": points},
            {"label": "b", "throughput_bound": None, "saturation_throughput": 0.1, "points": points[:1]},
        ]
    }
    paths = write_sweep(result, tmp_path)
    assert [p.name for p in paths] == ["sweep.json", "sweep.csv", "latency.png", "throughput.png"]
    assert json.loads(paths[0].read_text()) == result
    rows = list(csv.DictReader(paths[1].open()))
    assert len(rows) == 5 and tuple(rows[0]) == CSV_COLUMNS and rows[2]["accepted"] == "0.24"
    assert all(p.stat().st_size > 0 for p in paths)


def test_compare_configurations_from_the_command_line():
    from emulation.cli import build_parser

    args = build_parser().parse_args(
        [
            "sweep",
            "ndt",
            "--dims",
            "2x4x2",
            "--link-rate",
            "100",
            "--compare",
            "torus --dims 8x4 --routing dor",
        ]
    )
    first, second = configurations_from_args(args)
    assert first.label.startswith("ndt") and len(first.topology.hosts) == 32
    assert second.label == "torus --dims 8x4 --routing dor" and second.routing == "dor"
    bad = build_parser().parse_args(
        ["sweep", "torus", "--dims", "4", "--link-rate", "1", "--compare", "ring"]
    )
    with pytest.raises(RunInputError, match="--compare"):
        configurations_from_args(bad)


def test_adaptive_configurations_one_per_selection_function():
    from controller.routing.selection import SELECTIONS
    from emulation.cli import build_parser

    def parse(*words):
        return configurations_from_args(build_parser().parse_args(["sweep", *words, "--link-rate", "100"]))

    dort, *adaptive = parse(
        "ndt", "--dims", "2x2x2", "--routing", "dort", "--label", "DORT",
        "--compare", "ndt --dims 2x2x2 --routing adaptive --selection all --label A",
    )  # fmt: skip
    assert dort.label == "DORT" and dort.selection is None
    assert [c.selection for c in adaptive] == list(SELECTIONS)
    assert [c.label for c in adaptive] == [f"A {name}" for name in SELECTIONS]
    assert {c.routing for c in adaptive} == {"adaptive"}
    (one,) = parse("ndt", "--dims", "2x2x2", "--routing", "adaptive", "--selection", "no-internal")
    assert one.selection == "no-internal" and "--selection no-internal" in one.label
    two = parse("ndt", "--dims", "2x2x2", "--routing", "adaptive", "--selection", "round-robin,3-priority")
    assert [c.selection for c in two] == ["round-robin", "3-priority"]
    with pytest.raises(RunInputError, match="--routing adaptive"):
        parse("ndt", "--dims", "2x2x2", "--routing", "dort", "--selection", "3-priority")
    with pytest.raises(RunInputError, match="--selection takes"):
        parse("ndt", "--dims", "2x2x2", "--routing", "adaptive", "--selection", "random")
    plans = plan_sweep(
        two, SweepSettings(link_rate_pps=100.0, loads=(0.1,), cpu_capacity=1e6), need_root=False
    )
    assert [plan.base.routing_name for plan in plans] == [
        "adaptive round-robin (escape dort)",
        "adaptive 3-priority (escape dort)",
    ]


def test_run_with_a_link_rate_checks_host_links_and_cpu():
    from emulation.run import plan_run
    from emulation.run_settings import RunSettings

    topology = build_topology("torus", dims="4")

    def settings(**values):
        return RunSettings(routing="dor", traffic="uniform", target="embedded", packets=10, **values)

    with pytest.raises(RunInputError, match="more than the host link carries"):
        plan_run(topology, settings(rate=200, link_rate=100), need_root=False)
    with pytest.raises(RunInputError, match="does not fit this machine's CPU"):
        plan_run(topology, settings(rate=1e8, link_rate=1e8), need_root=False)
    plan = plan_run(topology, settings(rate=10, link_rate=100), need_root=False)
    assert "link rate 100 packets/s" in plan.memory_summary


class _FakeCard:
    @property
    def switch_pid(self):
        import os

        return os.getpid()


class _FakeNetwork:
    """Stands in for a running network: records link rates; cards are this process."""

    def __init__(self, topology, **_options):
        self.topology = topology
        self.cards = {name: _FakeCard() for name in topology.cards}
        self.rates = []

    def set_link_rates(self, rate):
        self.rates.append(rate)

    def switch_processes(self):
        return {name: card.switch_pid for name, card in self.cards.items()}

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return None


def test_run_sweep_measures_every_point_of_every_configuration(monkeypatch, tmp_path):
    """Orchestration without a network: every packet arrives one link time after it is sent,
    up to a capacity of `cap` packets per PE per link time (the rest lost)."""
    import types

    import emulation.sweep as sweep

    cap, link_rate = 0.3, 200.0

    def fake_run(plan, network, show_bars=False):
        schedule, start = plan.schedule, 5_000_000
        results, delivered = [], 0
        sources = np.unique(schedule.src).size
        for i in range(len(schedule)):
            send = start + int(schedule.at[i] * 1e6)
            arrives = delivered + 1 <= cap * link_rate * sources * schedule.at[i] + sources
            delivered += arrives
            receive = send + int(1e6 / link_rate) if arrives else None
            results.append(
                _result(schedule.first_id + i, int(schedule.src[i]), int(schedule.dst[i]), send, receive)
            )
        lost = sum(r.arrival is None for r in results)
        return types.SimpleNamespace(
            results=results,
            injection={
                "late_probes": 0,
                "probes_sent": len(results),
                "max_lateness_s": 0.0015,
                "sender": "own process, SCHED_FIFO 10",
            },
            accounting=types.SimpleNamespace(lost=lost, queue_drops={"c0": lost}),
            lossless=None,
            deadlock=None,
            interrupted=None,
        )

    monkeypatch.setattr(sweep, "run_on_network", fake_run)
    configurations = [
        Configuration("ring", build_topology("torus", dims="4"), "dor", "uniform"),
        Configuration("ring 8", build_topology("torus", dims="8"), "dor", "uniform"),
    ]
    settings = SweepSettings(
        link_rate_pps=link_rate, loads=(0.1, 0.2, 0.6), duration_s=2.0, warmup_s=0.5, cpu_capacity=1e6
    )
    plans = plan_sweep(configurations, settings, need_root=False)
    checkpoints = []
    result = sweep.run_sweep(
        plans,
        settings,
        network_factory=_FakeNetwork,
        checkpoint=lambda r: checkpoints.append(len(r["configurations"])),
    )
    assert checkpoints == [1, 2]
    assert [c["label"] for c in result["configurations"]] == ["ring", "ring 8"]
    for configuration in result["configurations"]:
        points = configuration["points"]
        assert len(points) == 3
        assert points[0]["accepted"] == pytest.approx(points[0]["offered"], rel=0.1)
        assert points[-1]["accepted"] == pytest.approx(cap, rel=0.1)  # what the fake network carries
        assert configuration["saturation_throughput"] == pytest.approx(cap, rel=0.1)
        assert points[0]["latency_packet_times"]["mean"] == pytest.approx(1.0, abs=0.01)
        assert points[-1]["lost"] > 0 and points[-1]["cpu"]["cpu_bound"] in (False, True)
    assert result["configurations"][1]["throughput_bound"] == pytest.approx(0.7)
    write_sweep(result, tmp_path, pictures=False)
    assert (
        json.loads((tmp_path / "sweep.json").read_text())["configurations"][0]["points"][2]["late_sends"] == 0
    )


def test_an_interrupted_point_stops_the_sweep(monkeypatch):
    """Ctrl-C or SIGTERM ends the injection of the point it falls in; the sweep must not go on to
    the next point (a background sweep could not be stopped otherwise)."""
    import types

    import emulation.sweep as sweep

    points_run = []

    def interrupted_run(plan, network, show_bars=False):
        points_run.append(plan.rate)
        return types.SimpleNamespace(interrupted="interrupted (signal)")

    monkeypatch.setattr(sweep, "run_on_network", interrupted_run)
    configurations = [Configuration("ring", build_topology("torus", dims="4"), "dor", "uniform")]
    settings = SweepSettings(link_rate_pps=100.0, loads=(0.1, 0.2, 0.3), duration_s=1.0, cpu_capacity=1e6)
    plans = plan_sweep(configurations, settings, need_root=False)
    with pytest.raises(KeyboardInterrupt):
        sweep.run_sweep(plans, settings, network_factory=_FakeNetwork)
    assert len(points_run) == 1
