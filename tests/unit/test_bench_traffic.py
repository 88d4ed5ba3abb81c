"""scripts/bench_traffic.py's reading of the switches' CPU over the traffic's window (first send to last
arrival), from CPU totals sampled on the probes' clock."""

from __future__ import annotations

import importlib.util
import os
import sys
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
    interrupts 0.2, so the sender and the rest 1.2. 4,000 probes made 20,000 visits: 20,000 / 1.8 CPU-s
    of the switches; 20k probes/s would take 20k * 3.6 / 4,000 = 18 cores, 12 without the user part."""
    sampler = bench.CpuSampler({})
    t0 = 5_000_000
    rates = {"switch_user": 0.6, "switch_system": 0.3, "receiver": 0.2, "interrupts": 0.1, "machine": 1.8}
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
        "sender_and_rest": 0.6,
        "interrupts": 0.1,
    }
    assert window["visits_per_cpu_s"] == round(20000 / 1.8)
    assert window["visits_per_cpu_s_vs_alone"] == 0.5
    assert window["cores_for_goal"] == pytest.approx(18.0)
    assert window["floor_cores_for_goal"] == pytest.approx(12.0)
    assert bench.cpu_of_window(sampler, t0, t0, 0, 0, reference=1)["cores_for_goal"] is None
