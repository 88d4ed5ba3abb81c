"""The installer's adaptive entries against Algorithm 1 derived independently, and the install over P4Runtime.

The expected entries come from the scalar reference of test_routing_adaptive
(Algorithm 1 from the notes, DORT of Appendix A as the escape, Table 3's VCs) and
a brute-force walk of every state a packet may reach: from each source's host
port, over every adaptive candidate while not escaped, over the escape (and
only the escape) after. The install goes through controller.install on
embedded cards served in-process over gRPC, then back to deterministic DORT.
"""

from __future__ import annotations

import pytest
from test_routing_adaptive import cbest_held, reference

from controller.adaptive_plan import plan_adaptive_cards
from controller.routing import compute_tables
from controller.routing.adaptive import adaptive_tables, escape_tables
from controller.routing.network import HOST
from controller.routing.selection import LEVELS
from controller.twins import plan_cards
from p4src import card as names
from topologies.torus import ndt_torus

DIMS = (2, 4, 2)


@pytest.fixture(scope="module")
def model():
    return adaptive_tables(ndt_torus(DIMS))


def reference_states(model) -> dict[tuple[int, int, int, int], tuple[str, int, set]]:
    """(card, ingress port, dst, escaped) -> reference (escape port name, VC, adaptive set), brute force."""
    topology, net = model.topology, model.network
    held = cbest_held(len(DIMS))
    twins = {name: t for t in topology.twins.values() for name in t.cards}
    place = {}
    for card_id, name in enumerate(net.card_names):
        place[card_id] = (tuple(twins[name].coords), int(net.side[card_id]))
    pe_place = {h.pe: place[net.card_id_of_name[h.card]] for h in topology.hosts}
    states = {}
    for dst in range(net.num_pes):
        target, target_card = pe_place[dst]
        todo = [(int(net.pe_card[s]), int(net.pe_port[s]), 0) for s in range(net.num_pes) if s != dst]
        seen = set(todo)
        while todo:
            card, port, escaped = todo.pop()
            node, side = place[card]
            escape_name, escape_vc, adaptive = reference(DIMS, held, node, side, target, target_card)
            states[card, port, dst, escaped] = (escape_name, escape_vc, adaptive if not escaped else set())
            moves = [(net.port_number(card, escape_name), 1)]
            if not escaped:
                moves += [(net.port_number(card, name), 0) for name, _ in adaptive]
            for out, now_escaped in moves:
                if net.port_kind[card, out] == HOST:
                    continue
                nxt = (int(net.peer_card[card, out]), int(net.peer_port[card, out]), now_escaped)
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
    return states


def port_class(net, card: int, port: int) -> int:
    """0: a dimension held by one card; 1: a split dimension's port; 2: the internal link."""
    name = net.port_name(card, port)
    if name == "int0":
        return 2
    held = cbest_held(len(DIMS))
    dim = int(name[1:-1])
    return 1 if held[dim, 1] != held[dim, -1] else 0


def test_adaptive_route_entries_are_algorithm_1_on_every_reachable_state(model):
    net = model.network
    expected = reference_states(model)
    plans = plan_adaptive_cards(model, "2-priority")
    installed = {}
    for plan in plans.values():
        for spec in plan.entries.values():
            if spec.table == names.ADAPTIVE_ROUTE:
                port, dst, rclass, escaped = spec.match
                assert rclass == 0
                installed[plan.card_id, port, dst, escaped] = spec.params
    assert set(installed) == set(expected)
    trimmed = 0
    for key, params in installed.items():
        card = key[0]
        escape_name, escape_vc, adaptive = expected[key]
        assert (net.port_name(card, params[0]), params[1]) == (escape_name, escape_vc), key
        slots = [params[2 + 3 * i : 5 + 3 * i] for i in range(names.ADAPTIVE_SLOTS)]
        used = [(port, vc, cls) for port, vc, cls in slots if port != 0]
        got = {(net.port_name(card, port), vc) for port, vc, _ in used}
        # all candidates when they fit the 8 slots; else every candidate port keeps one VC
        assert got <= adaptive and len(got) == len(used) == min(len(adaptive), names.ADAPTIVE_SLOTS), key
        assert {name for name, _ in got} == {name for name, _ in adaptive}, key
        trimmed += len(adaptive) > names.ADAPTIVE_SLOTS
        assert all(cls == port_class(net, card, port) for port, _, cls in used), key
    assert trimmed > 0  # 2x4x2: ties in the radix-2 dimensions offer more than 8 candidates


def test_every_card_gets_its_selection_function_host_ports_and_queues(model):
    topology = model.topology
    for selection, levels in LEVELS.items():
        plans = plan_adaptive_cards(model, selection, threshold=3, capacity=20)
        never = names.LEVEL_NEVER
        for plan in plans.values():
            assert plan.selection == (
                names.SET_SELECTION,
                (3, 20, *[never if level is None else level for level in levels]),
            )
            queues = {
                spec.match: spec.params for spec in plan.entries.values() if spec.table == names.VC_QUEUE
            }
            assert queues == {(0, vc): (vc,) for vc in range(8)}  # Table 3 on 8 queues: queue = VC
    hosts = {(h.card, h.port): h.pe for h in topology.hosts}
    for plan in plans.values():
        got = {
            (plan.name, spec.match[0]): spec.params[0]
            for spec in plan.entries.values()
            if spec.table == names.HOST_IN
        }
        assert got == {key: pe for key, pe in hosts.items() if key[0] == plan.name}


def test_the_escape_tables_read_off_the_adaptive_tables_are_dort(model):
    dort = compute_tables(model.topology, "dort")
    escape = escape_tables(model)
    assert len(escape) == len(dort)
    for column in ("card_id", "ingress_port", "dst_pe", "routing_class", "egress_port", "vc", "use"):
        assert getattr(escape, column).tolist() == getattr(dort, column).tolist(), column


def test_the_installer_writes_adaptive_plans_and_switches_back_to_dort(model, card_program):
    """Two cards over gRPC: the adaptive plan installed and verified, then DORT's in its place."""
    from controller.install import TwinController
    from controller.p4runtime_conn import CardEndpoint
    from emulation.card_vectors import CARD_PROGRAM
    from p4switch.daemon.program import PipelineSlot
    from p4switch.p4runtime.server import P4RuntimeService, start_p4runtime_server

    net = model.network
    chosen = net.card_names[:2]
    servers, endpoints = [], []
    for card_id, name in enumerate(chosen):
        server, port = start_p4runtime_server("127.0.0.1:0", P4RuntimeService(card_id, PipelineSlot()))
        servers.append(server)
        endpoints.append(CardEndpoint(name, card_id, card_id, f"127.0.0.1:{port}"))
    program = (card_program.p4info, CARD_PROGRAM.read_bytes())
    adaptive = {
        name: plan for name, plan in plan_adaptive_cards(model, "3-priority").items() if name in chosen
    }
    dort_tables = compute_tables(model.topology, "dort")
    dort = {name: plan for name, plan in plan_cards(model.topology, dort_tables).items() if name in chosen}
    try:
        with TwinController(endpoints, program) as controller:
            report = controller.apply(adaptive, pipeline="push")
            assert report.ok, report.errors()
            # every entry, and the two default actions (card_config, selection_config)
            assert report.written == sum(len(p.entries) + 2 for p in adaptive.values())
            assert controller.verify_plans(adaptive).ok
            assert not controller.verify_plans(dort).ok
            again = controller.apply(dort, pipeline="keep")
            assert again.ok, again.errors()
            counts = {
                kind: sum(getattr(r, kind) for r in again.cards.values()) for kind in ("inserted", "deleted")
            }
            # the difference of the two plans, entry by entry: DORT's routes in, adaptive_route and
            # the queues of VCs DORT does not use out
            gone = sum(len(set(adaptive[n].entries) - set(dort[n].entries)) for n in chosen)
            new = sum(len(set(dort[n].entries) - set(adaptive[n].entries)) for n in chosen)
            assert counts == {"inserted": new, "deleted": gone}
            assert new == sum(1 for n in chosen for k in dort[n].entries if k[0] == names.ROUTE)
            assert controller.verify_plans(dort).ok
            assert all(plan.selection == (names.DETERMINISTIC, ()) for plan in dort.values())
    finally:
        for server in servers:
            server.stop(0)


def test_plans_of_two_selection_functions_differ_only_in_the_selection(model):
    first, second = plan_adaptive_cards(model, "round-robin"), plan_adaptive_cards(model, "no-internal")
    for name in first:
        assert first[name].entries == second[name].entries
        assert first[name].selection != second[name].selection
