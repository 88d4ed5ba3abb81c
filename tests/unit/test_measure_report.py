"""Plan checks of a run (bad input refused before anything starts) and its report, on hand-built outcomes."""

from __future__ import annotations

import csv
import json

import pytest

from controller.analysis.deadlock import check_deadlock
from controller.routing import walk
from emulation.measure import (
    Arrival,
    ModelPaths,
    SentProbe,
    account,
    check_channels,
    crossings,
    judge,
    model_channels,
)
from emulation.packets import TraceHop
from emulation.report import outcome_ok, report_data, summary_lines, write_report
from emulation.run import RunInputError, RunOutcome, RunSettings, performance_of, plan_run
from topologies.build import build_topology


def plan_for(topology, **settings):
    settings.setdefault("target", "embedded")
    return plan_run(topology, RunSettings(**settings), need_root=False)


@pytest.fixture(scope="module")
def fattree():
    return build_topology("fattree", k=4, n=2, twin=True)


def test_defaults_follow_the_pattern(fattree) -> None:
    plan = plan_for(fattree)
    assert plan.tables.algorithm == "destro" and plan.traffic.name == "all-to-all"
    assert plan.packets_per_host == 15 and len(plan.schedule) == 16 * 15
    assert plan.acyclic and plan.longest_path_cards == 4
    timed = plan_for(fattree, traffic="uniform", duration=2.0, rate=30)
    assert timed.packets_per_host == 60


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"traffic": "zigzag"}, "traffic pattern must be one of"),
        ({"traffic": "tornado"}, "needs torus coordinates"),
        ({"packets": 100, "duration": 1.0, "rate": 50}, "cannot be sent in --duration 1 s"),
        ({"rate": 0}, "--rate must be a positive"),
        ({"packets": 0}, "--packets must be at least 1"),
        ({"size": 20}, "--size must be"),
        ({"size": 5000}, "--size must be"),
        ({"routing": "dort"}, "does not route a 'twin-fattree'"),
        ({"kill": ("c99", 1.0)}, "no card 'c99'"),
        ({"target": "bmv2"}, "target bmv2 cannot run here"),
        ({"target": "bmv2", "lossless": True}, "--lossless: bmv2 has no PFC"),
        ({"lossless": True, "link_rate": 0}, "--link-rate must be a positive"),
        ({"lossless": True, "deadlock_after": -1}, "--deadlock-after must be a positive"),
    ],
)
def test_bad_input_is_refused_before_anything_starts(fattree, settings, message) -> None:
    if settings.get("target") == "bmv2" and not settings.get("lossless"):
        from emulation.switches import BMv2Switch

        if BMv2Switch.missing() is None:
            pytest.skip("bmv2 is installed here")
    with pytest.raises(RunInputError, match=message.replace("(", r"\(")):
        plan_for(fattree, **settings)


def test_a_network_too_large_for_this_machine_is_refused() -> None:
    huge = build_topology("ndt", dims="16x16x16")  # 8192 cards: far beyond any laptop's memory
    with pytest.raises(RunInputError, match="choose a smaller topology"):
        plan_for(huge, check_capacity=True)


def test_more_than_eight_queues_per_port_is_refused() -> None:
    # DORT with all four dimensions split between the cards needs 9 queues on a port
    ndt = build_topology("ndt", dims="3x3x3x3", config="d0+d1+d2+d3+|d0-d1-d2-d3-")
    with pytest.raises(RunInputError, match="needs 9 queues per port"):
        plan_for(ndt, routing="dort", check_capacity=False)


def test_a_pattern_outside_its_domain_is_refused() -> None:
    with pytest.raises(RunInputError, match="even number of bits"):
        plan_for(build_topology("ndt", dims="2x4x2"), traffic="transpose", check_capacity=False)


def faithful_outcome(plan, out_dir, lose=(), send_us=None, latency_us=None) -> RunOutcome:
    """Every probe but `lose` received along the model's path; probe i sent at send_us(i) (default
    1000 + i us) and received latency_us(i) later (default 200 + i us)."""
    send_us = send_us or (lambda i: 1_000 + i)
    latency_us = latency_us or (lambda i: 200 + i)
    tables = plan.tables
    sent, arrivals = [], []
    for i in range(len(plan.schedule)):
        src, dst = int(plan.schedule.src[i]), int(plan.schedule.dst[i])
        sent.append(SentProbe(plan.schedule.probe_id(i), src, dst, send_us(i)))
        if plan.schedule.probe_id(i) in lose:
            continue
        hops = tuple(
            TraceHop(h.card_id, h.ingress_port, h.egress_port, h.vc, h.queue, i % 3, 0)
            for h in walk(tables, src, dst).hops
        )
        arrivals.append(
            Arrival(
                plan.schedule.probe_id(i),
                dst,
                src,
                dst,
                tables.class_of_source(src),
                send_us(i),
                send_us(i) + latency_us(i),
                hops,
            )
        )
    results = judge(sent, arrivals, ModelPaths(tables))
    return RunOutcome(
        plan=plan,
        target="embedded",
        out_dir=out_dir,
        results=results,
        accounting=account(results, tables, {}, {}, [], "embedded"),
        channels=check_channels(
            results, tables, model_channels(tables), check_deadlock(plan.all_pairs).deadlock_free
        ),
        crossings=crossings(results, tables, plan.all_pairs),
        timings={"bring_up_s": 1.0, "inject_s": 0.5},
        injection={
            "probes_sent": len(sent),
            "offered_pps_total": 100.0,
            "late_probes": 0,
            "max_lateness_s": 0.0012,
            "sender": "own process, SCHED_FIFO 10",
        },
        dead_cards=[],
        stray_probes=0,
        network_timings={},
        entries_installed=len(tables),
        performance=performance_of(plan, results),
    )


def test_report_files_hold_every_probe(tmp_path) -> None:
    ndt = build_topology("ndt", dims="2x4x2")
    plan = plan_for(ndt, routing="ts-dor", check_capacity=False)
    outcome = faithful_outcome(plan, tmp_path, lose={3, 4})
    files = write_report(outcome)
    data = json.loads(files["json"].read_text())
    assert data["verdicts"]["equal"] == len(plan.schedule) - 2 and data["verdicts"]["lost"] == 2
    assert data["accounting"]["sent"] == len(plan.schedule) and data["accounting"]["all_accounted"]
    assert data["accounting"]["loss_causes"] == {"unexplained": 2}
    assert data["internal_link_crossings"]["equal"] and data["channels"]["ok"]
    assert set(data["latency_us"]["by_routing_class"]) == {"class 0", "class 1"}
    assert data["latency_us"]["unit"].startswith("us") and data["path_length"]["unit"]
    assert not data["ok"] and not outcome_ok(outcome)
    rows = list(csv.DictReader(files["csv"].open()))
    assert len(rows) == len(plan.schedule)
    assert {row["verdict"] for row in rows} == {"equal", "lost"}
    for name in ("link_loads", "path_lengths", "latency"):
        assert files[name].stat().st_size > 10_000
    text = "\n".join(summary_lines(outcome, files))
    assert "lost 2" in text and str(files["json"]) in text
    assert "late 0 (at most 1.2 ms; sender own process, SCHED_FIFO 10)" in text


def test_a_faithful_run_is_ok(fattree, tmp_path) -> None:
    plan = plan_for(fattree, check_capacity=False)
    outcome = faithful_outcome(plan, tmp_path)
    assert outcome_ok(outcome)
    data = report_data(outcome)
    assert data["ok"] and data["verdicts"]["equal"] == 240
    assert data["internal_link_crossings"]["measured_internal_crossings"] == int(
        plan.all_pairs.internal().sum()
    )
