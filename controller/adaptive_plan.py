"""What each card holds for adaptive routing: the adaptive tables and a selection function as card entries.

The plans are controller.twins.CardPlan, as the deterministic tables give them, so
that the installer (controller.install) writes both the same way. Per card
(p4src/README.md, "Adaptive routing"):

* ``card_config``'s default ``set_card(card id, hop limit)``;
* ``selection_config``'s default ``set_selection(threshold, capacity, level per
  port class)`` from controller.routing.selection.LEVELS (level 3: never), as
  ``CardPlan.selection``;
* per host port ``host_in`` (class 0) and ``host_out``;
* ``vc_queue``: every VC of the plan on queue = VC (class 0);
* every entry of the adaptive tables as ``adaptive_route`` (ingress port, dst PE,
  class 0, escaped) -> ``set_candidates(escape port, escape VC, 8 slots of (port,
  VC, port class))``, candidates in port order, empty slots port 0.

An entry with more than 8 candidates (ties in dimensions of 2 nodes) keeps one
adaptive VC per port first (``slots_of``); more than 8 candidate ports are refused.
"""

from __future__ import annotations

from controller.routing.adaptive import AdaptiveTables
from controller.routing.selection import LEVELS, check_selection
from controller.translate import EntrySpec
from controller.twins import CardPlan, PlanError, base_plans
from p4src import card

#: occupancy threshold between "low" and "high", and the occupancy at which a VC is not available
#: (packets; the embedded target's queues hold 64 by default)
DEFAULT_THRESHOLD, DEFAULT_CAPACITY = 4, 48


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
) -> dict[str, CardPlan]:
    """Every card's plan (by card name) for the adaptive tables `model` and a selection function."""
    if model.queues_per_port() > card.PRIORITY_QUEUES:
        raise PlanError(
            f"adaptive routing with escape {model.escape_algorithm} needs {model.queues_per_port()} queues "
            f"per port; a port has {card.PRIORITY_QUEUES}: these tables can be analysed, not emulated"
        )
    net = model.network
    if net.card_names != [c.name for c in sorted(model.topology.cards.values(), key=lambda c: c.card_id)]:
        raise PlanError("the adaptive tables were computed for another topology (its cards differ)")
    chosen = (card.SET_SELECTION, selection_params(selection, threshold, capacity))
    plans = base_plans(model.topology, hop_limit, lambda pe: 0)
    vcs = sorted({vc for plan in model.vc_plan.values() for vc in plan["escape"] + plan["adaptive"]})
    for plan in plans.values():
        plan.selection = chosen
        for vc in vcs:
            plan.add(EntrySpec(card.VC_QUEUE, (0, vc), card.SET_QUEUE, (vc,)))
    for index in range(len(model)):
        name = net.card_names[int(model.card_id[index])]
        match = (int(model.ingress_port[index]), int(model.dst_pe[index]), 0, int(model.escaped[index]))
        plans[name].add(EntrySpec(card.ADAPTIVE_ROUTE, match, card.SET_CANDIDATES, slots_of(model, index)))
    return plans
