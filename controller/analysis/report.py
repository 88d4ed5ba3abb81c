"""Everything `twinnet analyze` reports for a topology and its route tables, as one JSON-ready dict.

Field meanings, units and scopes are in ``UNITS``, which the report carries
under "units" so that every number is read the same way (docs/contracts.md,
"Metrics").
"""

from __future__ import annotations

import json
from typing import Any, TextIO

import numpy as np

from controller.analysis.deadlock import cdg_report
from controller.analysis.metrics import dor_transit_port_pairs, fattree_stage_metric, ndt_paper_metric
from controller.analysis.paths import AllPairs
from controller.analysis.totals import Totals
from controller.analysis.traffic import Traffic
from controller.routing.network import HOST
from controller.routing.registry import UNSAFE
from controller.routing.table import USES, RoutingTables

UNITS: dict[str, str] = {
    "paths": "ordered pairs (src, dst) of distinct PEs routed: N(N-1)",
    "hops": "card-to-card links per path (external and internal; host links excluded), over all paths; "
    "avg/max over paths; 'external' and 'internal' count each kind apart; 'paths_with_internal' "
    "is the fraction of paths using at least one internal link; 'diameter' = max",
    "switch_hops": "fat trees: twin switches (logical switches) visited per path, the measure of Villar 2011",
    "internal_link_crossings": "internal-link traversals summed over all paths (each of r links counted)",
    "paper_metric": "the papers' count, scope in the field (docs/contracts.md); null where the papers "
    "define none",
    "deadlock_free": "the channel dependency graph of all paths (channels = (directed card-to-card link, "
    "queue)) has no cycle",
    "vcs_per_link": "distinct VCs the entries use, per link kind",
    "routing.unsafe": "null, or why the variant was chosen to be cyclic (to show deadlock)",
    "queues_per_port": "priority queues a port needs (highest queue index + 1)",
    "max_link_load": "with --traffic: the highest load on one physical directed link (host links and each of "
    "r internal links included), in units of one PE's injection bandwidth",
    "max_channel_load": "with --traffic: the highest load on one (directed card link, queue), same unit",
    "max_card_link_load": "with --traffic: the highest load on a card-to-card link (host links left out)",
    "busiest_links": "with --traffic: the five most loaded directed links, [card:port (name, kind), load]",
    "bottleneck": "with --traffic: the link with max_link_load",
    "throughput_bound": "with --traffic: 1 / max_link_load, the injection rate (fraction of link bandwidth "
    "per PE) above which some link must saturate",
}


def hop_statistics(totals: Totals) -> dict[str, Any]:
    """avg/max of links per path, split into external and internal."""
    paths = totals.paths

    def summary(total: int, most: int) -> dict[str, float]:
        return {"avg": total / paths if paths else 0.0, "max": most}

    return {
        **summary(totals.links_sum, totals.links_max),
        "external": summary(totals.external_sum, totals.external_max),
        "internal": summary(totals.internal_sum, totals.internal_max),
        "paths_with_internal": totals.paths_with_internal / paths if paths else 0.0,
        "diameter": totals.links_max,
    }


def paper_metric(tables: RoutingTables, totals: Totals) -> tuple[dict[str, Any] | None, str | None]:
    """(metric, None) where the papers define one for this topology, else (None, reason)."""
    family = tables.topology.family
    if family == "twin-fattree":
        if tables.algorithm != "destro":
            return None, "Villar 2011 counts internal-link crossings under DESTRO only"
        assert totals.crossings_per_card is not None
        return fattree_stage_metric(tables, totals.crossings_per_card), None
    if family == "ndt":
        from controller.routing.torus_view import TorusView

        view = TorusView(tables.network)
        metric = ndt_paper_metric(
            view.dims, lambda i, s: int(view.card_of_port[i, 0 if s > 0 else 1]), view.config_text()
        )
        metric["routing_note"] = (
            f"defined under DOR at node level, whatever the tables' algorithm ({tables.algorithm})"
        )
        return metric, None
    if family == "kary-ntree":
        return None, "single-card switches have no internal link"
    if family == "torus":
        return None, "a torus of single-card nodes has no internal link"
    return None, f"the papers define no internal-link metric for a {family!r} topology"


def prepare_report(tables: RoutingTables, traffic: Traffic | None) -> None:
    """Compute, and keep, the parts of the report that do not depend on the totals (the traffic's
    injection and flow count, the nDT metric's histogram): the parent does it while workers run."""
    if traffic is not None:
        traffic.injection(tables.network.num_pes)
        _ = traffic.num_flows
    if tables.topology.family == "ndt":
        from controller.routing.torus_view import TorusView

        dor_transit_port_pairs(TorusView(tables.network).dims)


def link_loads(pairs: AllPairs, traffic: Traffic) -> dict[tuple[int, int], float]:
    """Load of `traffic` on every directed link a card sends on, {(card id, egress port): load}.

    Units: one PE's injection bandwidth (each PE injects one unit in all);
    card-to-card links (each of r internal links apart) and host (ejection) links.
    """
    load = _link_load_array(pairs, pairs.loads(pairs.weights_of(traffic.src, traffic.dst, traffic.weight)))
    return {divmod(int(i), pairs.width): float(load[i]) for i in np.flatnonzero(load)}


def _link_load_array(pairs: AllPairs, load: np.ndarray) -> np.ndarray:
    """Per-entry loads summed per directed link, indexed card * width + port."""
    t = pairs.tables
    link = t.card_id.astype(np.int64) * pairs.width + t.egress_port
    return np.bincount(link, weights=load, minlength=t.network.num_cards * pairs.width)


def traffic_loads(pairs: AllPairs, traffic: Traffic) -> dict[str, Any]:
    """Loads of a pattern: maxima per link and channel, busiest links, bottleneck, throughput bound."""
    totals = Totals(pairs.tables.network, pairs.tables.num_classes, traffic=True, unit_loads=False)
    matrix = traffic.pair_weights(pairs.first, pairs.last, pairs.tables.network.num_pes)
    totals.add(pairs, pairs.block_weights(matrix))
    return loads_report(totals, traffic)


def loads_report(totals: Totals, traffic: Traffic) -> dict[str, Any]:
    """The --traffic fields of the report from the gathered link and channel loads."""
    net, width = totals.network, totals.width
    link_load = totals.link_load
    assert link_load is not None
    injection = traffic.injection(net.num_pes)

    def name(index: int) -> str:
        card, port = divmod(index, width)
        kind = net.link_kind_name(card, port)
        return f"{net.card_names[card]}:{port} ({net.port_name(card, port)}, {kind})"

    busiest = np.argsort(-link_load, kind="stable")[:5]
    worst = float(link_load[busiest[0]]) if link_load.size else 0.0
    bottleneck = name(int(busiest[0])) if link_load.size else "none"
    if injection.size and injection.max() > worst:
        worst = float(injection.max())
        bottleneck = f"injection link of PE {int(np.argmax(injection))}"
    return {
        "traffic": traffic.name,
        "flows": traffic.num_flows,
        "max_link_load": worst,
        "max_channel_load": totals.max_channel_load(),
        "max_card_link_load": float(link_load[net.port_kind.ravel() != HOST].max(initial=0.0)),
        "busiest_links": [[name(int(i)), float(link_load[i])] for i in busiest if link_load[i] > 0],
        "bottleneck": bottleneck,
        "throughput_bound": (1.0 / worst) if worst > 0 else None,
    }


def analyze(tables: RoutingTables, traffic: Traffic | None = None) -> dict[str, Any]:
    """The full report of `twinnet analyze` for tables (and optionally a traffic pattern)."""
    from controller.analysis.stream import gather, table_blocks

    return build_report(tables, gather(tables, table_blocks(tables), traffic), traffic)


def build_report(tables: RoutingTables, totals: Totals, traffic: Traffic | None = None) -> dict[str, Any]:
    """The report from the figures gathered over all blocks; `tables` gives the conventions (may be empty)."""
    deadlock = cdg_report(totals.dependencies, tables.network, totals.queues_per_port)
    topology = tables.topology
    metric, reason = paper_metric(tables, totals)
    report: dict[str, Any] = {
        "topology": {
            "family": topology.family,
            "params": {
                k: (v if isinstance(v, (int, float, str, bool, list)) else str(v))
                for k, v in topology.params.items()
            },
            "counts": topology.counts(),
        },
        "routing": {
            "algorithm": tables.algorithm,
            "entries": totals.entries,
            "max_entries_per_card": int(totals.entries_per_card.max(initial=0)),
            "num_classes": tables.num_classes,
            "queue_rule": tables.queue_rule,
            "vc_names": {
                kind: {str(vc): name for vc, name in names.items()} for kind, names in tables.vc_names.items()
            },
            "notes": tables.notes,
            "unsafe": UNSAFE.get(tables.algorithm),
        },
        "paths": totals.paths,
        "hops": hop_statistics(totals),
        "internal_link_crossings": totals.internal_sum,
        "paper_metric": metric,
        "deadlock_free": deadlock.deadlock_free,
        "deadlock": deadlock.to_json(),
        "vcs_per_link": totals.vcs_per_link(),
        "queues_per_port": totals.queues_per_port,
        "units": dict(UNITS),
    }
    if reason is not None:
        report["paper_metric_reason"] = reason
    if topology.family in ("kary-ntree", "twin-fattree"):
        report["switch_hops"] = {
            "avg": (totals.external_sum + totals.paths) / totals.paths if totals.paths else 0.0,
            "max": totals.external_max + 1 if totals.paths else 0,
        }
    if traffic is not None:
        report.update(loads_report(totals, traffic))
    return report


def write_paths(pairs: AllPairs, out: TextIO) -> int:
    """Write each path as a JSON line: src, dst, routing_class, hops (card, in, out, vc, queue, kind, use)."""
    tables, net = pairs.tables, pairs.tables.network
    queues = tables.queues()
    kinds = {0: "none", 1: "external", 2: "internal", 3: "host"}
    for index in range(pairs.num_paths):
        hops = []
        for e in pairs.path_entries(index):
            card, egress = int(tables.card_id[e]), int(tables.egress_port[e])
            hops.append(
                [
                    card,
                    int(tables.ingress_port[e]),
                    egress,
                    int(tables.vc[e]),
                    int(queues[e]),
                    kinds[int(net.port_kind[card, egress])],
                    USES[int(tables.use[e])],
                ]
            )
        out.write(
            json.dumps(
                {
                    "src": int(pairs.src[index]),
                    "dst": int(pairs.dst[index]),
                    "routing_class": int(tables.routing_class[pairs.start[index]]),
                    "hops": hops,
                }
            )
        )
        out.write("\n")
    return pairs.num_paths
