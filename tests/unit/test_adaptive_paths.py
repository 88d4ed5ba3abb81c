"""A run's path check under adaptive routing: allowed paths accepted, others refused; VC kinds and lengths.

Paths are built from the topology's wiring and DORT's own tables
(controller.routing.compute_tables), not from the adaptive tables: an
adaptive first hop on a port DORT does not take, then DORT to the end.
"""

from __future__ import annotations

import pytest

from controller.routing import compute_tables, walk
from controller.routing.adaptive import adaptive_tables
from controller.routing.adaptive_check import FewestHops, path_problems
from controller.routing.network import HOST
from emulation.adaptive_run import judge_adaptive, lengthening, prepare_adaptive, vc_kinds
from emulation.measure import ALLOWED, DIFFERS, LOST, Arrival, ModelPaths, SentProbe, judge
from emulation.packets import TraceHop
from topologies.torus import ndt_torus

DIMS = (4, 4, 4)


@pytest.fixture(scope="module")
def routing():
    return prepare_adaptive(ndt_torus((2, 4, 2)), "round-robin")


def dort_rest(dort, net, card: int, port: int, dst: int) -> list[tuple[int, int, int, int, int]]:
    """DORT's hops from (card, ingress port) to PE `dst`, as trace hops with the adaptive bit clear.

    DORT decides by (card, destination) alone: its entry from any ingress port of the card gives the hop.
    """
    decisions = _decisions(dort)
    hops = []
    while True:
        egress, vc = decisions[card, dst]
        hops.append((card, port, egress, vc, 0))
        if net.port_kind[card, egress] == HOST:
            return hops
        card, port = int(net.peer_card[card, egress]), int(net.peer_port[card, egress])


_DECISIONS: dict[int, dict] = {}


def _decisions(tables) -> dict[tuple[int, int], tuple[int, int]]:
    if id(tables) not in _DECISIONS:
        _DECISIONS[id(tables)] = {(e.card_id, e.dst_pe): (e.egress_port, e.vc) for e in tables.entries()}
    return _DECISIONS[id(tables)]


def detour(topology, dort, src: int, dst: int):
    """A path whose first hop takes a minimal port DORT does not take, on adaptive VC 2, then DORT."""
    dims = topology.params["dims"]
    net = dort.network
    card, port = int(net.pe_card[src]), int(net.pe_port[src])
    first, _ = _decisions(dort)[card, dst]
    coords = {name: t.coords for t in topology.twins.values() for name in t.cards}
    here, there = coords[net.card_names[card]], coords[net.card_names[int(net.pe_card[dst])]]
    for out in range(1, net.max_port + 1):
        name = net.port_name(card, out)
        if out == first or not name.startswith("d"):
            continue
        dim, sign = int(name[1:-1]), 1 if name.endswith("+") else -1
        offset = (there[dim] - here[dim]) % dims[dim]
        if offset and (offset <= dims[dim] // 2 if sign > 0 else offset >= dims[dim] - dims[dim] // 2):
            far, far_port = int(net.peer_card[card, out]), int(net.peer_port[card, out])
            return [(card, port, out, 2, 1), *dort_rest(dort, net, far, far_port, dst)]
    return None


@pytest.fixture(scope="module")
def network():
    topology = ndt_torus(DIMS)
    return topology, compute_tables(topology, "dort")


def test_an_adaptive_detour_then_dort_is_allowed_and_dort_alone_too(network):
    topology, dort = network
    found = 0
    for src, dst in [(0, 37), (0, 90), (5, 70), (64, 1), (33, 100)]:
        model = adaptive_tables(topology, dsts=range(dst, dst + 1))
        path = detour(topology, dort, src, dst)
        if path is None:
            continue
        found += 1
        assert path_problems(model, src, dst, path) == [], (src, dst, path)
        net = dort.network
        straight = dort_rest(dort, net, int(net.pe_card[src]), int(net.pe_port[src]), dst)
        assert path_problems(model, src, dst, straight) == []
    assert found >= 3


def test_paths_the_tables_do_not_allow_are_refused(network):
    topology, dort = network
    src, dst = 0, 37
    model = adaptive_tables(topology, dsts=range(dst, dst + 1))
    path = detour(topology, dort, src, dst)
    assert path is not None
    # an adaptive hop after the packet escaped: the escape first, then the detour's kind of move
    net = dort.network
    escape_first = dort_rest(dort, net, int(net.pe_card[src]), int(net.pe_port[src]), dst)
    card, port, out, vc, _ = escape_first[1]
    wrong = [escape_first[0], (card, port, out, 2, 1), *escape_first[2:]]
    assert "not an adaptive candidate" in path_problems(model, src, dst, wrong)[0]
    # the adaptive bit set on an escape VC, and clear on an adaptive one
    bit_set = [(*escape_first[0][:4], 1), *escape_first[1:]]
    assert "not an adaptive candidate" in path_problems(model, src, dst, bit_set)[0]
    bit_clear = [(*path[0][:4], 0), *path[1:]]
    assert "not the escape" in path_problems(model, src, dst, bit_clear)[0]
    # the internal link adaptively where DORT does not take it (its adaptive VCs are 4..7)
    card, port = int(net.pe_card[src]), int(net.pe_port[src])
    internal = net.port_number(card, "int0")
    if _decisions(dort)[card, dst][0] != internal:
        assert (
            "not an adaptive candidate" in path_problems(model, src, dst, [(card, port, internal, 4, 1)])[0]
        )
    # a hop that does not start where the link leads, and a path that stops short
    jumped = [path[0], *path[2:]]
    assert "expected on" in path_problems(model, src, dst, jumped)[0]
    assert "ends on" in path_problems(model, src, dst, path[:-1])[0]


def hops_of(path) -> tuple[TraceHop, ...]:
    return tuple(TraceHop(c, i, o, v, v, 0, 0, a) for c, i, o, v, a in path)


def test_judge_marks_allowed_paths_and_counts_vc_kinds_and_lengths(routing):
    net = routing.model.network
    dort = compute_tables(routing.model.topology, "dort")
    topology = routing.model.topology
    pairs = [(src, dst) for src in range(0, net.num_pes, 5) for dst in range(net.num_pes) if src != dst]
    sent, arrivals, detours = [], [], 0
    for number, (src, dst) in enumerate(pairs, start=1):
        sent.append(SentProbe(number, src, dst, 0))
        path = None
        if number % 2:
            path = detour(topology, dort, src, dst)
        if path is None:
            path = dort_rest(dort, net, int(net.pe_card[src]), int(net.pe_port[src]), dst)
        else:
            detours += 1
        arrivals.append(Arrival(number, dst, src, dst, 0, 0, 10, hops_of(path)))
    sent.append(SentProbe(len(pairs) + 1, 0, 9, 0))  # never arrives
    escape_paths = ModelPaths(routing.escape)
    results = judge_adaptive(sent, arrivals, routing, escape_paths)
    assert [r.verdict for r in results].count(ALLOWED) == len(pairs) and results[-1].verdict == LOST
    # the deterministic comparison sees the detours as different paths
    plain = judge(sent, arrivals, ModelPaths(dort))
    assert sum(r.verdict == DIFFERS for r in plain) == detours > 0
    kinds = vc_kinds(results, routing)
    links = sum(len(a.hops) - 1 for a in arrivals)
    assert kinds["adaptive_hops"] == detours and kinds["escape_hops"] == links - detours
    # a probe escaped when one of its card-to-card hops (all but the last, to the host) has the bit clear
    escaped = sum(1 for a in arrivals if any(not h.adaptive for h in a.hops[:-1]))
    assert kinds["probes_that_escaped"] == escaped < len(pairs)
    assert kinds["hops_whose_vc_is_not_of_their_kind"] == 0
    length = lengthening(results, routing)
    walked = [len(walk(dort, src, dst).hops) - 1 for src, dst in pairs]
    assert length["mean_escape_path"] == pytest.approx(sum(walked) / len(pairs), abs=1e-4)
    assert length["mean_measured"] == pytest.approx(links / len(pairs), abs=1e-4)
    assert length["longer_than_escape"] + length["as_long_as_escape"] + length["shorter_than_escape"] == len(
        pairs
    )


def test_a_hop_the_tables_refuse_makes_the_probe_differ_at_that_hop(routing):
    net = routing.model.network
    dort = compute_tables(routing.model.topology, "dort")
    src, dst = 0, 21
    path = dort_rest(dort, net, int(net.pe_card[src]), int(net.pe_port[src]), dst)
    card, port, out, vc, _ = path[1]
    path[1] = (card, port, out, vc, 1)  # an escape VC claimed as adaptive
    results = judge_adaptive(
        [SentProbe(1, src, dst, 0)],
        [Arrival(1, dst, src, dst, 0, 0, 5, hops_of(path))],
        routing,
        ModelPaths(dort),
    )
    assert results[0].verdict == DIFFERS and results[0].divergence.hop == 1


def test_fewest_hops_is_a_shortest_path_over_the_allowed_ports(routing):
    """Against a breadth-first search over the same moves, written here: candidate ports and the escape."""
    model = routing.model
    net = model.network
    fewest = FewestHops(model)
    entries = {(e.card_id, e.dst_pe): e for e in model.entries() if not e.escaped}
    for dst in (0, 7, 20, 31):
        for src in range(net.num_pes):
            if src == dst:
                continue
            frontier, seen, depth = [int(net.pe_card[src])], set(), 0
            answer = None
            while frontier and answer is None:
                following = []
                for card in frontier:
                    entry = entries[card, dst]
                    if net.port_kind[card, entry.escape_port] == HOST:
                        answer = depth
                        break
                    for port in {p for p, _ in entry.candidates} | {entry.escape_port}:
                        far = int(net.peer_card[card, port])
                        if far not in seen:
                            seen.add(far)
                            following.append(far)
                frontier, depth = following, depth + 1
            assert fewest(src, dst) == answer, (src, dst)
            assert fewest(src, dst) <= len(walk(routing.escape, src, dst).hops) - 1


def test_a_lost_probe_is_put_down_to_a_drop_on_any_card_its_allowed_paths_cross(routing):
    """A drop counted on a card off DORT's path but on an allowed one explains the loss."""
    from emulation.measure import account

    net = routing.model.network
    src, dst = 0, 29
    dort_cards = {h.card_id for h in walk(routing.escape, src, dst).hops}
    # cards some allowed path crosses, by a search over candidate and escape ports written here
    entries = {(e.card_id, e.dst_pe): e for e in routing.model.entries() if not e.escaped}
    reach, todo = {int(net.pe_card[src])}, [int(net.pe_card[src])]
    while todo:
        entry = entries[todo.pop(), dst]
        for port in {p for p, _ in entry.candidates} | {entry.escape_port}:
            far = int(net.peer_card[entry.card_id, port])
            if far >= 0 and far not in reach:
                reach.add(far)
                todo.append(far)
    assert set(routing.fewest.cards_on_paths(src, dst)) == reach
    off_dort = sorted(reach - dort_cards)
    assert off_dort
    name = net.card_names[off_dort[0]]
    results = judge_adaptive([SentProbe(1, src, dst, 0)], [], routing, ModelPaths(routing.escape))

    def cards_of(result):
        return routing.fewest.cards_on_paths(result.src, result.dst)

    drops = {name: {"hop_limit": 1}}
    found = account(results, routing.escape, drops, {}, [], "embedded", cards_of=cards_of)
    assert found.causes == {f"dropped at {name}: hop_limit": 1}
    assert account(results, routing.escape, drops, {}, [], "embedded").causes == {"unexplained": 1}
