"""What each card holds for adaptive routing: the adaptive tables and a selection function as card entries.

Per card (p4src/README.md, "Adaptive routing"):

* ``card_config``'s default ``set_card(card id, hop limit)``;
* ``selection_config``'s default ``set_selection(threshold, capacity, level per
  port class)`` from controller.routing.selection.LEVELS (level 3: never);
* per host port ``host_in`` (class 0) and ``host_out``;
* ``vc_queue``: every VC of the plan on queue = VC (class 0);
* every entry of the adaptive tables as ``adaptive_route`` (ingress port, dst PE,
  class 0, escaped) -> ``set_candidates(escape port, escape VC, 8 slots of (port,
  VC, port class))``, candidates in port order, empty slots port 0.

An entry with more than 8 candidates (ties in dimensions of 2 nodes) keeps one
adaptive VC per port first (``slots_of``); more than 8 candidate ports are refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from controller.routing.adaptive import AdaptiveTables
from controller.routing.selection import LEVELS, check_selection
from controller.translate import EntrySpec
from controller.twins import PlanError
from p4src import card

#: occupancy threshold between "low" and "high", and the occupancy at which a VC is not available
#: (packets; the embedded target's queues hold 64 by default)
DEFAULT_THRESHOLD, DEFAULT_CAPACITY = 4, 48


@dataclass
class AdaptiveCardPlan:
    """The control-plane state of one adaptive card: default actions and entries."""

    name: str
    card_id: int
    defaults: dict[str, tuple[str, tuple[int, ...]]]
    entries: list[EntrySpec] = field(default_factory=list)


def selection_params(selection: str, threshold: int, capacity: int) -> tuple[int, ...]:
    """``set_selection``'s parameters for a selection function."""
    levels = [card.LEVEL_NEVER if level is None else level for level in LEVELS[check_selection(selection)]]
    if not 0 < threshold <= capacity < 1 << 16:
        raise PlanError(f"selection needs 0 < threshold <= capacity < 65536, got {threshold} and {capacity}")
    return (threshold, capacity, *levels)


def slots_of(model: AdaptiveTables, index: int) -> tuple[int, ...]:
    """``set_candidates``'s parameters of entry `index`: escape, then 8 (port, VC, class) slots.

    With more candidates than slots (ties in dimensions of 2 nodes, whose + and -
    ports both lead to the neighbour), every port keeps its first adaptive VC and
    the other VCs fill the slots left, in port order; a card with more candidate
    ports than slots is refused.
    """
    entry = model.entry(index)
    candidates = list(entry.candidates)
    if len(candidates) > card.ADAPTIVE_SLOTS:
        firsts = [c for i, c in enumerate(candidates) if i == 0 or candidates[i - 1][0] != c[0]]
        if len(firsts) > card.ADAPTIVE_SLOTS:
            raise PlanError(
                f"card {model.network.card_names[entry.card_id]}: {len(firsts)} adaptive candidate ports "
                f"for PE {entry.dst_pe}; the card program has {card.ADAPTIVE_SLOTS} slots: these tables "
                "can be analysed, not emulated"
            )
        rest = [c for c in candidates if c not in firsts][: card.ADAPTIVE_SLOTS - len(firsts)]
        candidates = sorted(firsts + rest)
    params = [entry.escape_port, entry.escape_vc]
    for port, vc in candidates:
        params += [port, vc, int(model.port_class[entry.card_id, port])]
    params += [0, 0, 0] * (card.ADAPTIVE_SLOTS - len(candidates))
    return tuple(params)


def plan_adaptive_cards(
    model: AdaptiveTables,
    selection: str,
    *,
    threshold: int = DEFAULT_THRESHOLD,
    capacity: int = DEFAULT_CAPACITY,
    hop_limit: int = card.MAX_TRACE,
) -> dict[str, AdaptiveCardPlan]:
    """Every card's plan (by card name) for the adaptive tables `model` and a selection function."""
    if model.queues_per_port() > card.PRIORITY_QUEUES:
        raise PlanError(
            f"adaptive routing with escape {model.escape_algorithm} needs {model.queues_per_port()} queues "
            f"per port; a port has {card.PRIORITY_QUEUES}: these tables can be analysed, not emulated"
        )
    net = model.network
    chosen = selection_params(selection, threshold, capacity)
    plans = {
        name: AdaptiveCardPlan(
            name,
            card_id,
            {
                card.CARD_CONFIG: (card.SET_CARD, (card_id, hop_limit)),
                card.SELECTION_CONFIG: (card.SET_SELECTION, chosen),
            },
        )
        for card_id, name in enumerate(net.card_names)
    }
    vcs = sorted({vc for plan in model.vc_plan.values() for vc in plan["escape"] + plan["adaptive"]})
    for plan in plans.values():
        plan.entries += [EntrySpec(card.VC_QUEUE, (0, vc), card.SET_QUEUE, (vc,)) for vc in vcs]
    for host in model.topology.hosts:
        plans[host.card].entries += [
            EntrySpec(card.HOST_IN, (host.port,), card.FROM_HOST, (host.pe, 0)),
            EntrySpec(card.HOST_OUT, (host.port,), card.TO_HOST, ()),
        ]
    for index in range(len(model)):
        name = net.card_names[int(model.card_id[index])]
        match = (int(model.ingress_port[index]), int(model.dst_pe[index]), 0, int(model.escaped[index]))
        plans[name].entries.append(
            EntrySpec(card.ADAPTIVE_ROUTE, match, card.SET_CANDIDATES, slots_of(model, index))
        )
    return plans
