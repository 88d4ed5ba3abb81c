"""Measured paths against the model: per-probe verdicts, channel check, internal-link crossings, accounting.

Inputs are plain data (no network): the probes sent (id, source, destination,
send time), the frames received (decoded with :mod:`emulation.packets`), the
route tables (the model's path of a pair is the table walker's), and what the
cards counted (drops by reason, queue tail drops, which cards died). Outputs:

* a :class:`ProbeResult` per probe: the measured hops, the one-way latency
  (receiver clock - send time), the verdict (``equal``, ``differs`` with the
  first hop where the two paths part, ``misdelivered``, ``lost``) and, for a
  lost probe, its most likely cause;
* :func:`check_channels`: every channel (directed card-to-card link, queue) the
  probes used must be a channel of the model's dependency graph, and that
  graph must be acyclic;
* :func:`crossings`: internal-link crossings counted from measured paths next
  to the analysis's figure (controller.analysis.paths) for the same pairs;
* :func:`account`: every sent probe received or dropped, the missing ones
  reconciled against the counters.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from controller.routing import Path as ModelPath
from controller.routing import RoutingError, RoutingTables, walk
from controller.routing.network import EXTERNAL, HOST, INTERNAL, PORT_KIND_NAMES
from emulation.packets import TraceHop, Twinnet, decode, decode_probe, latency_us, path

#: verdicts of a probe; ``allowed`` is adaptive routing's "on the model": every hop one the candidate
#: tables allow (emulation.adaptive_run), where a deterministic run's is ``equal``
EQUAL, ALLOWED, DIFFERS, MISDELIVERED, LOST = "equal", "allowed", "differs", "misdelivered", "lost"
ON_MODEL = (EQUAL, ALLOWED)


@dataclass(frozen=True)
class SentProbe:
    probe_id: int
    src: int
    dst: int
    send_us: int


@dataclass(frozen=True)
class Arrival:
    """A decoded probe as a host received it."""

    probe_id: int
    receiver: int
    src: int
    dst: int
    routing_class: int
    send_us: int
    receive_us: int
    hops: tuple[TraceHop, ...]


def decode_arrival(receiver: int, frame: bytes, receive_us: int) -> Arrival | None:
    """The probe in a received frame, or None if the frame is no twinnet probe (IPv4 carried, garbage).

    A whole twinnet frame is read with struct (decode_probe); anything else, rare, by scapy.
    """
    view = decode_probe(frame)
    if view is None:
        try:
            pkt = decode(frame)
        except Exception:  # a frame scapy cannot parse is no probe
            return None
        if Twinnet not in pkt:
            return None
        header = pkt[Twinnet]
        fields = (
            header.next_type,
            header.probe_id,
            header.src_pe,
            header.dst_pe,
            header.rclass,
            header.send_time,
        )
        next_type, probe_id, src_pe, dst_pe, rclass, send_time = (int(value) for value in fields)
        hops = tuple(path(pkt))
    else:
        next_type, probe_id, src_pe, dst_pe = view.next_type, view.probe_id, view.src_pe, view.dst_pe
        rclass, send_time, hops = view.rclass, view.send_time, view.hops
    if next_type != 0 or probe_id == 0:
        return None
    return Arrival(probe_id, receiver, src_pe, dst_pe, rclass, send_time, receive_us, hops)


@dataclass(frozen=True)
class Divergence:
    """Where a measured path leaves the model's: the hop index and what each side did there."""

    hop: int
    measured: str
    model: str

    def __str__(self) -> str:
        return f"hop {self.hop}: measured {self.measured}, model {self.model}"


def _describe_measured(hop: TraceHop, names: Sequence[str]) -> str:
    name = names[hop.card_id] if 0 <= hop.card_id < len(names) else f"card id {hop.card_id}"
    return f"{name} in {hop.in_port} out {hop.out_port} vc {hop.vc} prio {hop.prio}"


def _describe_model(hop, names: Sequence[str], prio: int) -> str:
    return f"{names[hop.card_id]} in {hop.ingress_port} out {hop.egress_port} vc {hop.vc} prio {prio}"


def compare_paths(
    measured: Sequence[TraceHop],
    model: ModelPath,
    names: Sequence[str],
    priority_of_queue: Mapping[int, int] | None = None,
) -> Divergence | None:
    """None if the measured hops equal the model's hop by hop (card, ports, VC, priority), else where not.

    ``priority_of_queue`` maps the model's queue index to the priority the
    cards were given for it (default: priority = queue index).
    """

    def prio(queue: int) -> int:
        return priority_of_queue.get(queue, queue) if priority_of_queue else queue

    for index, (got, want) in enumerate(zip(measured, model.hops, strict=False)):
        if (got.card_id, got.in_port, got.out_port, got.vc, got.prio) != (
            want.card_id,
            want.ingress_port,
            want.egress_port,
            want.vc,
            prio(want.queue),
        ):
            return Divergence(
                index, _describe_measured(got, names), _describe_model(want, names, prio(want.queue))
            )
    if len(measured) != len(model.hops):
        index = min(len(measured), len(model.hops))
        got = _describe_measured(measured[index], names) if index < len(measured) else "path ends"
        want = (
            _describe_model(model.hops[index], names, prio(model.hops[index].queue))
            if index < len(model.hops)
            else "path ends"
        )
        return Divergence(index, got, want)
    return None


@dataclass
class ProbeResult:
    """One probe: what was sent, what arrived (if anything) and how it compares with the model."""

    probe_id: int
    src: int
    dst: int
    send_us: int
    verdict: str
    model: ModelPath | None
    arrival: Arrival | None = None
    divergence: Divergence | None = None
    cause: str | None = None
    duplicates: int = 0

    @property
    def latency_us(self) -> int | None:
        if self.arrival is None:
            return None
        return latency_us(self.send_us, self.arrival.receive_us)


class ModelPaths:
    """The model's path of each pair, walked through the tables once per pair."""

    def __init__(self, tables: RoutingTables) -> None:
        self.tables = tables
        self._paths: dict[tuple[int, int], ModelPath | None] = {}
        self.errors: dict[tuple[int, int], str] = {}

    def __call__(self, src: int, dst: int) -> ModelPath | None:
        key = (src, dst)
        if key not in self._paths:
            try:
                self._paths[key] = walk(self.tables, src, dst)
            except RoutingError as error:
                self._paths[key] = None
                self.errors[key] = str(error)
        return self._paths[key]


def judge(
    sent: Iterable[SentProbe],
    arrivals: Iterable[Arrival],
    model_paths: ModelPaths,
    priority_of_queue: Mapping[int, int] | None = None,
) -> list[ProbeResult]:
    """A result per sent probe: its first arrival compared with the model (later copies are duplicates)."""
    names = model_paths.tables.network.card_names
    first: dict[int, Arrival] = {}
    copies: Counter[int] = Counter()
    for arrival in arrivals:
        if arrival.probe_id in first:
            copies[arrival.probe_id] += 1
        else:
            first[arrival.probe_id] = arrival
    results = []
    for probe in sent:
        model = model_paths(probe.src, probe.dst)
        arrival = first.get(probe.probe_id)
        result = ProbeResult(
            probe.probe_id,
            probe.src,
            probe.dst,
            probe.send_us,
            LOST,
            model,
            arrival,
            duplicates=copies.get(probe.probe_id, 0),
        )
        if arrival is not None:
            if arrival.receiver != probe.dst:
                result.verdict = MISDELIVERED
                result.divergence = Divergence(
                    len(arrival.hops), f"delivered to PE {arrival.receiver}", f"delivered to PE {probe.dst}"
                )
            elif model is None:
                result.verdict = DIFFERS
                result.divergence = Divergence(
                    0, "a path", "no path: " + model_paths.errors[probe.src, probe.dst]
                )
            else:
                result.divergence = compare_paths(arrival.hops, model, names, priority_of_queue)
                result.verdict = EQUAL if result.divergence is None else DIFFERS
        results.append(result)
    return results


def stray_arrivals(sent: Iterable[SentProbe], arrivals: Iterable[Arrival]) -> list[Arrival]:
    """Arrivals of probe ids this run never sent (another tool's probes, or corrupted ids)."""
    ids = {probe.probe_id for probe in sent}
    return [arrival for arrival in arrivals if arrival.probe_id not in ids]


# -- channels -------------------------------------------------------------------------------


@dataclass
class ChannelCheck:
    """Channels (card, egress port, queue) the probes used, and those that are not the model's."""

    model_channels: int
    model_acyclic: bool
    used: int
    foreign: list[tuple[str, int, int]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.model_acyclic and not self.foreign

    def to_json(self) -> dict:
        return {
            "ok": self.ok,
            "model_channels": self.model_channels,
            "model_dependency_graph_acyclic": self.model_acyclic,
            "channels_used": self.used,
            "channels_not_in_model": [f"{card}:{port} q{queue}" for card, port, queue in self.foreign],
            "unit": "channels = (directed card-to-card link, queue), named card:egress port q<queue>",
        }


def model_channels(tables: RoutingTables) -> set[tuple[int, int, int]]:
    """(card id, egress port, queue) of every table entry that sends onto a card-to-card link."""
    kinds = tables.link_kinds()
    keep = (kinds == EXTERNAL) | (kinds == INTERNAL)
    queues = tables.queues()
    return set(
        zip(
            tables.card_id[keep].tolist(),
            tables.egress_port[keep].tolist(),
            queues[keep].tolist(),
            strict=True,
        )
    )


def check_channels(
    results: Iterable[ProbeResult], tables: RoutingTables, channels: set[tuple[int, int, int]], acyclic: bool
) -> ChannelCheck:
    """Every channel a received probe used must be one of `channels` (the model's graph, `acyclic` or not)."""
    net = tables.network
    used: set[tuple[int, int, int]] = set()
    for result in results:
        if result.arrival is None:
            continue
        cls = result.arrival.routing_class
        for hop in result.arrival.hops:
            if not (0 <= hop.card_id < net.num_cards and 0 < hop.out_port <= net.max_port):
                continue
            if net.port_kind[hop.card_id, hop.out_port] in (EXTERNAL, INTERNAL):
                used.add((hop.card_id, hop.out_port, tables.queue_of(cls, hop.vc)))
    foreign = sorted((net.card_names[c], p, q) for c, p, q in used - channels)
    return ChannelCheck(len(channels), acyclic, len(used), foreign)


# -- hops and crossings -----------------------------------------------------------------------


def hop_kinds(hops: Sequence[TraceHop], tables: RoutingTables) -> list[str]:
    """Kind of the link each hop leaves on ("external", "internal", "host", "none")."""
    net = tables.network
    kinds = []
    for hop in hops:
        valid = 0 <= hop.card_id < net.num_cards and 0 <= hop.out_port <= net.max_port
        kinds.append(PORT_KIND_NAMES[int(net.port_kind[hop.card_id, hop.out_port])] if valid else "none")
    return kinds


@dataclass
class Crossings:
    """Internal and external card-to-card links of the received probes, measured and per the analysis."""

    probes: int
    measured_internal: int
    analysis_internal: int
    measured_external: int
    analysis_external: int

    @property
    def equal(self) -> bool:
        return (self.measured_internal, self.measured_external) == (
            self.analysis_internal,
            self.analysis_external,
        )

    def to_json(self) -> dict:
        return {
            "equal": self.equal,
            "probes": self.probes,
            "measured_internal_crossings": self.measured_internal,
            "analysis_internal_crossings": self.analysis_internal,
            "measured_external_hops": self.measured_external,
            "analysis_external_hops": self.analysis_external,
            "unit": "links traversed, summed over the received probes",
            "analysis": "controller.analysis.paths.AllPairs internal()/external() of the same pairs",
        }


def crossings(results: Iterable[ProbeResult], tables: RoutingTables, all_pairs) -> Crossings:
    """Measured internal/external hops of received probes vs the analysis (`all_pairs`: an AllPairs)."""
    n = tables.network.num_pes
    index = {int(key): i for i, key in enumerate((all_pairs.src * n + all_pairs.dst).tolist())}
    internal, external = all_pairs.internal(), all_pairs.external()
    totals = Counter()
    for result in results:
        if result.arrival is None or result.verdict == MISDELIVERED:
            continue
        kinds = Counter(hop_kinds(result.arrival.hops, tables))
        totals["probes"] += 1
        totals["mi"] += kinds["internal"]
        totals["me"] += kinds["external"]
        at = index[result.src * n + result.dst]
        totals["ai"] += int(internal[at])
        totals["ae"] += int(external[at])
    return Crossings(totals["probes"], totals["mi"], totals["ai"], totals["me"], totals["ae"])


def link_loads(results: Iterable[ProbeResult]) -> Counter[tuple[int, int]]:
    """Received probes per directed link, keyed by (card id, egress port)."""
    loads: Counter[tuple[int, int]] = Counter()
    for result in results:
        if result.arrival is not None:
            for hop in result.arrival.hops:
                loads[hop.card_id, hop.out_port] += 1
    return loads


# -- accounting ----------------------------------------------------------------------------------


@dataclass
class Accounting:
    """Every sent probe: received, or lost with a cause; the counters that explain the losses."""

    sent: int
    received: int
    duplicates: int
    lost: int
    causes: dict[str, int]
    drop_counters: dict[str, dict[str, int]]
    queue_drops: dict[str, int]
    dead_cards: list[str]
    lost_probes: list[dict]
    unexplained_label: str

    def to_json(self) -> dict:
        return {
            "sent": self.sent,
            "received": self.received,
            "lost": self.lost,
            "duplicates": self.duplicates,
            "all_accounted": self.sent == self.received + sum(self.causes.values()),
            "loss_causes": self.causes,
            "drop_counters": self.drop_counters,
            "queue_tail_drops": self.queue_drops,
            "dead_cards": self.dead_cards,
            "lost_probes": self.lost_probes,
            "unit": "probes (packets); counters are deltas over the run, by card and reason",
            "unexplained_means": self.unexplained_label,
        }


def account(
    results: Sequence[ProbeResult],
    tables: RoutingTables,
    drop_counters: Mapping[str, Mapping[str, int]],
    queue_drops: Mapping[str, int],
    dead_cards: Iterable[str],
    target: str,
    *,
    stopped_by_deadlock: bool = False,
    cards_of: Callable[[ProbeResult], list[int]] | None = None,
) -> Accounting:
    """Attribute every lost probe to a cause, spending each card's counted drops once.

    In order: the model's path crosses a dead card ("card cN died"); a card on
    the model's path counted a drop of some reason ("dropped at cN: reason")
    or a queue tail drop ("queue overflow at cN"); what no counter explains is
    "probable queue overflow" on bmv2 (whose queue drops no counter shows) and
    "unexplained" elsewhere, or, when the run stopped on a deadlock, "in deadlocked
    queues" (a lossless network drops nothing: what is missing is stuck).
    ``cards_of(result)`` gives the cards a lost probe may have crossed (default: its
    model path's; adaptive routing: those of every path it may take).
    """
    names = tables.network.card_names
    dead = sorted(set(dead_cards))
    dead_ids = {tables.network.card_id_of_name[name] for name in dead}
    budget: dict[str, Counter[str]] = defaultdict(Counter)
    for card, reasons in drop_counters.items():
        for reason, count in reasons.items():
            if count > 0:
                budget[card][reason] += count
    for card, count in queue_drops.items():
        if count > 0:
            budget[card]["queue overflow"] += count
    unexplained = "probable queue overflow" if target == "bmv2" else "unexplained"
    if stopped_by_deadlock:
        unexplained = "in deadlocked queues when the run stopped"
    causes: Counter[str] = Counter()
    lost_probes = []
    for result in results:
        if result.verdict != LOST:
            continue
        if cards_of is not None:
            cards = cards_of(result)
        else:
            cards = [hop.card_id for hop in result.model.hops] if result.model is not None else []
        cause = None
        died = [card for card in cards if card in dead_ids]
        if died:
            cause = f"card {names[died[0]]} died"
        else:
            for card in cards:
                spend = budget.get(names[card])
                if spend:
                    reason = next(reason for reason, count in spend.items() if count > 0)
                    spend[reason] -= 1
                    if spend[reason] == 0:
                        del spend[reason]
                    cause = (
                        f"{reason} at {names[card]}"
                        if reason == "queue overflow"
                        else f"dropped at {names[card]}: {reason}"
                    )
                    break
        result.cause = cause or unexplained
        causes[result.cause] += 1
        lost_probes.append(
            {
                "probe_id": result.probe_id,
                "src": result.src,
                "dst": result.dst,
                "send_us": result.send_us,
                "cause": result.cause,
                "model_cards": [names[card] for card in cards],
            }
        )
    received = sum(1 for result in results if result.arrival is not None)
    return Accounting(
        sent=len(results),
        received=received,
        duplicates=sum(result.duplicates for result in results),
        lost=len(results) - received,
        causes=dict(sorted(causes.items())),
        drop_counters={
            card: {k: v for k, v in reasons.items() if v}
            for card, reasons in drop_counters.items()
            if any(reasons.values())
        },
        queue_drops={card: count for card, count in queue_drops.items() if count},
        dead_cards=dead,
        lost_probes=lost_probes,
        unexplained_label=(
            "lost probes no counter explains; on bmv2 its queues drop without a counter the run can read"
            if target == "bmv2"
            else "lost probes no counter explains (the embedded target counts queue drops)"
        ),
    )


# -- summaries -----------------------------------------------------------------------------------


def verdict_counts(results: Iterable[ProbeResult]) -> dict[str, int]:
    counts = Counter(result.verdict for result in results)
    return {verdict: counts.get(verdict, 0) for verdict in (EQUAL, ALLOWED, DIFFERS, MISDELIVERED, LOST)}


def latency_groups(results: Iterable[ProbeResult], tables: RoutingTables) -> dict[str, dict[str, list[int]]]:
    """Latencies (us) of received probes by routing class, and by every queue a probe waited in."""
    by_class: dict[str, list[int]] = defaultdict(list)
    by_queue: dict[str, list[int]] = defaultdict(list)
    for result in results:
        if result.arrival is None or result.latency_us is None:
            continue
        cls = result.arrival.routing_class
        by_class[f"class {cls}"].append(result.latency_us)
        net = tables.network
        queues = {
            tables.queue_of(cls, hop.vc)
            for hop in result.arrival.hops
            if 0 <= hop.card_id < net.num_cards
            and 0 <= hop.out_port <= net.max_port
            and net.port_kind[hop.card_id, hop.out_port] != HOST
        }
        for queue in sorted(queues) or [None]:
            by_queue["no card link" if queue is None else f"queue {queue}"].append(result.latency_us)
    return {"routing_class": dict(sorted(by_class.items())), "queue": dict(sorted(by_queue.items()))}


def distribution(values: Sequence[float]) -> dict[str, float | int | None]:
    """count, min, mean, median, p90, p99, max of `values`."""
    if not len(values):
        return {"count": 0, "min": None, "mean": None, "p50": None, "p90": None, "p99": None, "max": None}
    data = np.asarray(values, dtype=np.float64)
    return {
        "count": int(data.size),
        "min": float(data.min()),
        "mean": round(float(data.mean()), 3),
        "p50": float(np.percentile(data, 50)),
        "p90": float(np.percentile(data, 90)),
        "p99": float(np.percentile(data, 99)),
        "max": float(data.max()),
    }
