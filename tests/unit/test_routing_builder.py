"""The table builder against a brute-force walk: every pair followed one card at a time through the
algorithm's rule evaluated cell by cell, the entries collected, compared with the built tables."""

from __future__ import annotations

import numpy as np
import pytest

from controller.routing import BlackHoleError, routing_spec
from controller.routing.builder import columns_of, table_spec
from controller.routing.network import CardNetwork
from topologies.fattree import kary_ntree, twin_fattree
from topologies.torus import ndt_torus, torus

CASES = [
    (ndt_torus((3, 3, 3)), "dort"),
    (ndt_torus((4, 2, 3)), "ts-dor"),
    (ndt_torus((2, 3, 2, 2)), "dort"),
    (ndt_torus((3, 3, 3), "d0+d1+d2+|d0-d1-d2-"), "dort"),
    (torus((4, 5)), "dor"),
    (torus((3, 4)), "dor-no-dateline"),
    (twin_fattree(4, 3), "destro"),
    (twin_fattree(4, 3, r=2, config=[0, 1, 2, 3], root_config=[0, 1, 4, 5]), "destro"),
    (kary_ntree(3, 3), "destro"),
]


def walked_entries(spec) -> list[tuple[int, ...]]:
    """Entries (card, ingress, dst, class, egress, VC, use) met walking every pair, deciding cell by cell."""
    net = spec.network
    decided: dict[tuple[int, int, int], tuple[int, int, int]] = {}

    def decide(card: int, dst: int, cls: int) -> tuple[int, int, int]:
        if (card, dst, cls) not in decided:
            egress, vc, use = spec.decide(np.array([card]), np.array([dst]), cls)
            decided[card, dst, cls] = (int(egress[0]), int(vc[0]), int(use[0]))
        return decided[card, dst, cls]

    found = set()
    for src in range(net.num_pes):
        cls = int(spec.source_class[src])
        for dst in range(net.num_pes):
            if src == dst:
                continue
            card, port = int(net.pe_card[src]), int(net.pe_port[src])
            for _ in range(4 * net.num_cards):
                egress, vc, use = decide(card, dst, cls)
                found.add((card, port, dst, cls, egress, vc, use))
                if net.host_at[card, egress] >= 0:
                    assert net.host_at[card, egress] == dst
                    break
                card, port = int(net.peer_card[card, egress]), int(net.peer_port[card, egress])
            else:
                raise AssertionError(f"{src} -> {dst} does not arrive")
    rows = sorted(found, key=lambda e: (e[2], e[3], e[0], e[1]))
    if spec.refine is not None:
        columns = [np.array(column) for column in zip(*rows, strict=True)]
        vc, use = spec.refine(*columns[:3], *columns[4:])
        rows = [(*row[:5], int(v), int(u)) for row, v, u in zip(rows, vc, use, strict=True)]
    return rows


@pytest.mark.parametrize("topology,algorithm", CASES, ids=lambda x: getattr(x, "name", str(x)))
def test_tables_hold_exactly_the_walked_entries(topology, algorithm):
    spec = routing_spec(topology, algorithm)
    tables = spec.build()
    built = list(zip(*(column.tolist() for column in columns_of(tables)), strict=True))
    assert built == walked_entries(spec)


@pytest.mark.parametrize("topology,algorithm", CASES[:3] + CASES[6:7], ids=str)
def test_blocks_of_any_size_concatenate_to_the_tables(topology, algorithm):
    spec = routing_spec(topology, algorithm)
    whole = spec.build()
    for per_block in (1, 5):
        parts = [spec.block(first, last) for first, last in spec.ranges(per_block)]
        assert np.array_equal(np.concatenate([part.keys for part in parts]), whole.keys)
        assert np.array_equal(np.concatenate([part.egress_port for part in parts]), whole.egress_port)
        assert np.array_equal(np.concatenate([part.vc for part in parts]), whole.vc)


def test_a_rule_that_leaves_by_a_port_without_link_is_refused():
    net = CardNetwork(torus((3, 3)))
    spec = routing_spec(net.topology, "dor")

    def decide(cards, dsts, cls):
        egress, vc, use = spec.decide(cards, dsts, cls)
        return np.where(egress == 1, net.max_port + 1, egress), vc, use

    with pytest.raises(BlackHoleError, match="no link"):
        table_spec("broken", net, decide).build()
