"""scripts/bench_traffic.py's reading of the switches' CPU over the traffic's window (first send to last
arrival), from CPU totals sampled on the probes' clock."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "bench_traffic.py"


def load_script():
    spec = importlib.util.spec_from_file_location("bench_traffic_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    saved = list(sys.path)
    try:
        yield load_script()
    finally:
        sys.path[:] = saved


def test_cpu_between_two_instants_is_interpolated_linearly(bench) -> None:
    """Samples every 100 ms of a process idle until t0 + 1 s, then using 0.5 CPU-s per second: the
    window [t0 + 0.25 s, t0 + 1.75 s] holds 0.75 s of that use, 0.375 CPU-s."""
    sampler = bench.CpuSampler({})
    t0 = 1_000_000_000
    sampler.samples = [
        (t0 + step * 100_000, {"p": 2.0 + max(0.0, (step * 0.1 - 1.0) * 0.5)}) for step in range(21)
    ]
    assert sampler.between("p", t0 + 250_000, t0 + 1_750_000) == pytest.approx(0.375)
    assert sampler.between("p", t0 + 1_000_000, t0 + 2_000_000) == pytest.approx(0.5)
    assert sampler.between("p", t0, t0 + 1_000_000) == pytest.approx(0.0)


def test_sampling_reads_this_process_cpu(bench) -> None:
    """A sampler of this process and of the machine sees the CPU a busy loop spends between its
    first and last sample."""
    counters = {
        "me": lambda: sum(bench.process_cpu_s({os.getpid()}).values()),
        "machine": bench.machine_busy_s,
    }
    with bench.CpuSampler(counters, period=0.02) as sampler:
        before = os.times()
        while os.times().user + os.times().system - before.user - before.system < 0.3:
            pass
    first, last = sampler.samples[0][0], sampler.samples[-1][0]
    spent = sampler.between("me", first, last)
    assert 0.2 <= spent <= 0.6  # clock ticks are 10 ms; the loop spent 0.3 s and a little around it
    assert sampler.between("machine", first, last) >= spent - 0.05  # the machine's includes this process


def test_window_cpu_is_split_into_parts_that_add_up_to_the_machine(bench) -> None:
    """Over a 2 s window the machine spent 3.6 CPU-s: switches 1.2 user + 0.6 system, this process 0.4,
    its children 0.8, interrupts 0.2, so the rest 0.4. 4,000 probes made 20,000 visits: 20,000 / 1.8
    CPU-s of the switches; 20k probes/s would take 20k * 3.6 / 4,000 = 18 cores, 12 without the user
    part. Where the processes' exact times add up to more than /proc/stat's sampled total, the rest is
    0 and the total is their sum."""
    sampler = bench.CpuSampler({})
    t0 = 5_000_000
    rates = {
        "switch_user": 0.6,
        "switch_system": 0.3,
        "receiver": 0.2,
        "sender": 0.4,
        "interrupts": 0.1,
        "machine": 1.8,
    }
    sampler.samples = [
        (t0 + step * 500_000, {name: 10.0 + rate * step * 0.5 for name, rate in rates.items()})
        for step in range(6)
    ]
    sampler.counters = dict.fromkeys(rates)
    window = bench.cpu_of_window(sampler, t0 + 500_000, t0 + 2_500_000, 4000, 20000, reference=22_222)
    assert window["cores_per_s"] == {
        "switch_user": 0.6,
        "switch_system": 0.3,
        "receiver": 0.2,
        "sender": 0.4,
        "interrupts": 0.1,
        "rest": 0.2,
    }
    assert window["visits_per_cpu_s"] == round(20000 / 1.8)
    assert window["visits_per_cpu_s_vs_alone"] == 0.5
    assert window["cores_for_goal"] == pytest.approx(18.0)
    assert window["floor_cores_for_goal"] == pytest.approx(12.0)
    assert bench.cpu_of_window(sampler, t0, t0, 0, 0, reference=1)["cores_for_goal"] is None
    for _, values in sampler.samples:
        values["machine"] = 10.0  # /proc/stat saw nothing: the parts measured are the total
    window = bench.cpu_of_window(sampler, t0 + 500_000, t0 + 2_500_000, 4000, 20000, reference=22_222)
    assert window["cores_per_s"]["rest"] == 0.0
    assert window["cores_for_goal"] == pytest.approx(20_000 * 3.2 / 4000)


def test_children_cpu_counts_live_and_reaped_children_but_the_excluded(bench) -> None:
    """A child that spins 0.3 s counts while it runs and after it is reaped; an excluded one never."""
    me = os.getpid()
    spin = [
        sys.executable,
        "-c",
        "import os\nwhile sum(os.times()[:2]) < 0.3: pass\nimport time; time.sleep(5)",
    ]
    before = bench.children_cpu_s(me, set())
    child = subprocess.Popen(spin)
    excluded = subprocess.Popen(spin)
    try:
        deadline = time.monotonic() + 10
        while bench.children_cpu_s(me, {excluded.pid}) - before < 0.25 and time.monotonic() < deadline:
            time.sleep(0.05)
        live = bench.children_cpu_s(me, {excluded.pid}) - before
        assert 0.25 <= live < 0.6
        child.kill()
        child.wait()
        assert bench.children_cpu_s(me, {excluded.pid}) - before == pytest.approx(live, abs=0.05)
    finally:
        for process in (child, excluded):
            process.kill()
            process.wait()
