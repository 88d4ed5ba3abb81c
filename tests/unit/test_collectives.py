"""Collectives' steps deliver what the operation promises, checked by simulating who holds which data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from emulation.collectives import CollectiveError, collective_steps, step_schedule


def _senders_hold(steps, holds):
    """Apply the steps in order: a sender must hold data; the receiver gets the sender's data."""
    for step in steps:
        before = {pe: set(data) for pe, data in holds.items()}
        for src, dst, _ in step:
            assert before[src], f"PE {src} sends before it has anything"
            holds[dst] |= before[src]
    return holds


@pytest.mark.parametrize("num_pes", [2, 5, 8, 13])
def test_binomial_broadcast_reaches_every_pe_once_in_log_steps(num_pes):
    steps = collective_steps("broadcast", num_pes)
    assert len(steps) == math.ceil(math.log2(num_pes))
    received = [dst for step in steps for _, dst, _ in step]
    assert sorted(received) == list(range(1, num_pes))
    holds = _senders_hold(steps, {pe: ({"root"} if pe == 0 else set()) for pe in range(num_pes)})
    assert all(holds[pe] == {"root"} for pe in range(num_pes))


@pytest.mark.parametrize("num_pes", [2, 6, 8])
def test_reduce_brings_every_contribution_to_pe_0(num_pes):
    steps = collective_steps("reduce", num_pes)
    holds = _senders_hold(steps, {pe: {pe} for pe in range(num_pes)})
    assert holds[0] == set(range(num_pes))
    assert sum(len(step) for step in steps) == num_pes - 1


@pytest.mark.parametrize("num_pes", [2, 4, 16])
def test_allgather_leaves_every_block_everywhere(num_pes):
    steps = collective_steps("allgather", num_pes, block=3)
    holds = _senders_hold(steps, {pe: {pe} for pe in range(num_pes)})
    assert all(holds[pe] == set(range(num_pes)) for pe in range(num_pes))
    # step k carries the 2^k blocks a PE holds
    assert [step[0][2] for step in steps] == [3 << k for k in range(len(steps))]


def test_all_to_all_is_every_ordered_pair_once():
    (step,) = collective_steps("all-to-all", 6, block=2)
    assert sorted((s, d) for s, d, _ in step) == [(s, d) for s in range(6) for d in range(6) if s != d]
    schedule = step_schedule(step, link_rate_pps=100.0, first_id=7)
    assert len(schedule) == 6 * 5 * 2 and schedule.first_id == 7
    for src in range(6):
        at = schedule.at[schedule.src == src]
        assert np.allclose(np.diff(np.sort(at)), 0.01)  # one packet per link time per host
        first = schedule.dst[schedule.src == src][0]
        assert first == (src + 1) % 6  # hosts start with different destinations


@pytest.mark.parametrize(
    ("name", "num_pes", "block"),
    [("allgather", 6, 1), ("gossip", 4, 1), ("broadcast", 1, 1), ("reduce", 4, 0)],
)
def test_impossible_collectives_are_refused(name, num_pes, block):
    with pytest.raises(CollectiveError):
        collective_steps(name, num_pes, block)


class _LinkEngine:
    """Stands in for the traffic engine: each host's link carries one packet per link time, and every
    packet arrives one link time after it left (no contention: the network itself is ideal)."""

    LINK_RATE = 1000.0

    def __init__(self, _endpoints, _pauses=None):
        self.received = []

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return None

    def inject(self, schedule, size):
        from emulation.packets import now_us
        from emulation.traffic import FrameFactory, Received, SendRecord, stamp

        factory, started = FrameFactory(size), now_us()
        record = SendRecord(np.zeros(len(schedule), dtype=np.int64), started_us=started)
        # each step: one send late, by its packets per PE in ms; the result sums them and keeps the worst
        record.late_probes, record.max_late_s = 1, len(schedule) / 8 / 1000
        for i in range(len(schedule)):
            frame = factory.frame(int(schedule.src[i]), int(schedule.dst[i]))
            send = started + int(schedule.at[i] * 1e6)
            stamp(frame, schedule.probe_id(i), send)
            record.send_us[i] = send
            self.received.append(
                Received(int(schedule.dst[i]), bytes(frame), send + int(1e6 / self.LINK_RATE))
            )
        return record

    def wait_for(self, *_args, **_kwargs):
        return 0.0

    def take_received(self):
        taken, self.received = self.received, []
        return taken


def test_run_collective_times_each_step_by_its_last_packet(monkeypatch):
    import types

    import emulation.collectives as collectives

    monkeypatch.setattr(collectives, "TrafficEngine", _LinkEngine)
    monkeypatch.setattr(collectives, "endpoints_of_network", lambda network: [])
    monkeypatch.setattr(collectives.time, "sleep", lambda seconds: None)
    network = types.SimpleNamespace(topology=types.SimpleNamespace(hosts=list(range(8))))
    link_time = 1 / _LinkEngine.LINK_RATE
    result = collectives.run_collective(network, "allgather", link_rate_pps=_LinkEngine.LINK_RATE, block=2)
    # step k: each PE sends 2 * 2^k packets, one per link time; the last arrives one link time later
    expected = [(2 * 2**k - 1) * link_time + link_time for k in range(3)]
    assert result["missing_packets"] == 0
    assert result["step_times_s"] == pytest.approx(expected, abs=2e-6)
    assert result["completion_time_packet_times"] == pytest.approx(sum(2 * 2**k for k in range(3)), abs=0.1)
    assert result["latency_mean_packet_times"] == pytest.approx(1.0, abs=0.01)
    assert result["late_sends"] == 3 and result["max_lateness_ms"] == pytest.approx(2 * 2**2)
    assert result["sender"] == "in the run process"
