"""Adaptive routing in a run: its tables and card plans, the path check, and what the report shows.

One source of truth, as for deterministic routing: the adaptive tables
(controller.routing.adaptive) are computed once; the cards' plans
(controller.adaptive_plan), the escape routing's tables and paths
(``escape_tables``: the "model path" of a probe, DORT on the nDT, DOR on a
torus), Duato's condition (controller.analysis.duato), the channels and the
path check are all read off them.

A measured path is correct (verdict ``allowed``) when every hop is one the
candidate tables allow (controller.routing.adaptive_check.path_problems): an
adaptive candidate with the trace's adaptive bit set, or the escape with it
clear, after which only escapes. The report adds how often each kind of VC was
used (the trace's adaptive bit, per link kind) and how measured paths compare
with the escape path and with the fewest links an allowed path takes.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from controller.adaptive_plan import plan_adaptive_cards
from controller.analysis.duato import DuatoReport, check_duato
from controller.routing.adaptive import AdaptiveTables, adaptive_tables, escape_tables
from controller.routing.adaptive_check import FewestHops, path_problems
from controller.routing.errors import RoutingError
from controller.routing.network import EXTERNAL, INTERNAL
from controller.routing.selection import check_selection
from controller.routing.table import RoutingTables
from controller.twins import CardPlan, PlanError
from emulation.measure import (
    ALLOWED,
    MISDELIVERED,
    Arrival,
    Divergence,
    ModelPaths,
    ProbeResult,
    SentProbe,
    distribution,
    judge,
)
from emulation.run_settings import RunInputError
from topologies.model import Topology

#: the largest network a run routes adaptively: Duato's check and the plans walk the tables in Python
#: (the analysis's limit, controller.analysis.adaptive_report.MAX_PES)
MAX_ADAPTIVE_PES = 512
_KIND_NAMES = {EXTERNAL: "external", INTERNAL: "internal"}


@dataclass
class AdaptiveRouting:
    """A run's adaptive routing: the tables, what the cards get, and what the checks read."""

    selection: str
    model: AdaptiveTables
    #: the escape routing's route tables, read off the adaptive tables (a probe's "model path")
    escape: RoutingTables
    duato: DuatoReport
    plans: dict[str, CardPlan]
    fewest: FewestHops
    #: (card id, egress port, VC) of every adaptive and escape channel onto a card-to-card link
    channels: set[tuple[int, int, int]]

    @property
    def name(self) -> str:
        return f"adaptive {self.selection} (escape {self.model.escape_algorithm})"


def prepare_adaptive(topology: Topology, selection: str | None) -> AdaptiveRouting:
    """The adaptive routing of `topology` with a selection function (default 3-priority), checked."""
    try:
        chosen = check_selection(selection or "3-priority")
        if len(topology.hosts) > MAX_ADAPTIVE_PES:
            raise RunInputError(
                f"adaptive routing is emulated on at most {MAX_ADAPTIVE_PES} PEs (its checks walk the "
                f"tables in Python); this network has {len(topology.hosts)}"
            )
        model = adaptive_tables(topology)
        plans = plan_adaptive_cards(model, chosen)
    except (RoutingError, PlanError) as error:
        raise RunInputError(f"--routing adaptive: {error}") from error
    return AdaptiveRouting(
        chosen, model, escape_tables(model), check_duato(model), plans, FewestHops(model), channels_of(model)
    )


def channels_of(model: AdaptiveTables) -> set[tuple[int, int, int]]:
    """(card, egress port, VC) of every escape and adaptive candidate that leaves on a card-to-card link."""
    net = model.network
    channels: set[tuple[int, int, int]] = set()
    for card, port, vc in set(
        zip(model.card_id.tolist(), model.escape_port.tolist(), model.escape_vc.tolist(), strict=True)
    ):
        if int(net.port_kind[card, port]) in _KIND_NAMES:
            channels.add((card, port, vc))
    for card, mask in set(zip(model.card_id.tolist(), model.candidate_ports.tolist(), strict=True)):
        for port in range(1, net.max_port + 1):
            if mask >> port & 1 and int(net.port_kind[card, port]) in _KIND_NAMES:
                channels.update((card, port, vc) for vc in model.adaptive_vcs(card, port))
    return channels


def longest_cards_bound(model: AdaptiveTables) -> int:
    """Cards on the longest path the adaptive tables may allow, bounded from above.

    Every move is minimal in its ring, so a path makes at most sum(k_i // 2)
    external hops; on an nDT at most one internal-link hop per node it visits
    (the internal link is a candidate only where the escape takes it).
    """
    dims = model.topology.params.get("dims") or ()
    external = sum(int(k) // 2 for k in dims)
    links = 2 * external + 1 if model.topology.family == "ndt" else external
    return links + 1


def judge_adaptive(
    sent: Iterable[SentProbe], arrivals: Iterable[Arrival], routing: AdaptiveRouting, escape_paths: ModelPaths
) -> list[ProbeResult]:
    """A result per sent probe: ``allowed`` when every hop is one the candidate tables allow.

    The probe's ``model`` stays the escape routing's path (for the report's
    comparison and the losses); a path the tables do not allow is ``differs``
    with the first problem as its divergence.
    """
    results = judge(sent, arrivals, escape_paths)
    for result in results:
        if result.arrival is None or result.verdict == MISDELIVERED:
            continue
        hops = result.arrival.hops
        path = [(h.card_id, h.in_port, h.out_port, h.vc, h.adaptive) for h in hops]
        problems = path_problems(routing.model, result.src, result.dst, path)
        if problems:
            found = re.match(r"hop (\d+)", problems[0])
            index = int(found.group(1)) - 1 if found else len(hops)
            result.verdict = "differs"
            result.divergence = Divergence(index, problems[0], "a path the candidate tables allow")
        else:
            result.verdict = ALLOWED
            result.divergence = None
    return results


def vc_kinds(results: Iterable[ProbeResult], routing: AdaptiveRouting) -> dict[str, Any]:
    """How often received probes took adaptive and escape VCs on card-to-card links (trace adaptive bit)."""
    net = routing.model.network
    hops: Counter[tuple[str, str]] = Counter()
    escaped = all_adaptive = probes = bit_vc_disagree = 0
    for result in results:
        if result.arrival is None:
            continue
        kinds = []
        for hop in result.arrival.hops:
            if not (0 <= hop.card_id < net.num_cards and 0 < hop.out_port <= net.max_port):
                continue
            link = _KIND_NAMES.get(int(net.port_kind[hop.card_id, hop.out_port]))
            if link is None:
                continue
            kind = "adaptive" if hop.adaptive else "escape"
            kinds.append(kind)
            hops[link, kind] += 1
            bit_vc_disagree += bool(hop.adaptive) != routing.model.is_adaptive(
                hop.card_id, hop.out_port, hop.vc
            )
        probes += 1
        escaped += "escape" in kinds
        all_adaptive += bool(kinds) and "escape" not in kinds
    total = sum(hops.values())
    adaptive = sum(count for (_, kind), count in hops.items() if kind == "adaptive")
    return {
        "unit": "card-to-card hops of received probes, by the VC kind the trace records (adaptive bit)",
        "adaptive_hops": adaptive,
        "escape_hops": total - adaptive,
        "adaptive_share": round(adaptive / total, 4) if total else None,
        "by_link": {
            link: {kind: hops[link, kind] for kind in ("adaptive", "escape")}
            for link in ("external", "internal")
        },
        "probes": probes,
        "probes_that_escaped": escaped,
        "probes_all_adaptive": all_adaptive,
        "hops_whose_vc_is_not_of_their_kind": bit_vc_disagree,
    }


def lengthening(results: Iterable[ProbeResult], routing: AdaptiveRouting) -> dict[str, Any]:
    """Measured card-to-card links of received probes against the escape path's and the fewest allowed."""
    measured, versus_escape, versus_fewest = [], [], []
    escape_total = fewest_total = 0
    for result in results:
        if result.arrival is None or result.verdict != ALLOWED or result.model is None:
            continue
        links = len(result.arrival.hops) - 1
        escape = len(result.model.hops) - 1
        fewest = routing.fewest(result.src, result.dst)
        measured.append(links)
        versus_escape.append(links - escape)
        escape_total += escape
        if fewest is not None:
            versus_fewest.append(links - fewest)
            fewest_total += fewest
    count = len(measured)
    return {
        "unit": "card-to-card links (external and internal) per received probe on an allowed path",
        "probes": count,
        "mean_measured": round(sum(measured) / count, 4) if count else None,
        "mean_escape_path": round(escape_total / count, 4) if count else None,
        "mean_fewest_allowed": round(fewest_total / len(versus_fewest), 4) if versus_fewest else None,
        "longer_than_escape": sum(1 for d in versus_escape if d > 0),
        "as_long_as_escape": sum(1 for d in versus_escape if d == 0),
        "shorter_than_escape": sum(1 for d in versus_escape if d < 0),
        "minus_escape": {
            **distribution(versus_escape),
            "histogram": dict(sorted(Counter(versus_escape).items())),
        },
        "minus_fewest": {
            **distribution(versus_fewest),
            "histogram": dict(sorted(Counter(versus_fewest).items())),
        },
        "escape_path": f"the escape routing's path ({routing.model.escape_algorithm}), as the tables give it",
        "fewest_allowed": "the fewest links of any path the candidate tables allow (minimal)",
    }


def report_section(results: list[ProbeResult], routing: AdaptiveRouting) -> dict[str, Any]:
    """report.json's ``adaptive`` section: the routing, Duato's condition, VC kinds and path lengths."""
    return {
        "selection": routing.selection,
        "escape": routing.model.escape_algorithm,
        "vc_plan": routing.model.vc_plan,
        "table_entries": len(routing.model),
        "deadlock_free": routing.duato.deadlock_free,
        "duato": routing.duato.to_json(),
        "vc_kinds": vc_kinds(results, routing),
        "path_lengthening": lengthening(results, routing),
    }
