"""DOR, DORT and TS-DOR tables against a scalar reference router (torus notes II, Appendix A, mirrored as
docs/contracts.md fixes the CBest placement) and against the contracts' reference averages."""

from __future__ import annotations

from itertools import product

import pytest

from controller.analysis.paths import AllPairs
from controller.routing import UnknownAlgorithmError, UnsupportedTopologyError, compute_tables, walk
from topologies.portconfig import all_port_configs
from topologies.torus import ndt_torus, torus


def direction(c: int, t: int, k: int, tie: int) -> int:
    off = (t - c) % k
    return 0 if off == 0 else +1 if 2 * off < k else -1 if 2 * off > k else tie


def ext_vc(c: int, t: int) -> int:
    return 0 if t > c else 1


def reference_path(dims, card_of, split, src, dst, algorithm):
    """Scalar router: list of (node, card, action, vc); action is ('EXT', i, s), ('IL', use) or ('PE',).

    The unsafe variants: ``ts-dor-unmirrored`` is Appendix A's TS-DOR as written (PE0 ties d_h-,
    PE1 d_h+; inject/eject 0 -> 1 upper, 1 -> 0 lower); ``dort-merged-vcs`` is DORT with every
    internal-link hop on VC 0.
    """
    variant = algorithm
    algorithm = {"ts-dor-unmirrored": "ts-dor", "dort-merged-vcs": "dort"}.get(variant, variant)
    mirrored = variant != "ts-dor-unmirrored"
    n = len(dims)
    h = (n - 1) // 2 if n % 2 else None
    cls = src % 2
    node, card = list(coords(src // 2, dims)), src % 2
    target, tpe = coords(dst // 2, dims), dst % 2
    inject_vc = 1 if len(split) < n else None
    ring_base = {d: (2 if inject_vc is not None else 1) + 2 * j for j, d in enumerate(split)}
    hops = []
    for _ in range(10 * sum(dims) + 10):
        if algorithm == "dort":
            order, ties = range(n), {}
        else:
            order = range(n) if cls == 0 else range(n - 1, -1, -1)
            ties = {h: (+1 if cls == 0 else -1) * (1 if mirrored else -1)}
        step = None
        for i in order:
            s = direction(node[i], target[i], dims[i], ties.get(i, +1))
            if s:
                step = (i, s)
                break
        if step is None:
            if tpe == card:
                hops.append((tuple(node), card, ("PE",), 0))
                return hops
            vc = 0 if algorithm == "dort" else crossing_vc(card, mirrored)
            hops.append((tuple(node), card, ("IL", "eject"), 0 if variant == "dort-merged-vcs" else vc))
            card = 1 - card
            continue
        i, s = step
        if card_of(i, s) == card:
            hops.append((tuple(node), card, ("EXT", i, s), ext_vc(node[i], target[i])))
            node[i] = (node[i] + s) % dims[i]
            card = card_of(i, -s)
            continue
        if i in split if algorithm == "dort" else i == h:
            vc = (ring_base[i] if algorithm == "dort" else 0) + ext_vc(node[i], target[i])
            hops.append((tuple(node), card, ("IL", "ring"), 0 if variant == "dort-merged-vcs" else vc))
        else:
            vc = inject_vc if algorithm == "dort" else crossing_vc(card, mirrored)
            hops.append((tuple(node), card, ("IL", "inject"), 0 if variant == "dort-merged-vcs" else vc))
        card = 1 - card
    raise AssertionError("reference router did not arrive")


def crossing_vc(card: int, mirrored: bool) -> int:
    """TS-DOR's inject/eject VC: contracts 0 -> 1 lower (1), 1 -> 0 upper (0); part 2 as written: opposite."""
    return (1 if card == 0 else 0) if mirrored else (0 if card == 0 else 1)


def coords(index: int, dims) -> tuple[int, ...]:
    out = []
    for k in dims:
        index, c = divmod(index, k)
        out.append(c)
    return tuple(out)


def table_path(tables, src, dst):
    """The walked path in the reference router's terms."""
    net = tables.network
    twins = {name: twin for twin in tables.topology.twins.values() for name in twin.cards}
    out = []
    for hop in walk(tables, src, dst).hops:
        name = net.port_name(hop.card_id, hop.egress_port)
        twin = twins[net.card_names[hop.card_id]]
        side = int(net.side[hop.card_id])
        if name == "pe":
            action = ("PE",)
        elif name.startswith("int"):
            action = ("IL", hop.use)
        else:
            action = ("EXT", int(name[1:-1]), +1 if name[-1] == "+" else -1)
        out.append((tuple(twin.coords), side, action, hop.vc))
    return out


def cbest_card_of(n):
    h = (n - 1) // 2

    def card_of(i, s):
        if n % 2 == 0:
            return 0 if i < n // 2 else 1
        return 0 if i < h else 1 if i > h else (0 if s > 0 else 1)

    return card_of


@pytest.mark.parametrize("dims", [(3, 3, 3), (4, 2, 4), (2, 4, 2), (4, 4), (2, 3, 2, 3), (2, 2, 3, 2, 2)])
@pytest.mark.parametrize("algorithm", ["dort", "ts-dor", "ts-dor-unmirrored", "dort-merged-vcs"])
def test_tables_follow_the_reference_router(dims, algorithm):
    n = len(dims)
    tables = compute_tables(ndt_torus(dims), algorithm)
    card_of = cbest_card_of(n)
    split = tuple(i for i in range(n) if card_of(i, 1) != card_of(i, -1))
    pes = 2 * len(list(product(*(range(k) for k in dims))))
    sources = range(pes) if pes <= 72 else range(0, pes, 5)  # all pairs on the small shapes
    for src, dst in product(sources, range(pes)):
        if src != dst:
            assert table_path(tables, src, dst) == reference_path(dims, card_of, split, src, dst, algorithm)


@pytest.mark.parametrize("config", [str(c) for c in all_port_configs(3)])
def test_dort_follows_the_reference_router_for_every_3dt_configuration(config):
    dims = (3, 3, 3)
    tables = compute_tables(ndt_torus(dims, config), "dort")
    held = {}
    for card, text in enumerate(config.split("|")):
        for i in range(3):
            for sign in "+-":
                if f"d{i}{sign}" in text:
                    held[i, 1 if sign == "+" else -1] = card
    split = tuple(i for i in range(3) if held[i, 1] != held[i, -1])
    for src, dst in product(range(54), repeat=2):
        if src != dst:
            expected = reference_path(dims, lambda i, s: held[i, s], split, src, dst, "dort")
            assert table_path(tables, src, dst) == expected
    assert tables.vcs_per_link()["internal"] == 2 * len(split) + 1 + (len(split) < 3)


@pytest.mark.parametrize("algorithm,average,internal", [("dort", 4.7953, 1.7717), ("ts-dor", 4.4094, 1.3858)])
def test_4x4x4_averages_of_the_contracts(algorithm, average, internal):
    pairs = AllPairs(compute_tables(ndt_torus((4, 4, 4)), algorithm))
    assert pairs.num_paths == 128 * 127
    assert float(pairs.links().mean()) == pytest.approx(average, abs=5e-5)
    assert float(pairs.internal().mean()) == pytest.approx(internal, abs=5e-5)


@pytest.mark.parametrize(
    "dims,algorithm,average,internal,diameter",
    [
        ((4, 2, 4), "dort", 3.825, 1.286, 7),
        ((4, 2, 4), "ts-dor", 3.429, 0.889, 6),
        ((4, 4, 2, 2, 2), "dort", 4.867, 1.353, 9),
        ((4, 4, 2, 2, 2), "ts-dor", 4.439, 0.925, 8),
    ],
)
def test_reference_path_lengths_of_spec_part_2(dims, algorithm, average, internal, diameter):
    pairs = AllPairs(compute_tables(ndt_torus(dims), algorithm))
    assert float(pairs.links().mean()) == pytest.approx(average, abs=5e-4)
    assert float(pairs.internal().mean()) == pytest.approx(internal, abs=5e-4)
    assert int(pairs.links().max()) == diameter


@pytest.mark.parametrize("dims", [(4, 4, 4), (3, 5, 2)])
@pytest.mark.parametrize("algorithm", ["dort", "ts-dor"])
def test_external_hops_are_the_torus_distance(dims, algorithm):
    pairs = AllPairs(compute_tables(ndt_torus(dims), algorithm))
    for src, dst, external in zip(
        pairs.src.tolist(), pairs.dst.tolist(), pairs.external().tolist(), strict=True
    ):
        a, b = coords(src // 2, dims), coords(dst // 2, dims)
        assert external == sum(min((x - y) % k, (y - x) % k) for x, y, k in zip(a, b, dims, strict=True))


def test_dor_on_a_torus_takes_minimal_rings_with_dateline_vcs():
    dims = (4, 5)
    tables = compute_tables(torus(dims), "dor")
    for src, dst in product(range(20), repeat=2):
        if src == dst:
            continue
        path = walk(tables, src, dst)
        node = list(coords(src, dims))
        target = coords(dst, dims)
        for hop in path.hops[:-1]:
            name = tables.network.port_name(hop.card_id, hop.egress_port)
            i, s = int(name[1:-1]), (1 if name[-1] == "+" else -1)
            assert all(node[j] == target[j] for j in range(i))
            assert s == direction(node[i], target[i], dims[i], +1)
            assert hop.vc == ext_vc(node[i], target[i])
            node[i] = (node[i] + s) % dims[i]
        assert tuple(node) == target


def test_ts_dor_classes_and_queues():
    tables = compute_tables(ndt_torus((3, 3, 3)), "ts-dor")
    assert [tables.class_of_source(pe) for pe in range(4)] == [0, 1, 0, 1]
    assert tables.queue_of(1, 1) == 3 and tables.queue_of(0, 1) == 1
    assert tables.queues_per_port() == 4
    assert tables.queue_pairs() == [(0, 0, 0), (0, 1, 1), (1, 0, 2), (1, 1, 3)]
    dort = compute_tables(ndt_torus((3, 3, 3)), "dort")
    assert dort.queue_of(1, 3) == 3 and dort.queues_per_port() == 4
    assert dort.vc_names["internal"] == {0: "eject", 1: "inject", 2: "ring d1 upper", 3: "ring d1 lower"}


def test_wrong_topologies_are_refused_clearly():
    with pytest.raises(UnsupportedTopologyError, match="destro.*torus"):
        compute_tables(torus((4, 4)), "destro")
    with pytest.raises(UnsupportedTopologyError, match="dor does not route a 'ndt'"):
        compute_tables(ndt_torus((3, 3, 3)), "dor")
    with pytest.raises(UnsupportedTopologyError, match="CBest"):
        compute_tables(ndt_torus((3, 3, 3), "X+Y+Z+|X-Y-Z-"), "ts-dor")
    with pytest.raises(UnsupportedTopologyError, match="dort"):
        compute_tables(torus((3, 3)), "dort")
    with pytest.raises(UnknownAlgorithmError, match="destro, dor, dort, ts-dor"):
        compute_tables(torus((3, 3)), "xy")
    with pytest.raises(ValueError):
        compute_tables(torus((3, 3)), "valiant")
