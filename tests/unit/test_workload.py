"""Workloads: message sizes, Zipf destinations, offered load and host-link pacing as asked.

Statistical checks use fixed seeds and a chi-square test at significance 1e-4
(or a normal bound of 4.5 standard deviations), with the expected counts derived
from the distribution, not from a run of the code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from controller.analysis.traffic import make_traffic
from emulation.traffic import FrameFactory, probe_frame
from emulation.workload import (
    MessageSizes,
    WorkloadError,
    WorkloadSpec,
    make_workload,
    packet_times,
    zipf_probabilities,
)

ALPHA = 1e-4
SIGMAS = 4.5


def spec(**overrides) -> WorkloadSpec:
    values = {"load": 0.3, "duration_s": 2.0, "link_rate_pps": 2000.0, "seed": 1}
    values.update(overrides)
    return WorkloadSpec(**values)


def message_sizes(workload) -> np.ndarray:
    """One size per message (packets of a message share its id)."""
    _, first = np.unique(workload.message, return_index=True)
    return workload.message_size[first]


def test_thesis_sizes_are_70_percent_two_and_30_percent_eight():
    workload = make_workload(spec(load=0.5, duration_s=4.0), num_pes=16)
    sizes = message_sizes(workload)
    observed = [np.count_nonzero(sizes == 2), np.count_nonzero(sizes == 8)]
    assert sum(observed) == sizes.size
    expected = [0.7 * sizes.size, 0.3 * sizes.size]
    assert stats.chisquare(observed, expected).pvalue > ALPHA
    # every packet of a message goes to one destination
    for message in np.unique(workload.message)[:200]:
        assert np.unique(workload.schedule.dst[workload.message == message]).size == 1


def test_configured_sizes_follow_their_probabilities():
    sizes = MessageSizes.parse("1:0.2,4:0.5,16:0.3")
    sample = sizes.sample(np.random.default_rng(3), 20000)
    observed = [np.count_nonzero(sample == s) for s in sizes.sizes]
    assert stats.chisquare(observed, [p * sample.size for p in sizes.probabilities]).pvalue > ALPHA
    assert sizes.mean == pytest.approx(0.2 * 1 + 0.5 * 4 + 0.3 * 16)


@pytest.mark.parametrize("text", ["2:0.7,8:0.2", "0:1", "x", "2:-1,8:2"])
def test_bad_sizes_are_refused(text):
    with pytest.raises(WorkloadError):
        MessageSizes.parse(text)


def test_zipf_destinations_follow_one_over_rank():
    num_pes, exponent = 8, 1.2
    workload = make_workload(
        spec(
            destinations="zipf",
            zipf_exponent=exponent,
            sizes=MessageSizes.parse("1"),
            load=0.8,
            duration_s=5.0,
        ),
        num_pes=num_pes,
    )
    rank_of = np.random.default_rng(1).permutation(num_pes) + 1  # the ranking make_workload draws first
    for src in (0, 5):
        dst = workload.schedule.dst[workload.schedule.src == src]
        observed = np.bincount(dst, minlength=num_pes)
        assert observed[src] == 0
        weights = np.array([0.0 if d == src else rank_of[d] ** -exponent for d in range(num_pes)])
        expected = weights / weights.sum() * dst.size
        keep = expected > 0
        assert stats.chisquare(observed[keep], expected[keep]).pvalue > ALPHA
    assert zipf_probabilities(4, 0, 0.0, np.arange(1, 5)) == pytest.approx([0, 1 / 3, 1 / 3, 1 / 3])


@pytest.mark.parametrize("process", ["bernoulli", "poisson"])
def test_offered_load_is_packets_per_link_time(process):
    s = spec(process=process, load=0.4, duration_s=3.0)
    workload = make_workload(s, num_pes=8)
    slots = s.duration_s * s.link_rate_pps
    per_slot = s.load / s.sizes.mean
    messages = np.unique(workload.message).size
    expected = per_slot * slots * 8  # messages, 8 hosts
    sd = math.sqrt(expected * (1 - per_slot if process == "bernoulli" else 1.0))
    assert abs(messages - expected) < SIGMAS * sd
    # a host sends at most one packet per link time, and never before the message exists
    link_time = 1 / s.link_rate_pps
    for src in range(8):
        mine = workload.schedule.src == src
        at = workload.schedule.at[mine]
        assert np.all(np.diff(at) >= link_time * (1 - 1e-9))
        assert np.all(at >= workload.created[mine] - 1e-12)


def test_packets_queue_behind_earlier_messages():
    at = packet_times(np.array([0.0, 0.5, 10.0]), np.array([3, 2, 1]), 1.0)
    assert at.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 10.0]


def test_pattern_destinations_and_warmup():
    from topologies.build import build_topology

    topology = build_topology("torus", dims="4x4")
    traffic = make_traffic("tornado", topology)
    workload = make_workload(spec(destinations="tornado", warmup_s=0.5), len(topology.hosts), traffic)
    flows = set(zip(traffic.src.tolist(), traffic.dst.tolist(), strict=True))
    assert set(zip(workload.schedule.src.tolist(), workload.schedule.dst.tolist(), strict=True)) <= flows
    assert np.array_equal(workload.measured, workload.created >= 0.5)


@pytest.mark.parametrize(
    "overrides",
    [{"load": 0}, {"load": 5.0}, {"process": "uniform"}, {"warmup_s": 3.0}, {"link_rate_pps": 0}],
)
def test_bad_workloads_are_refused(overrides):
    with pytest.raises(WorkloadError):
        make_workload(spec(**overrides), num_pes=4)


def test_frame_factory_gives_scapys_frames():
    factory = FrameFactory(100)
    for src, dst in [(0, 1), (7, 3), (300, 12), (1023, 0), (65534, 2)]:
        assert factory.frame(src, dst) == probe_frame(src, dst, 100)
