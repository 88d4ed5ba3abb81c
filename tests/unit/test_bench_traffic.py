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
