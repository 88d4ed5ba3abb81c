"""The papers' internal-link metrics, exactly as docs/contracts.md defines `paper_metric`.

* Twin fat trees (fat-tree notes §4.3): per stage, the number of paths (all
  ordered terminal pairs, DESTRO) through one twin switch that cross its
  internal link(s); k^(n+1)/2 per switch below the roots with the optimal pair
  configuration, 0 at the roots with all down ports on one card. Read from the
  tables: a path crosses a twin's internal link at most once per visit, so the
  count is the all-pairs load summed over the twin's internal egress entries.
* nDT tori (Andujar thesis: Table 1.1, nDT paper Prop 3.3, R_CBest): node-level transit paths
  crossing one node's internal link under DOR (ties +), uniform traffic, paths
  that start or end at the node excluded. Every node sees the same count
  (translation symmetry), so it is counted from one source node: for each
  destination, every intermediate node of the DOR path contributes its
  (input port, output port) pair, and the pairs whose ports lie on different
  cards cross. The pair histogram does not depend on the configuration, so
  comparing configurations costs one histogram.

>>> histogram = dor_transit_port_pairs((5, 5, 5))
>>> sum(histogram.values())          # all transit paths through a node of a 5x5x5 torus (torus notes I §2.5)
326
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from functools import cache
from itertools import product
from typing import Any

import numpy as np

from controller.analysis.paths import AllPairs
from controller.routing.table import USE_CODE, RoutingTables

#: a torus port (dimension, sign)
Port = tuple[int, int]


def dor_transit_port_pairs(dims: Sequence[int]) -> Counter[tuple[Port, Port]]:
    """Per (input port, output port), node-level DOR transit paths (ties +) through one node of a torus."""
    return Counter(_dor_transit_port_pairs(tuple(dims)))


@cache
def _dor_transit_port_pairs(dims: tuple[int, ...]) -> Counter[tuple[Port, Port]]:
    """``dor_transit_port_pairs`` kept per radices (a Python walk: 0.3 s for 16x16x16; callers get a copy)."""
    n = len(dims)
    histogram: Counter[tuple[Port, Port]] = Counter()
    for target in product(*(range(k) for k in dims)):
        if not any(target):
            continue
        position = [0] * n
        entered: Port | None = None
        while True:
            step: Port | None = None
            for i, k in enumerate(dims):
                offset = (target[i] - position[i]) % k
                if offset:
                    step = (i, 1 if 2 * offset <= k else -1)
                    break
            if step is None:
                break
            if entered is not None:
                histogram[entered, step] += 1
            position[step[0]] = (position[step[0]] + step[1]) % dims[step[0]]
            entered = (step[0], -step[1])
    return histogram


def transit_crossings(histogram: Counter[tuple[Port, Port]], card_of: Callable[[int, int], int]) -> int:
    """Transit paths whose input and output ports are on different cards under the placement `card_of`."""
    return sum(count for (into, out), count in histogram.items() if card_of(*into) != card_of(*out))


def ndt_paper_metric(
    dims: Sequence[int], card_of: Callable[[int, int], int], config_text: str
) -> dict[str, Any]:
    """The nDT metric (Table 1.1 / R_C) for a port configuration, with its scope and unit."""
    histogram = dor_transit_port_pairs(dims)
    return {
        "value": transit_crossings(histogram, card_of),
        "transit_paths": sum(histogram.values()),
        "unit": "node pairs (paths)",
        "scope": "per node (every node alike): node-level transit paths through the node that cross its "
        "internal link under DOR (ties +), uniform traffic, paths starting or ending at the node "
        "excluded (Andujar thesis Table 1.1, nDT paper Prop 3.3, R_C)",
        "config": config_text,
    }


def fattree_paper_metric(pairs: AllPairs, loads: np.ndarray | None = None) -> dict[str, Any]:
    """Villar 2011's per-switch internal-link crossings, per stage (min and max over the stage's twins)."""
    tables = pairs.tables
    if loads is None:
        loads = pairs.loads()
    crossing = np.isin(tables.use, [USE_CODE["ascend"], USE_CODE["turn"], USE_CODE["descend"]])
    cards = tables.network.num_cards
    per_card = np.bincount(tables.card_id[crossing], weights=loads[crossing], minlength=cards)
    return fattree_stage_metric(tables, per_card)


def fattree_stage_metric(tables: RoutingTables, per_card: np.ndarray) -> dict[str, Any]:
    """Seed 000's metric from the paths crossing each card's internal links (``per_card``), per stage."""
    net, params = tables.network, tables.topology.params
    k, n = int(params["k"]), int(params["n"])
    per_twin: dict[str, float] = {}
    for card in range(net.num_cards):
        per_twin[net.twin_of_card[card]] = per_twin.get(net.twin_of_card[card], 0.0) + per_card[card]
    stage_of = {twin.name: twin.stage for twin in tables.topology.twins.values()}
    stages = []
    for stage in range(n):
        values = [value for name, value in per_twin.items() if stage_of[name] == stage]
        stages.append(
            {
                "stage": stage,
                "min": int(round(min(values))),
                "max": int(round(max(values))),
                "optimal_configuration_value": k ** (n + 1) // 2 if stage < n - 1 else 0,
            }
        )
    return {
        "per_stage": stages,
        "unit": "paths",
        "scope": "per twin switch, by stage: ordered terminal pairs (all N(N-1), DESTRO) whose path crosses "
        "that twin's internal links (fat-tree notes §4.3); min/max over the stage's twins; "
        "optimal_configuration_value is the paper's k^(n+1)/2 below the roots and 0 at the roots",
    }
