"""``twinnet run --load``: the sweep's workload options on a run, refused as they should be, the
schedule they make, and the report's figures in link units (no network: plans and hand-built outcomes).

Statistical checks use fixed seeds with bounds of 4.5 standard deviations or a chi-square test at
significance 1e-4, expected values derived from the options, not from a run of the code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from test_measure_report import faithful_outcome

from emulation import cli
from emulation.report import report_data, summary_lines
from emulation.run import RunInputError, RunOutcome, plan_run
from emulation.run_cli import settings_from_args
from emulation.sweep_cli import settings_from_args as sweep_settings_from_args
from topologies.build import topology_from_args

SIGMAS = 4.5
ALPHA = 1e-4
RING = ["torus", "--dims", "8", "--routing", "dor", "--target", "embedded"]


def parse(*words: str):
    return cli.build_parser().parse_args(["run", *RING, *words])


def plan_of(*words: str):
    args = parse(*words)
    return plan_run(topology_from_args(args), settings_from_args(args), need_root=False)


def test_the_sweeps_options_reach_the_run_and_make_its_workload() -> None:
    plan = plan_of(
        "--link-rate", "200", "--load", "0.3", "--duration", "2", "--message-sizes", "1:0.4,4:0.6",
        "--process", "poisson", "--warmup", "0.5", "--traffic", "zipf", "--zipf-exponent", "1.5",
        "--seed", "4",
    )  # fmt: skip
    spec = plan.workload.spec
    assert (spec.load, spec.link_rate_pps, spec.duration_s, spec.warmup_s) == (0.3, 200.0, 2.0, 0.5)
    assert spec.sizes.sizes == (1, 4) and spec.sizes.probabilities == (0.4, 0.6)
    assert (spec.process, spec.destinations, spec.zipf_exponent, spec.seed) == ("poisson", "zipf", 1.5, 4)
    assert plan.schedule is plan.workload.schedule and plan.traffic.name == "zipf"
    assert plan.rate == pytest.approx(0.3 * 200)  # packets/s offered per host
    # the sweep reads the same options (one definition), with the same defaults
    sweep = sweep_settings_from_args(
        cli.build_parser().parse_args(["sweep", *RING, "--link-rate", "200", "--process", "poisson"])
    )
    assert (
        sweep.process == "poisson"
        and sweep.warmup_s
        == plan_of("--link-rate", "200", "--load", "0.3", "--duration", "2").workload.spec.warmup_s
    )


def test_a_run_without_load_keeps_its_probe_schedule() -> None:
    plan = plan_of("--packets", "5")
    assert plan.workload is None and plan.traffic.name == "all-to-all" and len(plan.schedule) == 8 * 5
    assert plan_of("--link-rate", "200", "--load", "0.3", "--duration", "2").traffic.name == "uniform"


@pytest.mark.parametrize(
    ("words", "message"),
    [
        (["--load", "0.3", "--duration", "2"], "fraction of the link rate: give --link-rate"),
        (["--link-rate", "200", "--load", "0.3", "--duration", "2", "--rate", "50"], "--rate sets a probe"),
        (["--link-rate", "200", "--load", "0.3", "--duration", "2", "--packets", "9"], "--packets sets a"),
        (["--link-rate", "200", "--load", "0.3"], "needs --duration"),
        (["--warmup", "1"], "--warmup: shapes a workload at an offered load; give --load"),
        (["--message-sizes", "2:0.5,8:0.5", "--process", "poisson"], "--process, --message-sizes: shape"),
        (["--traffic", "zipf"], "--traffic zipf: shapes a workload"),
        (["--link-rate", "200", "--load", "0", "--duration", "2"], "positive fraction of the link rate"),
        (
            ["--link-rate", "200", "--load", "0.3", "--duration", "2", "--message-sizes", "2:0.5,8:0.3"],
            "probabilities must sum to 1",
        ),
        (
            ["--link-rate", "200", "--load", "0.3", "--duration", "2", "--message-sizes", "two"],
            "SIZE:PROBABILITY",
        ),
        (["--link-rate", "200", "--load", "0.3", "--duration", "2", "--warmup", "2"], "warm-up must be"),
        (["--link-rate", "200", "--load", "5", "--duration", "2"], "use --process poisson"),
        (
            ["--link-rate", "1e7", "--load", "0.5", "--duration", "0.01", "--warmup", "0"],
            "does not fit this machine's CPU",
        ),
        (["--link-rate", "1e6", "--load", "0.9", "--duration", "1000"], "a run sends at most"),
    ],
)
def test_bad_load_options_are_refused_before_anything_starts(words, message) -> None:
    with pytest.raises(RunInputError, match=message.replace("(", r"\(")):
        plan_of(*words)


def test_the_command_refuses_with_one_line_and_status_2(capsys, monkeypatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)  # past the root check, as under sudo: refused all the same
    status = cli.main(["run", *RING, "--load", "0.3", "--duration", "2", "--out", "/nonexistent/x"])
    error = capsys.readouterr().err
    assert status == 2 and error.count("\n") == 1 and "give --link-rate" in error


@pytest.mark.parametrize("process", ["bernoulli", "poisson"])
def test_a_load_run_schedules_the_asked_load_and_message_sizes(process) -> None:
    load, rate, seconds, pes = 0.4, 200.0, 5.0, 8
    sizes, probabilities = np.array([1, 4]), np.array([0.5, 0.5])
    plan = plan_of(
        "--link-rate", f"{rate:g}", "--load", f"{load:g}", "--duration", f"{seconds:g}",
        "--message-sizes", "1:0.5,4:0.5", "--process", process, "--seed", "7",
    )  # fmt: skip
    workload = plan.workload
    # packets: a compound count of messages (mean load x rate x duration / mean size per host) times
    # sizes; its variance is at most E[messages] x E[size^2] (Poisson; Bernoulli's is smaller)
    mean_size = float(sizes @ probabilities)
    messages = load * rate * seconds * pes / mean_size
    expected = load * rate * seconds * pes
    sigma = math.sqrt(messages * float(sizes**2 @ probabilities))
    assert abs(len(plan.schedule) - expected) < SIGMAS * sigma, (len(plan.schedule), expected, sigma)
    _, first = np.unique(workload.message, return_index=True)
    per_message = workload.message_size[first]
    observed = [np.count_nonzero(per_message == size) for size in sizes]
    assert sum(observed) == per_message.size
    assert stats.chisquare(observed, probabilities * per_message.size).pvalue > ALPHA
    # a message's packets all leave its host, and every host sends
    assert np.array_equal(np.unique(plan.schedule.src), np.arange(pes))
    assert not np.any(plan.schedule.src == plan.schedule.dst)


START_US = 50_000_000
FAST_US, SLOW_US = 2_000, 5_000  # latencies of even and odd schedule positions


def delivered_outcome(plan, tmp_path) -> RunOutcome:
    """Every scheduled packet sent on time and received after FAST_US or SLOW_US along the model's path."""
    return faithful_outcome(
        plan,
        tmp_path,
        send_us=lambda i: START_US + round(plan.schedule.at[i] * 1e6),
        latency_us=lambda i: FAST_US if i % 2 == 0 else SLOW_US,
    )


def test_a_probe_run_on_rated_links_reports_latency_in_packet_times(tmp_path) -> None:
    rate = 250.0  # packet time 4 ms
    plan = plan_of("--link-rate", f"{rate:g}", "--rate", "50", "--packets", "4")
    data = report_data(delivered_outcome(plan, tmp_path))
    times, micros = data["latency_packet_times"], data["latency_us"]
    count = len(plan.schedule)
    fast, slow = (count + 1) // 2, count // 2
    assert times["all"]["min"] == pytest.approx(FAST_US * rate / 1e6) == pytest.approx(0.5)
    assert times["all"]["max"] == pytest.approx(SLOW_US * rate / 1e6) == pytest.approx(1.25)
    mean = (fast * FAST_US + slow * SLOW_US) / count * rate / 1e6
    assert times["all"]["mean"] == pytest.approx(mean, abs=1e-3) and times["all"]["count"] == count
    assert set(times) == set(micros) and set(times["by_queue"]) == set(micros["by_queue"])
    assert "packet times" in times["unit"] and data["performance"] is None
    text = "\n".join(summary_lines(delivered_outcome(plan, tmp_path)))
    assert "in packet times median" in text and "max 1.25" in text and "\n  load " not in text


def test_a_run_without_a_link_rate_has_no_packet_times(tmp_path) -> None:
    data = report_data(delivered_outcome(plan_of("--packets", "2"), tmp_path))
    assert data["latency_packet_times"] is None and data["performance"] is None


def test_a_load_run_reports_the_sweeps_figures(tmp_path) -> None:
    load, rate, seconds, warmup, pes = 0.3, 100.0, 4.0, 1.0, 8
    plan = plan_of(
        "--link-rate", f"{rate:g}", "--load", f"{load:g}", "--duration", f"{seconds:g}",
        "--warmup", f"{warmup:g}", "--message-sizes", "2:0.7,8:0.3",
    )  # fmt: skip
    outcome = delivered_outcome(plan, tmp_path)
    figures = report_data(outcome)["performance"]
    window = seconds - warmup
    # offered: the schedule's packets due in the window per PE per link time; all of them arrive
    due = np.count_nonzero((plan.schedule.at >= warmup) & (plan.schedule.at < seconds))
    assert figures["offered"] == pytest.approx(due / (window * pes * rate), abs=1e-5)
    mean_size = 0.7 * 2 + 0.3 * 8
    sigma = math.sqrt(load * rate * window * pes / mean_size * (0.7 * 4 + 0.3 * 64)) / (window * pes * rate)
    assert abs(figures["offered"] - load) < SIGMAS * sigma
    # accepted counts by receive time: at each window edge at most one packet per host is in flight
    # (a host sends one per link time, each arrives within SLOW_US < one link time)
    assert SLOW_US / 1e6 < 1 / rate
    assert abs(figures["accepted"] - figures["offered"]) <= pes / (window * pes * rate) + 1e-5
    # latency of packets of messages created after the warm-up, in packet times and in us
    measured = np.flatnonzero(plan.workload.created >= warmup)
    latencies = np.where(measured % 2 == 0, FAST_US, SLOW_US)
    assert figures["latency_us"]["mean"] == pytest.approx(latencies.mean(), abs=1e-3)
    assert figures["latency_packet_times"]["mean"] == pytest.approx(latencies.mean() * rate / 1e6, abs=1e-3)
    assert figures["message_latency_packet_times"]["max"] >= SLOW_US * rate / 1e6 - 1e-6
    assert set(figures["queue_depth_by_vc"]) and figures["lost_measured"] == 0
    assert figures["workload"]["message_sizes"] == {2: 0.7, 8: 0.3} and figures["link_rate_pps"] == rate
    assert {"offered", "accepted", "latency_packet_times"} <= set(figures["units"])
    text = "\n".join(summary_lines(outcome))
    assert f"offered {figures['offered']:.3f}" in text and f"accepted {figures['accepted']:.3f}" in text
