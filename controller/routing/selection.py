"""The thesis's four selection functions for adaptive nDT routing (torus notes II §5.4), as priority levels.

A selection function picks one of the adaptive candidates from local state.
Each candidate's port has a class (controller.routing.adaptive.PORT_CLASSES:
external port of a dimension whose ring stays on one card, port of a split
dimension such as d_h on CBest, internal link); a function gives each class a
priority level (0 first) or leaves it out:

* ``round-robin``: every candidate on level 0 (the reference nD-torus selection);
* ``no-internal``: the internal link's adaptive VCs are never selected;
* ``2-priority``: internal link last;
* ``3-priority``: other dimensions, then d_h, then the internal link (the thesis's best).

Within the levels in order: round-robin among the candidates of the level
whose occupancy is below the threshold ("low"), else among its available
ones ("high"), else the next level; with none, the escape. The priority level
is tested before the occupancy range (the notes' reading of "IL VCs only when
no other selectable VC is available"). "Available" here means that the queue
is below its capacity, since the cards have no credits.

>>> LEVELS["3-priority"], LEVELS["no-internal"]
((0, 1, 2), (0, 0, None))
>>> select([(1, 2), (4, 4)], [0, 2], {(1, 2): 5, (4, 4): 0}, "3-priority", threshold=4, capacity=64)
(1, 2)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from controller.routing.errors import RoutingError

#: selection function -> priority level of each port class (external, split, internal); None: never
LEVELS: dict[str, tuple[int | None, int | None, int | None]] = {
    "round-robin": (0, 0, 0),
    "no-internal": (0, 0, None),
    "2-priority": (0, 0, 1),
    "3-priority": (0, 1, 2),
}
SELECTIONS = tuple(LEVELS)


def check_selection(name: str) -> str:
    """The selection function's name, or RoutingError naming the four."""
    if name not in LEVELS:
        raise RoutingError(f"selection must be one of {', '.join(SELECTIONS)}, got {name!r}")
    return name


def select(
    candidates: Sequence[tuple[int, int]],
    classes: Sequence[int],
    occupancy: Mapping[tuple[int, int], int],
    selection: str,
    *,
    threshold: int,
    capacity: int,
    start: int = 0,
) -> tuple[int, int] | None:
    """The (port, VC) the selection function takes among `candidates`, or None for the escape.

    `classes[i]` is the port class of candidate i, `occupancy` the queued
    packets per (port, VC); round-robin starts at position `start` of the
    candidate list (the card's round-robin pointer).
    """
    levels = LEVELS[check_selection(selection)]
    order = [(start + i) % len(candidates) for i in range(len(candidates))] if candidates else []
    for level in sorted({lv for lv in levels if lv is not None}):
        mine = [i for i in order if levels[classes[i]] == level]
        low = [i for i in mine if occupancy.get(candidates[i], 0) < threshold]
        if low:
            return candidates[low[0]]
        high = [i for i in mine if occupancy.get(candidates[i], 0) < capacity]
        if high:
            return candidates[high[0]]
    return None
