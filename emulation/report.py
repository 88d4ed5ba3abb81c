"""A run's report: report.json (everything, with units), paths.csv (per probe), pictures, a terminal summary.

Files under the run's output directory:

* ``report.json``: settings, topology, routing, verdicts, accounting, channel
  check, internal-link crossings vs the analysis, latency and path-length
  distributions, link loads, timings; every quantity carries its unit or a
  ``unit`` field next to it (docs/contracts.md);
* ``paths.csv``: one row per sent probe (ids, pair, verdict, latency, the
  measured path and the model's as ``card:in>out/vc`` lists);
* ``link_loads.png``: the topology with every card-to-card link coloured and
  sized by the probes it carried (external and internal links on their own
  colour scales);
* ``path_lengths.png``: histograms of measured path lengths and of
  internal-link crossings per probe;
* ``latency.png``: latency distributions per routing class and per queue.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

from controller.routing import UNSAFE
from emulation.adaptive_run import lengthening, report_section, vc_kinds
from emulation.measure import (
    ALLOWED,
    EQUAL,
    LOST,
    distribution,
    hop_kinds,
    latency_groups,
    link_loads,
    verdict_counts,
)
from emulation.perf_metrics import POINT_UNITS
from emulation.run import RunOutcome

#: Lost probes listed one by one in report.json (the rest are counted).
LOST_PROBES_LISTED = 200
#: Divergences listed one by one in report.json.
DIVERGENCES_LISTED = 50


def write_report(outcome: RunOutcome, pictures: bool = True) -> dict[str, Path]:
    """Write every file of the report into ``outcome.out_dir``; return their paths by name."""
    out = outcome.out_dir
    out.mkdir(parents=True, exist_ok=True)
    files = {"json": out / "report.json", "csv": out / "paths.csv"}
    data = report_data(outcome)
    files["json"].write_text(json.dumps(data, indent=1) + "\n")
    write_paths_csv(outcome, files["csv"])
    if pictures:
        from emulation import report_pictures

        files.update(report_pictures.draw_all(outcome, out))
    return files


def _hops_text(hops, model: bool = False) -> str:
    if model:
        return " ".join(f"{h.card_id}:{h.ingress_port}>{h.egress_port}/{h.vc}" for h in hops)
    return " ".join(f"{h.card_id}:{h.in_port}>{h.out_port}/{h.vc}" for h in hops)


def write_paths_csv(outcome: RunOutcome, path: Path) -> None:
    """One row per sent probe."""
    tables = outcome.plan.tables
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "probe_id",
                "src_pe",
                "dst_pe",
                "routing_class",
                "verdict",
                "latency_us",
                "send_us",
                "receive_us",
                "cards",
                "external_hops",
                "internal_hops",
                "max_qdepth_pkts",
                "measured_path",
                "model_path",
                "divergence",
                "loss_cause",
            ]
        )
        for r in outcome.results:
            a = r.arrival
            kinds = Counter(hop_kinds(a.hops, tables)) if a else Counter()
            writer.writerow(
                [
                    r.probe_id,
                    r.src,
                    r.dst,
                    a.routing_class if a else "",
                    r.verdict,
                    r.latency_us if a else "",
                    r.send_us,
                    a.receive_us if a else "",
                    len(a.hops) if a else "",
                    kinds["external"] if a else "",
                    kinds["internal"] if a else "",
                    max((h.qdepth for h in a.hops), default=0) if a else "",
                    _hops_text(a.hops) if a else "",
                    _hops_text(r.model.hops, model=True) if r.model else "",
                    str(r.divergence) if r.divergence else "",
                    r.cause or "",
                ]
            )


def _link_load_rows(outcome: RunOutcome) -> list[dict[str, Any]]:
    net = outcome.plan.tables.network
    loads = link_loads(outcome.results)
    rows = []
    for (card, port), count in sorted(loads.items()):
        if not (0 <= card < net.num_cards and 0 <= port <= net.max_port):
            continue
        kind = net.link_kind_name(card, port)
        peer = int(net.peer_card[card, port])
        rows.append(
            {
                "card": net.card_names[card],
                "port": port,
                "port_name": net.port_name(card, port),
                "kind": kind,
                "to": net.card_names[peer] if peer >= 0 else f"h{int(net.host_at[card, port])}",
                "probes": count,
            }
        )
    return rows


def report_data(outcome: RunOutcome) -> dict[str, Any]:
    """The content of report.json."""
    plan, tables, results = outcome.plan, outcome.plan.tables, outcome.results
    received = [r for r in results if r.arrival is not None]
    lengths = [len(r.arrival.hops) - 1 for r in received]
    internal = [Counter(hop_kinds(r.arrival.hops, tables))["internal"] for r in received]
    groups = latency_groups(results, tables)
    accounting = outcome.accounting.to_json()
    accounting["lost_probes_listed"] = min(len(accounting["lost_probes"]), LOST_PROBES_LISTED)
    accounting["lost_probes"] = accounting["lost_probes"][:LOST_PROBES_LISTED]
    divergences = [
        {"probe_id": r.probe_id, "src": r.src, "dst": r.dst, "verdict": r.verdict, "where": str(r.divergence)}
        for r in results
        if r.divergence is not None
    ]
    settings = plan.settings
    verdicts = verdict_counts(results)
    link_rate = settings.effective_link_rate()
    return {
        "schema": "twinnet run report 1",
        "ok": outcome_ok(outcome),
        "topology": {
            "family": plan.topology.family,
            "params": {
                k: v for k, v in plan.topology.params.items() if isinstance(v, (int, float, str, bool, list))
            },
            "counts": plan.topology.counts(),
        },
        "routing": {
            "algorithm": "adaptive" if plan.adaptive is not None else tables.algorithm,
            "name": plan.routing_name,
            "table_entries": len(plan.adaptive.model) if plan.adaptive is not None else len(tables),
            "entries_installed": outcome.entries_installed,
            "queues_per_port": tables.queues_per_port(),
            "num_classes": tables.num_classes,
            "queue_rule": tables.queue_rule,
            "longest_model_path_cards": plan.longest_path_cards,
            "dependency_graph_acyclic": plan.acyclic,
            "deadlock_check": "Duato's condition on the adaptive tables"
            if plan.adaptive is not None
            else "channel dependency graph of the route tables",
            "unsafe": UNSAFE.get(tables.algorithm),
        },
        "target": outcome.target,
        "traffic": {
            "pattern": plan.traffic.name,
            "seed": settings.seed,
            **outcome.injection,
            "units": {
                "rate_pps_per_host": "probes/s per host",
                "offered_pps_total": "probes/s",
                "achieved_send_pps_total": "probes/s",
                "max_lateness_s": "s",
                "size_bytes": "bytes per frame as the host sends it (Ethernet header included)",
                "schedule_duration_s": "s",
            },
        },
        "verdicts": {
            **verdicts,
            "unit": "probes",
            "meaning": "equal: measured path equals the model's hop by hop (card, ingress, egress, VC, "
            "priority); allowed (adaptive routing): every hop is an adaptive candidate or the escape of "
            "the candidate tables, escapes to the end once escaped; differs: see divergences; "
            "misdelivered: another host received it; lost: never received (see accounting)",
        },
        "adaptive": report_section(results, plan.adaptive) if plan.adaptive is not None else None,
        "divergences": divergences[:DIVERGENCES_LISTED],
        "divergences_total": len(divergences),
        "accounting": accounting,
        "dead_cards": outcome.dead_cards,
        "channels": outcome.channels.to_json(),
        "internal_link_crossings": outcome.crossings.to_json(),
        "path_length": {
            "unit": "card-to-card links per received probe (host links excluded)",
            **distribution(lengths),
            "histogram": dict(sorted(Counter(lengths).items())),
        },
        "internal_crossings_per_probe": {
            "unit": "internal links per received probe",
            **distribution(internal),
            "histogram": dict(sorted(Counter(internal).items())),
        },
        "latency_us": _latency(
            received, groups, "us, one-way: receiver kernel clock - send time in the probe"
        ),
        "latency_packet_times": _latency(
            received,
            groups,
            f"packet times (link times: 1 / {link_rate:g} packets/s), one-way: latency_us x link rate / 1e6",
            link_rate / 1e6,
        )
        if link_rate
        else None,
        "queue_depth_pkts": {
            "unit": "packets queued at the egress port when the probe was enqueued (trace qdepth)",
            **distribution([h.qdepth for r in received for h in r.arrival.hops]),
        },
        "link_loads": {
            "unit": "received probes per directed link (card egress port)",
            "links": _link_load_rows(outcome),
        },
        "stray_probes": outcome.stray_probes,
        "timings_s": {
            **{k: round(v, 3) for k, v in outcome.timings.items()},
            "network": {k: round(v, 3) for k, v in outcome.network_timings.items()},
            "unit": "s",
        },
        "interrupted": outcome.interrupted,
        "lossless": outcome.lossless,
        "queue_drops": outcome.queue_drops,
        "deadlock": outcome.deadlock,
        "performance": _performance(outcome),
        "out_dir": str(outcome.out_dir),
    }


def _latency(received: list, groups: dict[str, dict], unit: str, scale: float = 1.0) -> dict[str, Any]:
    """Latency distributions of the received probes, all and by group, in µs times `scale`."""

    def dist(values) -> dict[str, Any]:
        figures = distribution([value * scale for value in values])
        return {key: round(v, 6) if isinstance(v, float) else v for key, v in figures.items()}

    return {
        "unit": unit,
        "all": dist([r.latency_us for r in received]),
        "by_routing_class": {k: dist(v) for k, v in groups["routing_class"].items()},
        "by_queue": {k: dist(v) for k, v in groups["queue"].items()},
        "by_queue_note": "a probe counts under every queue it waited in on a card-to-card link",
    }


def _performance(outcome: RunOutcome) -> dict[str, Any] | None:
    """A --load run's figures as a sweep point has them (emulation.perf_metrics), with its workload."""
    if outcome.performance is None:
        return None
    settings = outcome.plan.settings
    spec = outcome.plan.workload.spec
    return {
        "workload": {
            "load": spec.load,
            "process": spec.process,
            "message_sizes": dict(zip(spec.sizes.sizes, spec.sizes.probabilities, strict=True)),
            "destinations": spec.destinations,
            "zipf_exponent": spec.zipf_exponent if spec.destinations == "zipf" else None,
            "duration_s": spec.duration_s,
            "warmup_s": spec.warmup_s,
            "seed": settings.seed,
        },
        "link_rate_pps": spec.link_rate_pps,
        **outcome.performance,
        "units": POINT_UNITS,
    }


def outcome_ok(outcome: RunOutcome) -> bool:
    """Every probe arrived along the model's path (adaptive routing: a path the candidate tables allow),
    the channels are the model's and (deterministic routing) the crossings agree with the analysis."""
    verdicts = verdict_counts(outcome.results)
    adaptive = outcome.plan.adaptive is not None
    return (
        not outcome.interrupted
        and outcome.deadlock is None
        and bool(outcome.results)
        and verdicts[ALLOWED if adaptive else EQUAL] == len(outcome.results)
        and outcome.channels.ok
        and (adaptive or outcome.crossings.equal)
        and not outcome.dead_cards
    )


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:,.0f}{unit}" if abs(value) >= 100 else f"{value:.1f}{unit}"


def _in_packet_times(lat: dict[str, Any], link_rate: float | None) -> str:
    """The latency line's figures again in packet times (µs x link rate / 1e6), on rated links."""
    if not link_rate:
        return ""

    def scaled(value: float | None) -> float | None:
        return None if value is None else value * link_rate / 1e6

    return (
        f"; in packet times median {_figure(scaled(lat['p50']))}, p99 {_figure(scaled(lat['p99']))}, "
        f"max {_figure(scaled(lat['max']))}"
    )


def _figure(value: float | None) -> str:
    """A figure in link units, three significant digits (packet times may be well below 1)."""
    return "-" if value is None else f"{value:.3g}"


def summary_lines(outcome: RunOutcome, files: dict[str, Path] | None = None) -> list[str]:
    """The terminal summary of a run."""
    plan, acc = outcome.plan, outcome.accounting
    counts = plan.topology.counts()
    verdicts = verdict_counts(outcome.results)
    latencies = [r.latency_us for r in outcome.results if r.latency_us is not None]
    lat = distribution(latencies)
    cross = outcome.crossings
    lines = [
        f"twinnet run: {plan.topology.family} {plan.topology.params.get('dims') or ''}".rstrip()
        + f" ({counts['cards']} cards, {counts['hosts']} hosts), routing {plan.routing_name}, "
        f"traffic {plan.traffic.name}, target {outcome.target}",
        f"  probes      sent {acc.sent}, received {acc.received}, lost {acc.lost}"
        + (f", duplicates {acc.duplicates}" if acc.duplicates else ""),
        (
            f"  paths       allowed by the candidate tables {verdicts['allowed']}, "
            if plan.adaptive is not None
            else f"  paths       equal to the model {verdicts['equal']}, "
        )
        + f"differ {verdicts['differs']}, misdelivered {verdicts['misdelivered']}",
        f"  channels    {outcome.channels.used} used, "
        + (
            (
                "all the candidate tables' (Duato's condition holds)"
                if plan.adaptive is not None
                else "all in the model's acyclic dependency graph"
            )
            if outcome.channels.ok
            else f"{len(outcome.channels.foreign)} not in the model"
            + ("" if outcome.channels.model_acyclic else "; the model's graph has a cycle")
        ),
        f"  internal    {cross.measured_internal} crossings measured, "
        f"{cross.analysis_internal} by the analysis"
        + (
            f" of the escape paths; external hops {cross.measured_external} / {cross.analysis_external}"
            if plan.adaptive is not None
            else f" ({'equal' if cross.equal else 'DIFFERENT'}); external hops {cross.measured_external} / "
            f"{cross.analysis_external}"
        ),
        f"  latency     median {_fmt(lat['p50'], ' us')}, p99 {_fmt(lat['p99'], ' us')}, "
        f"max {_fmt(lat['max'], ' us')}" + _in_packet_times(lat, plan.settings.effective_link_rate()),
        f"  injection   {outcome.injection['probes_sent']} probes at {plan.rate:g} /s per host "
        f"({outcome.injection['offered_pps_total'] or '-'} /s offered), "
        f"late {outcome.injection['late_probes']} (at most {outcome.injection['max_lateness_s'] * 1000:.1f} "
        f"ms; sender {outcome.injection['sender']})",
    ]
    if outcome.performance is not None:
        figures = outcome.performance
        mean = figures["latency_packet_times"]["mean"]
        message = figures["message_latency_packet_times"]["mean"]
        lines.append(
            f"  load        offered {figures['offered']:.3f} (asked {figures['offered_asked']:g}), accepted "
            f"{figures['accepted']:.3f} packets per PE per link time; after the warm-up mean latency "
            f"{_figure(mean)}, message latency {_figure(message)} packet times"
        )
    if plan.adaptive is not None:
        lines.extend(_adaptive_lines(outcome))
    if outcome.interrupted:
        lines.insert(1, f"  INTERRUPTED {outcome.interrupted}")
    if UNSAFE.get(plan.tables.algorithm):
        lines.insert(1, f"  routing     {UNSAFE[plan.tables.algorithm]}")
    if outcome.deadlock is not None:
        deadlock = outcome.deadlock
        cycle = " -> ".join(f"{c['card']}:{c['port']}/p{c['priority']}" for c in deadlock["cycle"])
        lines.insert(
            1,
            f"  DEADLOCK    {cycle} (stalled since {deadlock.get('deadlocked_after_s', '-')} s into the run, "
            f"for {deadlock['stalled_for_s']} s); in the model's "
            f"dependency graph: {'yes' if deadlock['cycle_in_dependency_graph'] else 'NO'}",
        )
    if outcome.queue_drops is not None:
        lines.append(f"  queue drops {outcome.queue_drops['total']} frames")
    if outcome.lossless is not None:
        cards, hosts = outcome.lossless["cards"], outcome.lossless["hosts"]
        lines.append(
            f"  lossless    links {outcome.lossless['link_rate_pps']:g} pps; PFC pause frames sent "
            f"{cards.get('pause_frames_sent', 0)}, hosts paused {hosts['pause_frames_received']} times, "
            f"probes held {outcome.lossless['probes_held_by_pauses']}"
        )
    if acc.causes:
        lines.append("  losses      " + ", ".join(f"{cause}: {count}" for cause, count in acc.causes.items()))
    for dead in outcome.dead_cards:
        lost = sum(1 for r in outcome.results if r.verdict == LOST and r.cause == f"card {dead['card']} died")
        how = f", with its whole switch process {dead['switch_process']}" if dead.get("process_died") else ""
        lines.append(
            f"  DEAD CARD   {dead['card']} (detected {dead['detected_after_s']} s into the run{how}): "
            f"{lost} probes lost crossing it"
        )
    divergent = [r for r in outcome.results if r.divergence is not None][:3]
    for r in divergent:
        lines.append(f"  differs     probe {r.probe_id} {r.src}->{r.dst}: {r.divergence}")
    timing = outcome.timings
    lines.append("  time        " + ", ".join(f"{k.removesuffix('_s')} {v:.1f} s" for k, v in timing.items()))
    if files:
        lines.append(f"  report      {files['json']}")
        others = [str(p.name) for name, p in files.items() if name != "json"]
        lines.append(f"              {', '.join(others)} in {outcome.out_dir}")
    return lines


def _adaptive_lines(outcome: RunOutcome) -> list[str]:
    """The summary's lines on adaptive routing: VC kinds used, path lengths against the escape's."""
    kinds = vc_kinds(outcome.results, outcome.plan.adaptive)
    length = lengthening(outcome.results, outcome.plan.adaptive)
    share = kinds["adaptive_share"]
    return [
        f"  VC kinds    adaptive {kinds['adaptive_hops']} hops, escape {kinds['escape_hops']} "
        f"({'-' if share is None else f'{100 * share:.1f}%'} adaptive); "
        f"{kinds['probes_that_escaped']} of {kinds['probes']} probes escaped",
        f"  lengths     mean {_figure(length['mean_measured'])} links measured, escape path "
        f"{_figure(length['mean_escape_path'])}, fewest allowed {_figure(length['mean_fewest_allowed'])}; "
        f"longer than the escape path {length['longer_than_escape']}, "
        f"shorter {length['shorter_than_escape']}",
    ]
