"""The card program's adaptive routing on the embedded target: the four selection functions, given
register contents, pick as controller.routing.selection (the notes' rules) says; escape and escaped flag.

Each case presets the ``occupancy`` cells and the round-robin pointer, sends one
packet vector through ingress and egress of p4src/card.p4, and reads the port,
VC, escaped flag and trace entry it leaves with.
"""

from __future__ import annotations

import random

import pytest

from controller.routing.selection import LEVELS, SELECTIONS, select
from emulation import packets
from emulation.card_vectors import EmbeddedCard
from emulation.packets import Twinnet
from p4src import card as names

IN_PORT, DST, HOST_PORT = 1, 9, 6
#: (port, VC, port class): two external ports, a split dimension's port, the internal link
SLOTS = [(2, 2, 0), (2, 3, 0), (3, 2, 1), (3, 3, 1), (4, 4, 2), (4, 5, 2), (4, 6, 2), (4, 7, 2)]
ESCAPE = (4, 1)
THRESHOLD, CAPACITY = 4, 8


@pytest.fixture
def program(card_program):
    return card_program


def slot_params(slots) -> dict[str, int]:
    params = {"escape_port": ESCAPE[0], "escape_vc": ESCAPE[1]}
    for i in range(names.ADAPTIVE_SLOTS):
        port, vc, cls = slots[i] if i < len(slots) else (0, 0, 0)
        params.update({f"port{i}": port, f"vc{i}": vc, f"class{i}": cls})
    return params


def adaptive_card(program, selection: str, slots=SLOTS) -> EmbeddedCard:
    card = EmbeddedCard(program)
    card.set_default(names.CARD_CONFIG, names.SET_CARD, {"card_id": 7, "hop_limit": 24})
    levels = [names.LEVEL_NEVER if level is None else level for level in LEVELS[selection]]
    card.set_default(
        names.SELECTION_CONFIG,
        names.SET_SELECTION,
        {
            "threshold": THRESHOLD,
            "capacity": CAPACITY,
            "level_external": levels[0],
            "level_split": levels[1],
            "level_internal": levels[2],
        },
    )
    for vc in range(8):
        card.insert(names.VC_QUEUE, {names.RCLASS: 0, names.VC: vc}, names.SET_QUEUE, {"prio": vc})
    for escaped in (0, 1):
        card.insert(
            names.ADAPTIVE_ROUTE,
            {names.INGRESS_PORT: IN_PORT, names.DST_PE: DST, names.RCLASS: 0, names.ESCAPED: escaped},
            names.SET_CANDIDATES,
            slot_params(slots if escaped == 0 else []),
        )
    card.insert(names.HOST_IN, {names.INGRESS_PORT: HOST_PORT}, names.FROM_HOST, {"pe": 3, "rclass": 0})
    card.insert(
        names.ADAPTIVE_ROUTE,
        {names.INGRESS_PORT: HOST_PORT, names.DST_PE: DST, names.RCLASS: 0, names.ESCAPED: 0},
        names.SET_CANDIDATES,
        slot_params(slots),
    )
    return card


def send(card: EmbeddedCard, *, escaped: int = 0, port: int = IN_PORT, deq_qdepth: int = 0):
    """(egress port, VC, escaped flag, trace entry's adaptive bit) of one packet, or None if dropped."""
    pkt = packets.probe(3, DST, probe_id=1, send_time=5)
    pkt[Twinnet].escaped = escaped
    result = card.pipeline.ingress(packets.encode(pkt), port, timestamp_us=10)
    if result.dropped:
        return None
    frame = card.pipeline.egress(result, result.egress_spec, deq_qdepth=deq_qdepth, timestamp_us=20)
    header = packets.decode(frame)[Twinnet]
    return result.egress_spec, header.vc, header.escaped, header.trace[0].adaptive


def preset(card: EmbeddedCard, occupancy: dict[tuple[int, int], int], pointer: int) -> None:
    for port, vc, _ in SLOTS:
        card.pipeline.register_write(names.REGISTER_OCCUPANCY, port * 16 + vc, occupancy.get((port, vc), 0))
    card.pipeline.register_write(names.REGISTER_RR_POINTER, IN_PORT, pointer)


def expected(selection: str, occupancy, pointer: int):
    cands = [(p, v) for p, v, _ in SLOTS]
    chosen = select(
        cands,
        [c for _, _, c in SLOTS],
        occupancy,
        selection,
        threshold=THRESHOLD,
        capacity=CAPACITY,
        start=pointer,
    )
    if chosen is None:
        return (*ESCAPE, 1, 0), pointer
    return (*chosen, 0, 1), (cands.index(chosen) + 1) % 8


@pytest.mark.parametrize("selection", SELECTIONS)
def test_selection_functions_pick_as_the_reference(program, selection):
    card = adaptive_card(program, selection)
    rng = random.Random(selection)
    for _ in range(150):
        occupancy = {(p, v): rng.choice([0, 1, 3, 4, 6, 8, 9]) for p, v, _ in SLOTS}
        pointer = rng.randrange(8)
        preset(card, occupancy, pointer)
        want, next_pointer = expected(selection, occupancy, pointer)
        assert send(card) == want, (occupancy, pointer)
        assert card.pipeline.register_read(names.REGISTER_RR_POINTER, IN_PORT) == next_pointer


def test_the_priority_levels_of_the_notes(program):
    low = {(p, v): 0 for p, v, _ in SLOTS}
    # everything low: 3-priority takes the other dimensions first, whatever the pointer
    card = adaptive_card(program, "3-priority")
    for pointer in range(8):
        preset(card, low, pointer)
        assert send(card)[0] == 2
    # other dimensions high, d_h low: 3-priority still prefers the external high ones (level first)
    preset(card, {**low, (2, 2): 5, (2, 3): 5}, 0)
    assert send(card)[0] == 2
    # other dimensions full: d_h next, then the internal link
    preset(card, {**low, (2, 2): 8, (2, 3): 8}, 0)
    assert send(card)[0] == 3
    preset(card, {**low, (2, 2): 8, (2, 3): 8, (3, 2): 8, (3, 3): 8}, 0)
    assert send(card)[:2] == (4, 4)
    # no-internal: the internal link is never taken: escape instead
    card = adaptive_card(program, "no-internal")
    preset(card, {**low, (2, 2): 8, (2, 3): 8, (3, 2): 8, (3, 3): 8}, 0)
    assert send(card) == (*ESCAPE, 1, 0)
    # 2-priority: the internal link only when the others are not available, low or high
    card = adaptive_card(program, "2-priority")
    preset(card, {**low, (2, 2): 7, (2, 3): 7, (3, 2): 7, (3, 3): 7}, 0)
    assert send(card)[0] in (2, 3)
    preset(card, {**low, (2, 2): 8, (2, 3): 8, (3, 2): 8, (3, 3): 8}, 6)
    assert send(card)[:2] == (4, 6)


def test_round_robin_visits_every_slot_in_turn(program):
    card = adaptive_card(program, "round-robin")
    preset(card, {}, 0)
    seen = []
    for _ in range(len(SLOTS) + 1):
        for port, vc, _ in SLOTS:  # keep every queue empty: the pointer alone decides
            card.pipeline.register_write(names.REGISTER_OCCUPANCY, port * 16 + vc, 0)
        seen.append(send(card)[:2])
    assert seen == [(p, v) for p, v, _ in SLOTS] + [(2, 2)]


def test_escaped_packets_keep_to_the_escape(program):
    card = adaptive_card(program, "round-robin")
    preset(card, {}, 0)
    assert send(card, escaped=1) == (*ESCAPE, 1, 0)
    # a host cannot mark its packet escaped: the first card clears the flag
    preset(card, {}, 0)
    assert send(card, escaped=1, port=HOST_PORT)[2:] == (0, 1)


def test_empty_slots_are_never_taken(program):
    card = adaptive_card(program, "round-robin", slots=SLOTS[:2])
    for pointer in range(8):
        card.pipeline.register_write(names.REGISTER_RR_POINTER, IN_PORT, pointer)
        assert send(card)[0] == 2


def test_occupancy_counts_queued_packets_and_egress_caps_them(program):
    card = adaptive_card(program, "3-priority")
    preset(card, {}, 0)
    pkt = packets.encode(packets.probe(3, DST, probe_id=1, send_time=5))
    first = card.pipeline.ingress(pkt, IN_PORT, timestamp_us=1)
    second = card.pipeline.ingress(pkt, IN_PORT, timestamp_us=2)
    held = {(p, v): card.pipeline.register_read(names.REGISTER_OCCUPANCY, p * 16 + v) for p, v, _ in SLOTS}
    assert sum(held.values()) == 2 and held[2, 2] == 1 and held[2, 3] == 1  # round-robin among low ones
    card.pipeline.egress(first, first.egress_spec, deq_qdepth=5, timestamp_us=3)
    assert card.pipeline.register_read(names.REGISTER_OCCUPANCY, 2 * 16 + 2) == 0
    card.pipeline.register_write(names.REGISTER_OCCUPANCY, 2 * 16 + 3, 40)  # e.g. tail drops counted
    card.pipeline.egress(second, second.egress_spec, deq_qdepth=2, timestamp_us=4)
    assert card.pipeline.register_read(names.REGISTER_OCCUPANCY, 2 * 16 + 3) == 2


def test_a_deterministic_card_touches_no_register(program):
    card = EmbeddedCard(program)
    card.set_default(names.CARD_CONFIG, names.SET_CARD, {"card_id": 7, "hop_limit": 24})
    card.insert(
        names.ROUTE,
        {names.INGRESS_PORT: IN_PORT, names.DST_PE: DST, names.RCLASS: 0},
        names.SET_ROUTE,
        {"port": 2, "vc": 1},
    )
    card.insert(names.VC_QUEUE, {names.RCLASS: 0, names.VC: 1}, names.SET_QUEUE, {"prio": 1})
    assert send(card, escaped=0) == (2, 1, 0, 0)
    assert all(card.pipeline.register_read(names.REGISTER_OCCUPANCY, i) == 0 for i in range(8192))
