"""Measured paths against the model's, on hand-built traces (no network).

Traces are built from the route tables' walker (the model) and then changed by
hand; expected crossings come from controller.analysis.paths.AllPairs.
"""

from __future__ import annotations

import pytest

from controller.analysis.deadlock import check_deadlock
from controller.analysis.paths import AllPairs
from controller.routing import compute_tables, walk
from emulation.measure import (
    DIFFERS,
    EQUAL,
    LOST,
    MISDELIVERED,
    Arrival,
    ModelPaths,
    SentProbe,
    check_channels,
    compare_paths,
    crossings,
    decode_arrival,
    judge,
    latency_groups,
    model_channels,
    stray_arrivals,
)
from emulation.packets import TraceEntry, TraceHop, Twinnet, decode, encode, probe
from topologies.build import build_topology


@pytest.fixture(scope="module")
def tables():
    return compute_tables(build_topology("ndt", dims="2x4x2"), "ts-dor")


def measured(tables, src: int, dst: int) -> tuple[TraceHop, ...]:
    """The hops a correct network would record for src -> dst (priority = queue index)."""
    return tuple(
        TraceHop(h.card_id, h.ingress_port, h.egress_port, h.vc, h.queue, 0, 10 * i)
        for i, h in enumerate(walk(tables, src, dst).hops)
    )


def arrival(tables, probe_id: int, src: int, dst: int, hops=None, receiver=None, send=1000, receive=1500):
    hops = measured(tables, src, dst) if hops is None else hops
    return Arrival(
        probe_id,
        dst if receiver is None else receiver,
        src,
        dst,
        tables.class_of_source(src),
        send,
        receive,
        tuple(hops),
    )


def test_a_faithful_trace_equals_the_model(tables) -> None:
    names = tables.network.card_names
    for src, dst in [(0, 31), (1, 30), (5, 6), (0, 1)]:
        assert compare_paths(measured(tables, src, dst), walk(tables, src, dst), names) is None


def test_a_different_port_is_reported_at_its_hop(tables) -> None:
    model = walk(tables, 0, 31)
    hops = list(measured(tables, 0, 31))
    hops[2] = TraceHop(hops[2].card_id, hops[2].in_port, hops[2].out_port + 1, hops[2].vc, hops[2].prio, 0, 0)
    divergence = compare_paths(hops, model, tables.network.card_names)
    assert divergence is not None and divergence.hop == 2
    assert (
        f"out {hops[2].out_port}" in divergence.measured
        and f"out {model.hops[2].egress_port}" in divergence.model
    )


def test_a_wrong_vc_or_priority_differs(tables) -> None:
    model = walk(tables, 1, 30)
    hops = list(measured(tables, 1, 30))
    last = len(hops) - 2
    hops[last] = TraceHop(hops[last].card_id, hops[last].in_port, hops[last].out_port, hops[last].vc, 7, 0, 0)
    divergence = compare_paths(hops, model, tables.network.card_names)
    assert divergence.hop == last and "prio 7" in divergence.measured


def test_a_short_or_long_path_differs_where_it_ends(tables) -> None:
    model = walk(tables, 0, 31)
    hops = measured(tables, 0, 31)
    short = compare_paths(hops[:-1], model, tables.network.card_names)
    assert short.hop == len(hops) - 1 and short.measured == "path ends"
    longer = compare_paths(hops + (hops[-1],), model, tables.network.card_names)
    assert longer.hop == len(hops) and longer.model == "path ends"


def test_judge_gives_every_sent_probe_one_verdict(tables) -> None:
    sent = [
        SentProbe(i, src, dst, 1000) for i, (src, dst) in enumerate([(0, 31), (1, 30), (2, 9), (3, 4)], 1)
    ]
    wrong = list(measured(tables, 2, 9))
    wrong[0] = TraceHop(wrong[0].card_id, wrong[0].in_port, 99, wrong[0].vc, wrong[0].prio, 0, 0)
    arrivals = [
        arrival(tables, 1, 0, 31),
        arrival(tables, 1, 0, 31),  # a duplicate
        arrival(tables, 2, 1, 30, receiver=7),
        arrival(tables, 3, 2, 9, hops=wrong),
        arrival(tables, 99, 5, 6),  # never sent by this run
    ]
    results = judge(sent, arrivals, ModelPaths(tables))
    assert [r.verdict for r in results] == [EQUAL, MISDELIVERED, DIFFERS, LOST]
    assert results[0].duplicates == 1 and results[0].latency_us == 500
    assert results[2].divergence.hop == 0
    assert results[3].arrival is None and results[3].latency_us is None
    assert [a.probe_id for a in stray_arrivals(sent, arrivals)] == [99]


def test_channels_used_must_be_the_models(tables) -> None:
    channels = model_channels(tables)
    acyclic = check_deadlock(AllPairs(tables)).deadlock_free
    assert acyclic
    sent = [SentProbe(1, 0, 31, 0), SentProbe(2, 1, 30, 0)]
    good = judge(sent, [arrival(tables, 1, 0, 31), arrival(tables, 2, 1, 30)], ModelPaths(tables))
    check = check_channels(good, tables, channels, acyclic)
    assert check.ok and check.used == len(
        {(h.card_id, h.out_port, h.prio) for r in good for h in r.arrival.hops[:-1]}
    )
    # the same first hop on a VC whose queue the model never uses on that port
    hops = list(measured(tables, 0, 31))
    unused_vc = next(
        vc for vc in range(16) if (hops[0].card_id, hops[0].out_port, tables.queue_of(0, vc)) not in channels
    )
    hops[0] = TraceHop(hops[0].card_id, hops[0].in_port, hops[0].out_port, unused_vc, 0, 0, 0)
    bad = judge(sent[:1], [arrival(tables, 1, 0, 31, hops=hops)], ModelPaths(tables))
    check = check_channels(bad, tables, channels, acyclic)
    assert not check.ok
    assert check.foreign == [
        (tables.network.card_names[hops[0].card_id], hops[0].out_port, tables.queue_of(0, unused_vc))
    ]
    assert not check_channels(good, tables, channels, acyclic=False).ok


def test_internal_crossings_from_traces_match_the_analysis(tables) -> None:
    pairs = AllPairs(tables)
    chosen = [(0, 31), (1, 30), (0, 1), (1, 0), (6, 25), (6, 25)]
    sent = [SentProbe(i, s, d, 0) for i, (s, d) in enumerate(chosen, 1)]
    results = judge(
        sent, [arrival(tables, i, s, d) for i, (s, d) in enumerate(chosen, 1)], ModelPaths(tables)
    )
    count = crossings(results, tables, pairs)
    assert count.equal and count.probes == len(chosen)
    n = tables.network.num_pes
    index = {(int(s), int(d)): i for i, (s, d) in enumerate(zip(pairs.src, pairs.dst, strict=True))}
    assert count.analysis_internal == sum(int(pairs.internal()[index[p]]) for p in chosen)
    assert count.analysis_internal > 0 and n == 32
    # a trace that went through one more internal link than the analysis says
    detour = list(measured(tables, 0, 1))
    detour.insert(0, detour[0])
    results[2] = judge(sent[2:3], [arrival(tables, 3, 0, 1, hops=detour)], ModelPaths(tables))[0]
    assert not crossings(results, tables, pairs).equal


def test_decode_arrival_reads_the_trace_in_path_order(tables) -> None:
    pkt = decode(encode(probe(0, 31, probe_id=42, send_time=1234)))
    header = pkt[Twinnet]
    header.rclass = 1
    for card in (4, 9, 13):  # each card pushes its entry in front
        header.trace.insert(
            0, TraceEntry(card_id=card, in_port=1, out_port=2, vc=1, prio=3, qdepth=5, timestamp=card)
        )
    header.trace_count = None
    got = decode_arrival(31, encode(pkt), 2000)
    assert (got.probe_id, got.src, got.dst, got.routing_class, got.send_us, got.receive_us) == (
        42,
        0,
        31,
        1,
        1234,
        2000,
    )
    assert [hop.card_id for hop in got.hops] == [4, 9, 13]
    assert decode_arrival(31, b"\x00" * 10, 0) is None


def test_latency_groups_by_class_and_queue(tables) -> None:
    sent = [SentProbe(1, 0, 31, 1000), SentProbe(2, 1, 30, 1000)]
    results = judge(
        sent,
        [arrival(tables, 1, 0, 31, receive=1300), arrival(tables, 2, 1, 30, receive=1800)],
        ModelPaths(tables),
    )
    groups = latency_groups(results, tables)
    assert groups["routing_class"] == {"class 0": [300], "class 1": [800]}
    assert sum(len(v) for v in groups["queue"].values()) >= 2
