"""Accounting of every sent probe (received, or lost with a cause), schedules and frames (no network)."""

from __future__ import annotations

import numpy as np
import pytest

from controller.analysis.traffic import Traffic, make_traffic
from controller.routing import compute_tables, walk
from emulation.measure import LOST, ModelPaths, SentProbe, account, judge
from emulation.packets import TraceHop, Twinnet, decode
from emulation.traffic import SourceFlows, make_schedule, probe_frame, stamp
from topologies.build import build_topology


@pytest.fixture(scope="module")
def tables():
    return compute_tables(build_topology("fattree", k=4, n=2, twin=True), "destro")


def lost_results(tables, pairs):
    sent = [SentProbe(i, s, d, 0) for i, (s, d) in enumerate(pairs, 1)]
    return judge(sent, [], ModelPaths(tables))


def card_on_path(tables, src, dst, index):
    return tables.network.card_names[walk(tables, src, dst).hops[index].card_id]


def test_a_dead_card_takes_the_probes_whose_path_crosses_it(tables) -> None:
    pairs = [(0, 15), (0, 1), (4, 5)]
    results = lost_results(tables, pairs)
    dead = card_on_path(tables, 0, 15, 1)  # a card after the first one
    crossing = [
        pair
        for pair in pairs
        if dead in [tables.network.card_names[h.card_id] for h in walk(tables, *pair).hops]
    ]
    accounting = account(results, tables, {}, {}, [dead], "embedded")
    assert accounting.lost == 3 and accounting.received == 0
    assert accounting.causes.get(f"card {dead} died") == len(crossing)
    assert accounting.causes.get("unexplained", 0) == 3 - len(crossing)
    assert accounting.to_json()["all_accounted"]


def test_drop_counters_explain_each_loss_once(tables) -> None:
    pairs = [(0, 15), (0, 14), (0, 13)]
    results = lost_results(tables, pairs)
    first = card_on_path(tables, 0, 15, 0)
    accounting = account(results, tables, {first: {"no_route": 2, "malformed": 0}}, {}, [], "embedded")
    assert accounting.causes == {f"dropped at {first}: no_route": 2, "unexplained": 1}
    assert accounting.drop_counters == {first: {"no_route": 2}}
    assert [p["cause"] for p in accounting.lost_probes].count("unexplained") == 1


def test_queue_drops_and_bmv2_overflow(tables) -> None:
    pairs = [(3, 12), (3, 12)]
    first = card_on_path(tables, 3, 12, 0)
    accounting = account(lost_results(tables, pairs), tables, {}, {first: 1}, [], "embedded")
    assert accounting.causes == {f"queue overflow at {first}": 1, "unexplained": 1}
    on_bmv2 = account(lost_results(tables, pairs), tables, {}, {}, [], "bmv2")
    assert on_bmv2.causes == {"probable queue overflow": 2}


def test_received_probes_are_not_losses(tables) -> None:
    from emulation.measure import Arrival

    sent = [SentProbe(1, 0, 5, 0), SentProbe(2, 0, 6, 0)]
    hops = tuple(
        TraceHop(h.card_id, h.ingress_port, h.egress_port, h.vc, h.queue, 0, 0)
        for h in walk(tables, 0, 5).hops
    )
    results = judge(sent, [Arrival(1, 5, 0, 5, 0, 0, 40, hops)], ModelPaths(tables))
    accounting = account(results, tables, {}, {}, [], "embedded")
    assert (accounting.sent, accounting.received, accounting.lost) == (2, 1, 1)
    assert [r.verdict for r in results] == ["equal", LOST]


def test_all_to_all_schedule_sends_every_pair_once_paced_per_host() -> None:
    traffic = make_traffic("all-to-all", num_pes=16)
    schedule = make_schedule(traffic, 16, 15, rate_pps=100.0)
    pairs = set(zip(schedule.src.tolist(), schedule.dst.tolist(), strict=True))
    assert len(schedule) == 240 and len(pairs) == 240 and all(s != d for s, d in pairs)
    assert np.all(np.diff(schedule.at) >= 0)
    for host in range(16):
        times = schedule.at[schedule.src == host]
        assert np.allclose(np.diff(times), 0.01)
    assert schedule.duration == pytest.approx(14 / 100 + 15 / (100 * 16))


def test_patterns_set_destinations() -> None:
    permutation = make_traffic("bit-reversal", num_pes=16)
    schedule = make_schedule(permutation, 16, 4, rate_pps=10.0)
    mapping = dict(zip(permutation.src.tolist(), permutation.dst.tolist(), strict=True))
    assert all(mapping[s] == d for s, d in zip(schedule.src.tolist(), schedule.dst.tolist(), strict=True))
    uniform = make_schedule(make_traffic("uniform", num_pes=8), 8, 200, rate_pps=10.0, seed=3)
    assert np.all(uniform.src != uniform.dst) and len(set(uniform.dst.tolist())) == 8
    again = make_schedule(make_traffic("uniform", num_pes=8), 8, 200, rate_pps=10.0, seed=3)
    assert np.array_equal(uniform.dst, again.dst)


def test_stamped_frames_decode_with_the_packet_layout() -> None:
    frame = probe_frame(3, 9, 100)
    assert len(frame) == 100
    stamp(frame, 0xDEADBEEF, (1 << 48) - 5)
    header = decode(bytes(frame))[Twinnet]
    assert (header.src_pe, header.dst_pe, header.probe_id, header.send_time) == (
        3,
        9,
        0xDEADBEEF,
        (1 << 48) - 5,
    )
    assert header.trace_count == 0 and header.rclass == 0
    with pytest.raises(ValueError):
        probe_frame(3, 9, 20)


def test_losses_no_counter_explains_are_stuck_when_a_deadlock_stopped_the_run(tables) -> None:
    pairs = [(3, 12), (3, 12), (5, 1)]
    first = card_on_path(tables, 3, 12, 0)
    accounting = account(
        lost_results(tables, pairs), tables, {}, {first: 1}, [], "embedded", stopped_by_deadlock=True
    )
    assert accounting.causes == {
        f"queue overflow at {first}": 1,
        "in deadlocked queues when the run stopped": 2,
    }


def test_flows_grouped_by_source_are_each_sources_flows_in_order() -> None:
    """SourceFlows gives a source exactly the flows a scan of every flow finds, in the same order (so
    that the draws are those of the scan), also for flows listed in no order and sources without flows."""
    rng = np.random.default_rng(5)
    for name in ("uniform", "hotspot", "all-to-all", "bit-reversal"):
        base = make_traffic(name, num_pes=32)
        mixed = rng.permutation(base.src.size)
        traffic = Traffic(base.name, base.src[mixed], base.dst[mixed], rng.random(mixed.size) + 0.1)
        flows = SourceFlows(traffic)
        assert flows.random == (name in ("uniform", "hotspot"))
        for src in range(-1, 34):
            mine = traffic.src == src
            dsts, weights = flows.flows_of(src)
            assert np.array_equal(dsts, traffic.dst[mine]) and np.array_equal(weights, traffic.weight[mine])
