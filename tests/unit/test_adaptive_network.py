"""Adaptive routing end to end without Mininet: every card of a small nDT runs p4src/card.p4 on the
embedded target with the installer's adaptive plan, probes go card to card over the topology's links,
and each must arrive on a path the candidate tables allow (controller.routing.adaptive_check).

Occupancy registers are set at random before every hop, so that the selection functions take
adaptive and escape VCs alike; with every adaptive VC full, each probe must follow DORT, whose path
is computed independently by the deterministic tables.
"""

from __future__ import annotations

import random
from collections import Counter
from itertools import product

import pytest

from controller.adaptive_plan import DEFAULT_CAPACITY, plan_adaptive_cards
from controller.routing import compute_tables, walk
from controller.routing.adaptive import adaptive_tables
from controller.routing.adaptive_check import path_problems
from controller.routing.network import HOST
from controller.routing.selection import SELECTIONS
from controller.twins import PlanError
from emulation import packets
from p4src import card as names
from topologies.torus import ndt_torus, torus

DIMS = (2, 4, 2)


@pytest.fixture
def program(card_program):
    return card_program


class CardNetwork:
    """One embedded pipeline per card, loaded with the adaptive plan."""

    def __init__(self, program, model, selection: str) -> None:
        self.model = model
        self.net = model.network
        self.pipelines = []
        for plan in plan_adaptive_cards(model, selection).values():
            pipeline = program.new_pipeline()
            pipeline.table_set_default(names.CARD_CONFIG, names.SET_CARD, plan.config)
            pipeline.table_set_default(names.SELECTION_CONFIG, *plan.selection)
            for spec in plan.entries.values():
                fields = [name for name, _ in names.CARD_TABLES[spec.table]["keys"]]
                pipeline.table_insert(
                    spec.table, dict(zip(fields, spec.match, strict=True)), spec.action, spec.params
                )
            self.pipelines.append(pipeline)

    def send(self, src: int, dst: int, occupancy) -> tuple[list[packets.TraceHop], int | None]:
        """The probe's trace and the PE it reached (None: dropped)."""
        net = self.net
        card, port = int(net.pe_card[src]), int(net.pe_port[src])
        frame = packets.encode(packets.probe(src, dst, probe_id=1, send_time=0))
        for _ in range(names.MAX_TRACE):
            pipeline = self.pipelines[card]
            occupancy(pipeline)
            result = pipeline.ingress(frame, port, timestamp_us=0)
            if result.dropped:
                return [], None
            out = result.egress_spec
            frame = pipeline.egress(result, out, timestamp_us=0)
            if net.port_kind[card, out] == HOST:
                return packets.path(packets.decode(frame)), int(net.host_at[card, out])
            card, port = int(net.peer_card[card, out]), int(net.peer_port[card, out])
        return [], None


def random_occupancy(rng: random.Random, max_port: int):
    def preset(pipeline) -> None:
        for port, vc in product(range(1, max_port + 1), range(8)):
            pipeline.register_write(
                names.REGISTER_OCCUPANCY, port * 16 + vc, rng.choice([0, 0, 2, 5, DEFAULT_CAPACITY])
            )
        for port in range(1, max_port + 1):
            pipeline.register_write(names.REGISTER_RR_POINTER, port, rng.randrange(8))

    return preset


@pytest.mark.parametrize("selection", SELECTIONS)
def test_every_probe_arrives_on_an_allowed_path(program, selection):
    model = adaptive_tables(ndt_torus(DIMS))
    network = CardNetwork(program, model, selection)
    rng = random.Random(selection)
    kinds: Counter[str] = Counter()
    pes = model.network.num_pes
    for src, dst in product(range(pes), repeat=2):
        if src == dst or (src // 2 + dst) % 2:  # half of the pairs, every card side to every card side
            continue
        hops, reached = network.send(src, dst, random_occupancy(rng, model.network.max_port))
        assert reached == dst, (src, dst)
        path = [(h.card_id, h.in_port, h.out_port, h.vc, h.adaptive) for h in hops]
        assert path_problems(model, src, dst, path) == [], (src, dst, path)
        kinds.update("adaptive" if h.adaptive else "escape" for h in hops[:-1])
    assert kinds["adaptive"] > 0 and kinds["escape"] > 0, kinds


def test_with_every_adaptive_vc_full_probes_follow_dort(program):
    model = adaptive_tables(ndt_torus(DIMS))
    network = CardNetwork(program, model, "3-priority")
    dort = compute_tables(model.topology, "dort")
    max_port = model.network.max_port

    def full(pipeline) -> None:
        for port, vc in product(range(1, max_port + 1), range(8)):
            pipeline.register_write(names.REGISTER_OCCUPANCY, port * 16 + vc, DEFAULT_CAPACITY)

    for src, dst in product(range(0, model.network.num_pes, 3), range(model.network.num_pes)):
        if src == dst:
            continue
        hops, reached = network.send(src, dst, full)
        assert reached == dst
        expected = [(h.card_id, h.ingress_port, h.egress_port, h.vc) for h in walk(dort, src, dst).hops]
        assert [(h.card_id, h.in_port, h.out_port, h.vc) for h in hops] == expected
        assert not any(h.adaptive for h in hops)


def test_path_check_refuses_what_the_tables_do_not_allow():
    model = adaptive_tables(ndt_torus((3, 3, 3)), dsts=range(40, 41))
    net = model.network
    src, dst = 0, 40
    entry = model.lookup(int(net.pe_card[src]), int(net.pe_port[src]), dst, 0)
    port, vc = entry.candidates[0]
    first = (entry.card_id, entry.ingress_port, port, vc, 1)
    assert "not the escape" in path_problems(model, src, dst, [(*first[:4], 0)])[0]
    assert "not an adaptive candidate" in path_problems(model, src, dst, [(*first[:3], 0, 1)])[0]
    assert "ends on" in path_problems(model, src, dst, [first])[0]


def test_plan_refuses_more_queues_than_a_port_has():
    model = adaptive_tables(ndt_torus((3, 3, 3), "d0+d1+d2+|d0-d1-d2-"), dsts=range(0, 1))
    with pytest.raises(PlanError, match="analysed, not emulated"):
        plan_adaptive_cards(model, "3-priority")
    assert plan_adaptive_cards(adaptive_tables(torus((4, 4)), dsts=range(0, 1)), "round-robin")
