"""One emulation run: validate, build, install, inject, measure, tear down (``twinnet run`` calls this).

:func:`plan_run` checks everything that can be checked before anything starts
and raises :class:`RunInputError` with a clear message: an unknown pattern or
one the topology's PE count does not allow, a routing that does not route the
topology, more probes than the hosts can send in the time given, a workload at
an offered load (``--load``) without a link rate or a duration, beside --rate or
--packets, or with malformed message sizes, a probe size
that does not fit, more than 8 queues per port or model paths longer than the
trace stack, a network too large for this machine's memory (the builder's
estimate), no root. :func:`execute` then runs the plan on a fresh network,
which is torn down whatever happens (normal end, error, Ctrl-C), and returns
a :class:`RunOutcome` for :mod:`emulation.report`.
"""

from __future__ import annotations

import math
import os
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from controller.analysis.deadlock import check_deadlock
from controller.analysis.paths import AllPairs
from controller.analysis.traffic import Traffic, make_traffic
from controller.routing import RoutingTables, algorithms_for, compute_tables
from controller.routing.registry import ADAPTIVE
from emulation.adaptive_run import AdaptiveRouting, judge_adaptive, longest_cards_bound, prepare_adaptive
from emulation.deadlock_watch import DeadlockWatch, compare_with_model, model_dependencies, poll_interval
from emulation.links import LINK_MTU
from emulation.liveness import MAX_PARALLEL_CHECKS, DataPlaneWatch
from emulation.measure import (
    Accounting,
    ChannelCheck,
    Crossings,
    ModelPaths,
    ProbeResult,
    SentProbe,
    account,
    check_channels,
    crossings,
    decode_arrival,
    judge,
    model_channels,
    stray_arrivals,
)
from emulation.packets import MAX_TRACE, TRACE_ENTRY_LEN
from emulation.perf_metrics import point_metrics
from emulation.progress import ProgressBar
from emulation.run_links import check_link_plan, set_link_rate
from emulation.run_settings import (  # noqa: F401  (re-exported: the run's settings live with the run)
    BYTES_PER_PROBE,
    DEFAULT_PACKETS,
    DEFAULT_RATE_PPS,
    DEFAULT_SIZE,
    DRAIN_LIMIT_S,
    DRAIN_QUIET_S,
    MAX_RUN_PROBES,
    RunInputError,
    RunSettings,
)
from emulation.switches import PRIORITY_QUEUES
from emulation.traffic import (
    LATE_THRESHOLD_S,
    MIN_FRAME_BYTES,
    HostPauses,
    Schedule,
    TrafficEngine,
    endpoints_of_network,
    make_schedule,
)
from emulation.workload import (
    MessageSizes,
    Workload,
    WorkloadError,
    WorkloadSpec,
    make_workload,
    zipf_traffic,
)
from p4src.card import PFC_CLASS_FIELD
from p4switch.daemon.pfc import DEFAULT_LINK_BPS, NOMINAL_FRAME_BITS
from topologies.model import Topology, TopologyError
from topologies.size import check_routing_size, topology_size


@dataclass
class RunPlan:
    """A validated run: topology, tables, model analysis, schedule and the switch class."""

    topology: Topology
    settings: RunSettings
    tables: RoutingTables
    all_pairs: AllPairs
    acyclic: bool
    traffic: Traffic
    schedule: Schedule
    packets_per_host: int
    rate: float
    longest_path_cards: int
    switch_class: type
    memory_summary: str
    #: the messages of a --load run (None: probes at --rate)
    workload: Workload | None = None
    #: adaptive routing (``tables`` are then its escape routing's, read off the adaptive tables)
    adaptive: AdaptiveRouting | None = None

    @property
    def routing_name(self) -> str:
        """The routing as reports name it: the algorithm, or adaptive with its selection and escape."""
        return self.adaptive.name if self.adaptive is not None else self.tables.algorithm


def default_routing(topology: Topology) -> str:
    names = algorithms_for(topology.family)
    if not names:
        raise RunInputError(f"no routing algorithm routes a {topology.family!r} topology")
    return names[0]


def plan_run(
    topology: Topology, settings: RunSettings, *, need_root: bool = True, check_load: bool = True
) -> RunPlan:
    """Check everything before anything starts (see the module doc); RunInputError with the reason.

    ``check_load=False`` skips the CPU headroom of the plan's own schedule, for callers that never
    send it (a sweep checks each of its loads itself).
    """
    from emulation.switches import SwitchError, select_target

    if need_root and os.geteuid() != 0:
        raise RunInputError("twinnet run builds network namespaces and veths: it needs root (sudo)")
    routing = settings.routing or default_routing(topology)
    _check_lossless(settings, settings.target)
    try:
        switch_class = select_target(settings.target)
    except SwitchError as error:
        raise RunInputError(str(error)) from error
    _check_lossless(settings, switch_class.target_name)
    if settings.check_capacity:  # before anything is allocated: every card routes to every PE at least once
        _check_memory(topology, switch_class, settings, entries=len(topology.cards) * len(topology.hosts))
    check_load_options(settings)
    num_pes = len(topology.hosts)
    if settings.traffic == "zipf":  # a workload's own destinations, as flows for the sources and the report
        traffic = zipf_traffic(num_pes, settings.workload.zipf_exponent, settings.seed)
    else:
        try:
            traffic = make_traffic(settings.traffic, topology, **settings.pattern_options)
        except ValueError as error:
            raise RunInputError(f"--traffic: {error}") from error
    if traffic.src.size == 0:
        raise RunInputError(f"--traffic {settings.traffic}: the pattern sends nothing on this topology")
    if settings.load is None:
        spec = None
        packets, rate = _packets_and_rate(settings, traffic, num_pes)
    else:
        spec = load_workload_spec(settings, int(np.unique(traffic.src).size))
        rate = spec.load * spec.link_rate_pps
    try:
        check_routing_size(topology_size(topology), f"this {topology.family} topology")
    except TopologyError as error:
        raise RunInputError(str(error)) from error
    adaptive = None
    if routing.strip().lower() == ADAPTIVE:
        adaptive = prepare_adaptive(topology, settings.selection)
        tables = adaptive.escape
    elif settings.selection is not None:
        raise RunInputError(
            f"--selection chooses among adaptive routing's candidates: give --routing {ADAPTIVE}"
        )
    else:
        try:
            tables = compute_tables(topology, routing)
        except ValueError as error:
            raise RunInputError(f"--routing: {error}") from error
    summary = ""
    if settings.check_capacity:  # the cards' memory grows with their tables: checked with them
        entries = len(adaptive.model) if adaptive is not None else len(tables)
        summary = _check_memory(topology, switch_class, settings, entries=entries)
    queues = tables.queues_per_port()
    if queues > PRIORITY_QUEUES:
        raise RunInputError(
            f"{routing} on this topology needs {queues} queues per port; the cards have {PRIORITY_QUEUES} "
            "(twinnet analyze can still study it)"
        )
    all_pairs = AllPairs(tables)
    longest = int(all_pairs.links().max(initial=0)) + 1
    if adaptive is not None:  # adaptive paths may be longer than the escape's
        longest = max(longest, longest_cards_bound(adaptive.model))
    if longest > MAX_TRACE:
        raise RunInputError(
            f"the longest model path visits {longest} cards; the trace stack holds {MAX_TRACE} "
            "(p4src/README.md)"
        )
    largest = LINK_MTU + 14 - TRACE_ENTRY_LEN * longest
    if not MIN_FRAME_BYTES <= settings.size <= largest:
        raise RunInputError(
            f"--size must be {MIN_FRAME_BYTES}..{largest} bytes here (Ethernet + twinnet header + payload; "
            f"a path of {longest} cards adds {TRACE_ENTRY_LEN * longest} bytes of trace "
            f"within MTU {LINK_MTU})"
        )
    workload = None
    if spec is None:
        schedule = make_schedule(traffic, num_pes, packets, rate, seed=settings.seed)
        host_rate = rate
    else:
        try:
            workload = make_workload(spec, num_pes, traffic)
        except WorkloadError as error:
            raise RunInputError(str(error)) from error
        schedule = workload.schedule
        packets = round(len(schedule) / np.unique(traffic.src).size)
        host_rate = min(rate, spec.link_rate_pps)  # the workload paces each host at its link at most
    load_summary = check_link_plan(settings, host_rate, schedule, all_pairs) if check_load else ""
    summary = "; ".join(part for part in (summary, load_summary) if part)
    if settings.kill is not None:
        check_kill(settings.kill, topology, schedule.duration)
    return RunPlan(
        topology,
        settings,
        tables,
        all_pairs,
        adaptive.duato.deadlock_free if adaptive is not None else check_deadlock(all_pairs).deadlock_free,
        traffic,
        schedule,
        packets,
        rate,
        longest,
        switch_class,
        summary,
        workload,
        adaptive,
    )


def check_kill(kill: tuple[str, float], topology: Topology, sending_s: float) -> None:
    """RunInputError unless the card exists and the time falls while probes are sent (0..sending_s)."""
    card, seconds = kill
    if card not in topology.cards:
        raise RunInputError(f"--kill: no card {card!r} in this topology")
    if not (math.isfinite(seconds) and 0 <= seconds <= sending_s):
        raise RunInputError(
            f"--kill {card}@{seconds:g}: the time must be 0..{sending_s:g} s (while probes are sent), "
            "or the fault would hit nothing"
        )


def check_load_options(settings: RunSettings) -> None:
    """A workload at an offered load (--load) needs --link-rate and --duration, and takes the place
    of --rate and --packets; its shaping options and Zipf destinations mean nothing without it."""
    if settings.load is None:
        given = list(settings.workload.given) + (["--traffic zipf"] if settings.traffic == "zipf" else [])
        if given:
            raise RunInputError(
                f"{', '.join(given)}: shape{'s' if len(given) == 1 else ''} a workload at an offered load; "
                "give --load (with --link-rate and --duration)"
            )
        return
    if settings.link_rate is None:
        raise RunInputError(f"--load {settings.load:g} is a fraction of the link rate: give --link-rate")
    probes = (("--rate", settings.rate), ("--packets", settings.packets))
    clashing = [name for name, value in probes if value is not None]
    if clashing:
        verb = "set" if len(clashing) > 1 else "sets"
        raise RunInputError(
            f"--load sets the offered traffic; {' and '.join(clashing)} {verb} a probe schedule instead: "
            "give one or the other"
        )
    if settings.duration is None:
        raise RunInputError(f"--load {settings.load:g} needs --duration: the seconds of injection")


def load_workload_spec(settings: RunSettings, senders: int) -> WorkloadSpec:
    """The workload of a --load run (as a sweep point makes it), checked and sized before it is made."""
    options = settings.workload
    try:
        spec = WorkloadSpec(
            load=settings.load,
            duration_s=settings.duration,
            link_rate_pps=settings.link_rate,
            process=options.process,
            sizes=MessageSizes.parse(options.message_sizes),
            destinations=settings.traffic,
            zipf_exponent=options.zipf_exponent,
            warmup_s=options.warmup_s,
            seed=settings.seed,
        )
        spec.check()
    except WorkloadError as error:
        raise RunInputError(f"--load: {error}") from error
    # packets per host: the load's share of the link (a load past 1 queues at the host, sent later)
    check_schedule_size(spec.load * spec.link_rate_pps * spec.duration_s, senders)
    return spec


def performance_of(plan: RunPlan, results: list[ProbeResult]) -> dict[str, Any] | None:
    """A --load run's figures in link units (emulation.perf_metrics, as a sweep point's); None without."""
    if plan.workload is None:
        return None
    return point_metrics(results, plan.workload, int(np.unique(plan.traffic.src).size))


def _check_lossless(settings: RunSettings, target: str) -> None:
    """--lossless needs the embedded target; link rate and deadlock time must be positive."""
    if settings.lossless and target not in ("embedded", "auto"):
        raise RunInputError(f"--lossless: {target} has no PFC (priority flow control); use --target embedded")
    if settings.link_rate is not None and not (settings.link_rate > 0 and math.isfinite(settings.link_rate)):
        raise RunInputError(
            f"--link-rate must be a positive number of packets per second, got {settings.link_rate}"
        )
    if not (settings.deadlock_after > 0 and math.isfinite(settings.deadlock_after)):
        raise RunInputError(
            f"--deadlock-after must be a positive number of seconds, got {settings.deadlock_after}"
        )


def _check_memory(topology: Topology, switch_class, settings: RunSettings, entries: int) -> str:
    """The memory estimate's summary with ``entries`` table entries, or RunInputError if it does not fit."""
    from emulation.capacity import CapacityError, check_memory
    from emulation.switch_groups import GroupError

    try:
        return check_memory(
            topology,
            switch_class.memory_plan(len(topology.cards), settings.switch_processes, settings.control),
            switch_class.target_name,
            entries=entries,
        ).summary()
    except (CapacityError, GroupError) as error:
        raise RunInputError(str(error)) from error


def lossless_switch_arguments(settings: RunSettings) -> list[str]:
    """The cards' target options of a lossless run (p4switch.daemon.cli)."""
    if not settings.lossless:
        return []
    return ["--lossless", "--pfc-class-field", PFC_CLASS_FIELD]


def _packets_and_rate(settings: RunSettings, traffic: Traffic, num_pes: int) -> tuple[int, float]:
    """Probes per host and rate (pps per host) from --packets, --duration, --rate."""
    rate = DEFAULT_RATE_PPS if settings.rate is None else settings.rate
    if not rate > 0 or not math.isfinite(rate):
        raise RunInputError(
            f"--rate must be a positive number of probes per second per host, got {settings.rate}"
        )
    if settings.packets is not None and settings.packets < 1:
        raise RunInputError(f"--packets must be at least 1, got {settings.packets}")
    if settings.duration is not None and not (settings.duration > 0 and math.isfinite(settings.duration)):
        raise RunInputError(f"--duration must be a positive number of seconds, got {settings.duration}")
    senders = int(np.unique(traffic.src).size)
    if settings.duration is not None and settings.packets is None:
        check_schedule_size(rate * settings.duration, senders)  # before a huge product becomes an int
    packets, rate = _probes_per_host(settings, traffic, num_pes, rate)
    check_schedule_size(packets, senders)
    return packets, rate


def check_schedule_size(packets_per_host: float, senders: int) -> None:
    """RunInputError when the schedule would exceed MAX_RUN_PROBES (checked before it is allocated)."""
    total = packets_per_host * senders
    if not total <= MAX_RUN_PROBES:
        raise RunInputError(
            f"{packets_per_host:,.0f} probes per host from {senders} hosts is {total:,.0f} probes "
            f"(about {total * BYTES_PER_PROBE / 1e9:.3g} GB to schedule and judge); a run sends at most "
            f"{MAX_RUN_PROBES:,}: lower --packets, --duration or --rate"
        )


def _probes_per_host(settings: RunSettings, traffic: Traffic, num_pes: int, rate: float) -> tuple[int, float]:
    """Probes per host and the rate; a product of rate and duration past any schedule is kept finite."""
    if settings.duration is not None:
        # what a host can send in the duration (kept finite: past MAX_RUN_PROBES the run is refused)
        can_send = int(math.floor(min(rate * settings.duration, MAX_RUN_PROBES + 1.0) + 1e-9))
    if settings.packets is not None and settings.duration is not None:
        if settings.packets > can_send:
            raise RunInputError(
                f"--packets {settings.packets} per host cannot be sent in --duration {settings.duration:g} s "
                f"at --rate {rate:g} probes/s per host (at most {can_send}); raise --rate or --duration"
            )
        return settings.packets, rate
    if settings.packets is not None:
        return settings.packets, rate
    if settings.duration is not None:
        return max(1, can_send), rate
    if traffic.name == "all-to-all":
        return num_pes - 1, rate
    return DEFAULT_PACKETS, rate


# -- the run ---------------------------------------------------------------------------------


@dataclass
class RunOutcome:
    """Everything the report shows."""

    plan: RunPlan
    target: str
    out_dir: Path
    results: list[ProbeResult]
    accounting: Accounting
    channels: ChannelCheck
    crossings: Crossings
    timings: dict[str, float]
    injection: dict[str, Any]
    dead_cards: list[dict[str, Any]]
    stray_probes: int
    network_timings: dict[str, float]
    entries_installed: int
    interrupted: str | None = None
    deadlock: dict[str, Any] | None = None
    lossless: dict[str, Any] | None = None
    queue_drops: dict[str, Any] | None = None
    #: a --load run's offered and accepted traffic, latency and queue depths in link units
    performance: dict[str, Any] | None = None


Progress = Callable[[str], None]


def execute(
    plan: RunPlan,
    *,
    progress: Progress | None = None,
    show_bars: bool = True,
    network_factory: Callable[..., Any] | None = None,
) -> RunOutcome:
    """Build the network, run the plan on it (:func:`run_on_network`); the network is always torn down."""
    from emulation.network import build_network

    factory = network_factory or build_network
    started = time.monotonic()
    extra = {"switch_arguments": lossless_switch_arguments(plan.settings)} if plan.settings.lossless else {}
    network = factory(
        plan.topology,
        target=plan.switch_class.target_name,
        out_dir=plan.settings.out,
        check_capacity=False,
        progress=progress,
        control=plan.settings.control,
        switch_processes=plan.settings.switch_processes,
        **extra,
    )
    with network:
        bring_up = time.monotonic() - started
        outcome = run_on_network(plan, network, progress=progress, show_bars=show_bars)
        outcome.timings = {"bring_up_s": bring_up, **outcome.timings}
        return outcome


def dead_card_entry(network, name: str, detected_after_s: float | None) -> dict[str, Any]:
    """A dead card for the report: when it was seen, and how (killed alone, or its whole process died)."""
    card = network.cards[name]
    entry: dict[str, Any] = {"card": name, "detected_after_s": detected_after_s}
    group = getattr(card, "group", None)
    if group is not None:
        entry["switch_process"] = group.name
        entry["process_died"] = not group.is_alive()
    return entry


def run_on_network(
    plan: RunPlan, network, *, progress: Progress | None = None, show_bars: bool = True
) -> RunOutcome:
    """On a running network of the plan's topology: (re)install the tables, inject, measure.

    Setting the pipeline clears the cards' tables and counters first, so one
    network serves several plans (routings, patterns) one after the other.
    """
    from emulation.card_access import open_cards

    say = progress or (lambda message: None)
    timings: dict[str, float] = {}
    with open_cards(network) as cards:
        mark = time.monotonic()
        if plan.adaptive is not None:
            report = cards.install_plans(plan.adaptive.plans, plan.adaptive.name)
        else:
            report = cards.install(plan.tables)
        timings["install_s"] = time.monotonic() - mark
        installed, seconds = report.written, timings["install_s"]
        rate = f", {installed / report.seconds / 1000:.1f}k entries/s" if report.seconds > 0 else ""
        say(
            f"{installed} table entries installed on {len(cards.names)} cards in {seconds:.1f} s "
            f"({report.seconds:.1f} s of it writing them{rate})"
        )
        link_rate = set_link_rate(plan, network)
        before = cards.counters()
        stats_before = queue_stats(network)
        pauses = HostPauses(link_rate * NOMINAL_FRAME_BITS if link_rate else DEFAULT_LINK_BPS, link_rate)
        engine = TrafficEngine(endpoints_of_network(network), pauses if plan.settings.lossless else None)
        with engine:
            parts = _inject_and_drain(plan, network, engine, say, show_bars, timings)
            frames = engine.take_received()
        dead_now = network.dead_cards()
        after = cards.counters([name for name in cards.names if name not in dead_now])
        stats_after = queue_stats(network)
    mark = time.monotonic()
    drops = {name: after[name].minus(before[name]).drop_packets for name in after if name in before}
    drop_rows = queue_drop_rows(stats_before, stats_after)
    queue_drops = {name: 0 for name in stats_after}
    for row in drop_rows:
        queue_drops[row["card"]] = queue_drops.get(row["card"], 0) + row["tail_drops"] + row["headroom_drops"]
    schedule, record = plan.schedule, parts["record"]
    sent = [
        SentProbe(schedule.probe_id(i), int(schedule.src[i]), int(schedule.dst[i]), int(record.send_us[i]))
        for i in range(len(schedule))
        if record.send_us[i] >= 0
    ]
    arrivals = [a for a in (decode_arrival(f.pe, f.frame, f.receive_us) for f in frames) if a is not None]
    adaptive = plan.adaptive
    if adaptive is None:
        results = judge(sent, arrivals, ModelPaths(plan.tables))
    else:
        results = judge_adaptive(sent, arrivals, adaptive, ModelPaths(plan.tables))
    accounting = account(
        results,
        plan.tables,
        drops,
        queue_drops,
        dead_now,
        network.switch_class.target_name,
        stopped_by_deadlock=parts["deadlock"] is not None,
        cards_of=None if adaptive is None else lambda r: adaptive.fewest.cards_on_paths(r.src, r.dst),
    )
    allowed = model_channels(plan.tables) if adaptive is None else adaptive.channels
    channels = check_channels(results, plan.tables, allowed, plan.acyclic)
    crossing = crossings(results, plan.tables, plan.all_pairs)
    timings["measure_s"] = time.monotonic() - mark
    dead = [dead_card_entry(network, name, parts["deaths"].get(name)) for name in dead_now]
    return RunOutcome(
        plan=plan,
        target=network.switch_class.target_name,
        out_dir=Path(plan.settings.out or network.out_dir),
        results=results,
        accounting=accounting,
        channels=channels,
        crossings=crossing,
        timings=timings,
        injection=parts["injection"],
        dead_cards=dead,
        stray_probes=len(stray_arrivals(sent, arrivals)),
        network_timings=dict(network.timings),
        entries_installed=installed,
        interrupted=parts["interrupted"],
        deadlock=_deadlock_entry(parts["deadlock"], plan),
        lossless=_lossless_entry(plan, link_rate, pauses, parts["record"], stats_before, stats_after),
        queue_drops={
            "unit": "frames dropped by the cards' queues (tail drops; lossless: beyond headroom), per "
            "(card, egress port or, for headroom drops, ingress port, priority) with any",
            "total": sum(row["tail_drops"] + row["headroom_drops"] for row in drop_rows),
            "per_card": {name: count for name, count in sorted(queue_drops.items())},
            "rows": drop_rows,
        }
        if network.switch_class.target_name == "embedded"
        else None,
        performance=performance_of(plan, results),
    )


def _deadlock_entry(found: dict[str, Any] | None, plan: RunPlan) -> dict[str, Any] | None:
    """The deadlock the run saw, compared with the channel dependency graph of the installed tables."""
    if found is None:
        return None
    cycle = [(c["card"], c["port"], c["priority"]) for c in found["cycle"]]
    return {
        **found,
        **compare_with_model(cycle, model_dependencies(plan.all_pairs)),
        "model_acyclic": plan.acyclic,
        "unit": "channels are (card, egress port, priority); each waits for the next (its peer pauses it "
        "for frames held in the next); stalled_for_s, found_after_s (the detector's verdict) and "
        "deadlocked_after_s (the cycle stalled): s from the first send",
    }


def _lossless_entry(
    plan: RunPlan,
    link_rate: float | None,
    pauses: HostPauses,
    record: Any,
    before: dict[str, dict[str, Any]],
    after: dict[str, dict[str, Any]],
) -> dict[str, Any] | None:
    """PFC totals of a lossless run: frames sent and received by the cards, hosts paused, probes held."""
    if not plan.settings.lossless:
        return None

    def totals(stats: dict[str, dict[str, Any]]) -> Counter[str]:
        counts: Counter[str] = Counter()
        for answer in stats.values():
            for port in answer.get("ports", []):
                for row in port.get("pfc", []):
                    for key in ("pause_frames_sent", "resume_frames_sent", "pause_frames_received"):
                        counts[key] += row[key]
                    counts["paused_s"] += row["paused_s"]
        return counts

    cards = totals(after)
    cards.subtract(totals(before))
    return {
        "link_rate_pps": link_rate,
        "cards": {key: round(value, 3) for key, value in cards.items()},
        "hosts": pauses.summary(time.monotonic()),
        "probes_held_by_pauses": record.held_probes,
        "probes_never_released": record.never_released,
        "units": "frames; paused_s: s summed over (port, priority); probes held: probes a paused host "
        "kept back and sent later",
    }


def _inject_and_drain(
    plan: RunPlan, network, engine: TrafficEngine, say: Progress, show_bars: bool, timings: dict[str, float]
) -> dict[str, Any]:
    """Send the schedule (killing a card when asked), watch the cards' liveness, wait for the last probes."""
    schedule = plan.schedule
    deaths: dict[str, float] = {}
    kill = plan.settings.kill
    killed = False
    detector = (
        DeadlockWatch(
            lambda: queue_stats(network),
            card_peers(plan.topology),
            plan.settings.deadlock_after,
            poll_interval(len(network.cards)),
        )
        if plan.settings.lossless
        else None
    )

    def watch(elapsed: float) -> bool:
        """Kill a card when asked, note dead cards; False once a deadlock is found."""
        nonlocal killed
        if kill is not None and not killed and elapsed >= kill[1]:
            network.kill_card(kill[0])
            killed = True
        for name in network.dead_cards():
            if name not in deaths:
                deaths[name] = watcher.deaths.get(name, round(elapsed, 3))
                say(f"card {name} died {deaths[name]:.2f} s into the run; probes crossing it will be lost")
        if detector is None:
            return True
        found = detector.found  # polled in the detector's own thread
        if found is not None and "found_after_s" not in found:
            # time to deadlock: when the cycle's channels last started to stall, from the first send
            found["found_after_s"] = round(elapsed, 3)
            found["deadlocked_after_s"] = round(max(0.0, elapsed - found["stalled_for_s"]), 3)
            cycle = " -> ".join(f"{c['card']}:{c['port']}/p{c['priority']}" for c in found["cycle"])
            say(f"DEADLOCK {elapsed:.1f} s into the run: {cycle}")
        return found is None

    bar = ProgressBar("sending ", len(schedule), enabled=show_bars)

    def sending(done: int, elapsed: float) -> bool:
        going = watch(elapsed)
        bar.update(done, f"received {engine.received_count()}")
        return going

    mark = time.monotonic()
    # a card whose data plane stops (its process still running) is found and killed by the watch
    with DataPlaneWatch(network, mark) as watcher, detector or nullcontext():
        record = engine.inject(schedule, plan.settings.size, tick=sending)
        timings["inject_s"] = time.monotonic() - mark
        bar.finish(record.sent, f"received {engine.received_count()}")
        drain_bar = ProgressBar("receiving", record.sent, enabled=show_bars)

        def draining(count: int, elapsed: float) -> bool:
            going = watch(timings["inject_s"] + elapsed)
            drain_bar.update(count)
            return going

        mark = time.monotonic()
        deadlocked = detector is not None and detector.found is not None
        if record.interrupted:
            say(f"interrupted after {record.sent} probes: measuring what was sent, then tearing down")
        try:
            quiet, limit = (0.5, 2.0) if record.interrupted or deadlocked else (DRAIN_QUIET_S, DRAIN_LIMIT_S)
            engine.wait_for(record.sent, quiet, limit, tick=draining)
        except KeyboardInterrupt:
            record.interrupted = True
        timings["drain_s"] = time.monotonic() - mark
        watch(timings["inject_s"] + timings["drain_s"])
        drain_bar.finish(engine.received_count())
        offered = len(schedule) / schedule.duration if schedule.duration > 0 else None
        sending_s = (record.finished_us - record.started_us) / 1e6 if record.started_us else 0.0
        injection = {
            "probes_scheduled": len(schedule),
            "probes_sent": record.sent,
            "send_errors": len(record.errors),
            "packets_per_host": plan.packets_per_host,
            "rate_pps_per_host": plan.rate,
            "offered_pps_total": round(offered, 1) if offered else None,
            "achieved_send_pps_total": round(record.sent / sending_s, 1) if sending_s > 0 else None,
            "late_probes": record.late_probes,
            "late_threshold_s": LATE_THRESHOLD_S,
            "max_lateness_s": round(record.max_late_s, 6),
            "sender": record.sender,
            "size_bytes": plan.settings.size,
            "link_rate_pps": plan.settings.effective_link_rate(),
            "schedule_duration_s": round(schedule.duration, 3),
        }
        interrupted = (
            f"interrupted after {record.sent} of {len(schedule)} probes" if record.interrupted else None
        )
        return {
            "record": record,
            "deaths": deaths,
            "injection": injection,
            "interrupted": interrupted,
            "deadlock": detector.found if detector is not None else None,
        }


def queue_stats(network) -> dict[str, dict[str, Any]]:
    """Per live card, the side channel's stats (queues, PFC); empty for targets without it (bmv2)."""
    if network.switch_class.target_name != "embedded":
        return {}
    from p4switch.daemon.side_channel import request

    def ask(card: Any) -> dict[str, Any] | None:
        try:
            return request(card.control_target, {"cmd": "stats"}, timeout=2.0)
        except (OSError, ValueError):
            return None

    live = {name: card for name, card in network.cards.items() if card.is_alive()}
    # in parallel: one card after the other took 1.7 s for 128 cards on a loaded machine
    with ThreadPoolExecutor(MAX_PARALLEL_CHECKS, thread_name_prefix="queue-stats") as pool:
        answers = dict(zip(live, pool.map(ask, live.values()), strict=True))
    return {name: answer for name, answer in answers.items() if answer is not None}


def queue_drop_rows(
    before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """Drops during the run per (card, port, priority), rows with any: tail drops (egress port),
    headroom drops (lossless, ingress port), out-of-range priorities (priority -1)."""

    def per_queue(stats: dict[str, dict[str, Any]]) -> Counter[tuple[str, int, int, str]]:
        counts: Counter[tuple[str, int, int, str]] = Counter()
        for card, answer in stats.items():
            for port in answer.get("ports", []):
                for queue in port.get("queues", []):
                    counts[card, port["port"], queue["priority"], "tail_drops"] += queue["tail_drops"]
                for row in port.get("pfc", []):
                    counts[card, port["port"], row["priority"], "headroom_drops"] += row["headroom_drops"]
                counts[card, port["port"], -1, "tail_drops"] += port.get("priority_out_of_range_drops", 0)
        return counts

    counts = per_queue(after)
    counts.subtract(per_queue(before))
    rows: dict[tuple[str, int, int], dict[str, Any]] = {}
    for (card, port, priority, kind), count in sorted(counts.items()):
        if count > 0 and card in before:
            row = rows.setdefault(
                (card, port, priority),
                {"card": card, "port": port, "priority": priority, "tail_drops": 0, "headroom_drops": 0},
            )
            row[kind] += count
    return list(rows.values())


def card_peers(topology: Topology) -> dict[tuple[str, int], tuple[str, int]]:
    """(card, port) -> (peer card, peer port) for every card-to-card link."""
    peers = {}
    for name in topology.cards:
        for ref in topology.card_ports(name):
            if topology.is_connected(ref):
                other = topology.peer(ref)
                if other.node in topology.cards:
                    peers[name, ref.port] = (other.node, other.port)
    return peers
