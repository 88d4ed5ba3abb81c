"""The streaming analysis (blocks of destinations) gives today's report exactly: checked against the
all-paths-at-once reference kept in analysis_reference.py, on the networks the tests and docs use."""

from __future__ import annotations

import io
import json

import pytest
from analysis_reference import AllPairs as ReferencePairs
from analysis_reference import analyze as reference_analyze
from analysis_reference import write_paths as reference_write_paths

from controller.analysis.report import build_report, write_paths
from controller.analysis.stream import gather, spec_blocks, table_blocks
from controller.analysis.traffic import make_traffic
from controller.routing import routing_spec
from topologies.fattree import kary_ntree, twin_fattree
from topologies.torus import ndt_torus, torus

NETWORKS = [
    ("torus 4x4", lambda: torus((4, 4)), "dor", ["uniform", "transpose", "hotspot"]),
    ("torus 4x3", lambda: torus((4, 3)), "dor", ["random-permutation"]),
    ("3DT 3x3x3 DORT", lambda: ndt_torus((3, 3, 3)), "dort", ["tornado", "neighbour", "uniform"]),
    ("3DT 3x2x3 DORT", lambda: ndt_torus((3, 2, 3)), "dort", ["uniform"]),
    ("3DT 4x4x2 TS-DOR", lambda: ndt_torus((4, 4, 2)), "ts-dor", ["transpose", "bit-reverse-family"]),
    ("3DT 4x4x4 DORT", lambda: ndt_torus((4, 4, 4)), "dort", ["uniform", "bit-complement"]),
    ("3DT 4x4x4 TS-DOR", lambda: ndt_torus((4, 4, 4)), "ts-dor", ["uniform"]),
    ("twin 4-ary 2-tree", lambda: twin_fattree(4, 2), "destro", ["bit-reversal", "uniform"]),
    ("twin 4-ary 3-tree", lambda: twin_fattree(4, 3), "destro", ["bit-reversal", "uniform"]),
    ("twin 4-ary 3-tree unpaired", lambda: twin_fattree(4, 3, config="unpaired"), "destro", ["uniform"]),
    ("3-ary 2-tree", lambda: kary_ntree(3, 2), "destro", ["uniform"]),
    ("2-ary 3-tree", lambda: kary_ntree(2, 3), "destro", ["butterfly", "hotspot"]),
]


def _same(new: object, old: object, where: str = "") -> None:
    """Equal integers and strings; floats equal to 1e-12 (relative)."""
    if isinstance(old, float) and isinstance(new, float):
        assert new == pytest.approx(old, rel=1e-12, abs=1e-12), where
    elif isinstance(old, dict) and isinstance(new, dict):
        assert new.keys() == old.keys(), where
        for key in old:
            _same(new[key], old[key], f"{where}.{key}")
    elif isinstance(old, list) and isinstance(new, list):
        assert len(new) == len(old), where
        for i, (a, b) in enumerate(zip(new, old, strict=True)):
            _same(a, b, f"{where}[{i}]")
    else:
        assert new == old and type(new) is type(old), where


@pytest.mark.parametrize(("label", "build", "algorithm", "patterns"), NETWORKS, ids=[n[0] for n in NETWORKS])
def test_streaming_report_equals_the_all_paths_reference(label, build, algorithm, patterns) -> None:
    topology = build()
    spec = routing_spec(topology, algorithm)
    tables = spec.build()
    for pattern in [None, *patterns]:
        traffic = make_traffic(pattern, topology) if pattern else None
        old = reference_analyze(tables, traffic)
        for per_block in (None, 1, 5):
            new = build_report(tables, gather(tables, spec_blocks(spec, per_block), traffic), traffic)
            _same(new, old, f"{label} {pattern} per_block={per_block}")
            # the report prints the same JSON (bit-identical floats) whatever the block size
            assert json.dumps(new) == json.dumps(old)
        sliced = gather(tables, table_blocks(tables, 3), traffic)
        assert json.dumps(build_report(tables, sliced, traffic)) == json.dumps(old)


@pytest.mark.parametrize(("label", "build", "algorithm", "patterns"), NETWORKS, ids=[n[0] for n in NETWORKS])
def test_the_follow_on_cards_gives_the_reference_report_bit_for_bit(label, build, algorithm, patterns):
    from controller.analysis.stream import follow

    topology = build()
    spec = routing_spec(topology, algorithm)
    tables = spec.build()
    for pattern in [None, *patterns]:
        traffic = make_traffic(pattern, topology) if pattern else None
        old = json.dumps(reference_analyze(tables, traffic))
        for per_block in (None, 1, 5):
            totals = follow(spec, traffic, spec.ranges(per_block))
            new = build_report(spec.tables([[]] * 7), totals, traffic)
            assert json.dumps(new) == old, (pattern, per_block)


def test_the_follow_on_cards_refuses_a_loop_as_the_tables_walk_does() -> None:
    import numpy as np

    from controller.analysis.stream import follow
    from controller.routing.builder import table_spec
    from controller.routing.errors import RoutingLoopError
    from controller.routing.network import CardNetwork

    net = CardNetwork(torus((4,)))
    plus = net.port_number(0, "d0+")

    def around(cards, dsts, routing_class):  # always d0+, never delivers: a ring of cards
        shape = np.broadcast_shapes(np.shape(cards), np.shape(dsts))
        egress = np.full(shape, plus, dtype=np.int16)
        return egress, np.zeros(shape, dtype=np.int8), np.zeros(shape, dtype=np.int8)

    spec = table_spec("around", net, around)
    with pytest.raises(RoutingLoopError, match="packets loop"):
        follow(spec)
    with pytest.raises(RoutingLoopError, match="packets loop"):
        gather(spec.tables([[]] * 7), spec_blocks(spec))


@pytest.mark.parametrize("case", [NETWORKS[0], NETWORKS[4], NETWORKS[8]], ids=lambda n: n[0])
def test_streamed_paths_file_equals_the_reference(case) -> None:
    _, build, algorithm, _ = case
    spec = routing_spec(build(), algorithm)
    old = io.StringIO()
    reference_write_paths(ReferencePairs(spec.build()), old)
    new = io.StringIO()
    gather(spec.tables([[]] * 7), spec_blocks(spec, 3), on_block=lambda pairs: write_paths(pairs, new))
    assert new.getvalue() == old.getvalue()


@pytest.mark.parametrize("case", [NETWORKS[2], NETWORKS[6], NETWORKS[8]], ids=lambda n: n[0])
def test_workers_share_the_blocks_and_agree_to_1e_12(case) -> None:
    from analysis_reference import _link_load_array

    from controller.analysis.stream import gather_parallel

    _, build, algorithm, patterns = case
    topology = build()
    spec = routing_spec(topology, algorithm)
    traffic = make_traffic(patterns[-1], topology)
    old = reference_analyze(spec.build(), traffic)
    seen: list[None] = []
    totals = gather_parallel(spec, traffic, 2, on_block=seen.append, dsts_per_block=2)
    new = build_report(spec.tables([[]] * 7), totals, traffic)
    # loads summed per chunk differ in the last bits: links of equal load may come in another order
    ties = ("busiest_links", "bottleneck")
    _same({k: v for k, v in new.items() if k not in ties}, {k: v for k, v in old.items() if k not in ties})
    _same([load for _, load in new["busiest_links"]], [load for _, load in old["busiest_links"]])
    reference_pairs = ReferencePairs(spec.build())
    expected = _link_load_array(
        reference_pairs,
        reference_pairs.loads(reference_pairs.weights_of(traffic.src, traffic.dst, traffic.weight)),
    )
    assert totals.link_load == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert len(seen) == len(spec.ranges(2)) >= 4


@pytest.mark.parametrize("case", [NETWORKS[6], NETWORKS[8]], ids=lambda n: n[0])
def test_the_report_is_the_same_bit_for_bit_whatever_the_number_of_workers(case) -> None:
    """Chunks of blocks are summed on their own and added in chunk order, whichever worker took
    them: 1, 2 or 3 workers give the same loads to the last bit (and so the same report); that is
    also each chunk's running sum added up in order, computed here one chunk at a time."""
    import numpy as np

    from controller.analysis.stream import chunk_ranges, follow, gather_parallel

    _, build, algorithm, patterns = case
    topology = build()
    spec = routing_spec(topology, algorithm)
    traffic = make_traffic("uniform", topology)
    chunks = chunk_ranges(spec, 1)
    assert len(chunks) >= 8
    assert [block for chunk in chunks for block in chunk] == spec.ranges(1)  # every block, in order
    link_load = channel_load = 0.0
    for chunk in chunks:
        part = follow(spec, traffic, chunk)
        link_load, channel_load = link_load + part.link_load, channel_load + part.channel_load
    reports = []
    for workers in (1, 2, 3):
        totals = gather_parallel(spec, traffic, workers, dsts_per_block=1)
        assert np.array_equal(totals.link_load, link_load), workers
        assert np.array_equal(totals.channel_load, channel_load), workers
        reports.append(json.dumps(build_report(spec.tables([[]] * 7), totals, traffic)))
    assert reports[0] == reports[1] == reports[2]


def test_an_error_in_a_worker_is_raised_by_the_parent(monkeypatch) -> None:
    import controller.analysis.stream as stream
    from controller.routing.errors import RoutingLoopError

    def broken(*args, **kwargs):
        raise RoutingLoopError("packets loop at card c3")

    monkeypatch.setattr(stream, "CardFollow", broken)  # the forked workers inherit it
    spec = routing_spec(torus((4, 4)), "dor")
    with pytest.raises(RoutingLoopError, match="packets loop at card c3"):
        stream.gather_parallel(spec, None, 2, dsts_per_block=1)  # 16 chunks: forked workers


def test_a_worker_that_dies_is_reported_by_the_parent(monkeypatch) -> None:
    """A worker killed before sending its chunks (no error to pass on) ends the analysis with its
    exit code, instead of the parent waiting for chunks that never come."""
    import os

    import controller.analysis.stream as stream

    def dies(*args, **kwargs):
        os._exit(3)

    monkeypatch.setattr(stream, "follow", dies)  # the forked workers inherit it
    monkeypatch.setattr(stream, "WORKER_CHECK_SECONDS", 0.05)
    spec = routing_spec(torus((4, 4)), "dor")
    with pytest.raises(RuntimeError, match="exit code 3"):
        stream.gather_parallel(spec, None, 2, dsts_per_block=1)


@pytest.mark.parametrize("case", [NETWORKS[1], NETWORKS[4], NETWORKS[9]], ids=lambda n: n[0])
def test_blocks_of_the_spec_are_the_installed_tables(case) -> None:
    import numpy as np

    from controller.routing import compute_tables

    _, build, algorithm, _ = case
    topology = build()
    whole = compute_tables(topology, algorithm)
    blocks = list(spec_blocks(routing_spec(topology, algorithm), 2))
    assert [(first, last) for first, last, _ in blocks][-1][1] == len(topology.hosts)
    for column in ("card_id", "ingress_port", "dst_pe", "routing_class", "egress_port", "vc", "use"):
        joined = np.concatenate([getattr(block, column) for _, _, block in blocks])
        assert joined.dtype == getattr(whole, column).dtype
        assert np.array_equal(joined, getattr(whole, column)), column
    for first, last, block in blocks:
        assert np.all((block.dst_pe >= first) & (block.dst_pe < last))


@pytest.mark.parametrize("config", ["unpaired", None])
def test_refine_changes_only_the_entries_of_its_declared_uses(config) -> None:
    """The follow asks ``refine`` only about the entries of cards deciding one of ``refine_uses``: the
    tables with and without refine differ nowhere else."""
    import dataclasses

    import numpy as np

    topology = twin_fattree(4, 3, config=config) if config else twin_fattree(4, 3)
    spec = routing_spec(topology, "destro")
    assert spec.refine is not None and spec.refine_uses is not None
    refined, plain = spec.build(), dataclasses.replace(spec, refine=None).build()
    changed = (refined.vc != plain.vc) | (refined.use != plain.use)
    assert np.isin(plain.use[changed], spec.refine_uses).all()
    assert changed.any() == (config == "unpaired")  # the unpaired configuration has descending crossings
