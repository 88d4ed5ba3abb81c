"""Load sweeps: offered load from low to beyond saturation on one or more networks, on real packets.

For each configuration (topology, routing, pattern) :func:`plan_sweep` checks
everything first: routing, the throughput bound of ``twinnet analyze``, the
workload of every load and the CPU headroom of the highest one (the emulator
must stay faster than its links). :func:`run_sweep` then builds the network
once per configuration, sets every card port's rate to the link rate (the
injector paces the host links), and runs each load point through
``emulation.run.run_on_network``, measuring it in link units
(:mod:`emulation.perf_metrics`) together with the CPU it took
(:mod:`emulation.headroom`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from controller.analysis.report import traffic_loads
from controller.analysis.traffic import Traffic
from emulation.adaptive_run import lengthening, vc_kinds
from emulation.headroom import check_headroom, mean_cards_per_packet, process_cpu_s, verdict_after
from emulation.measure import ON_MODEL
from emulation.perf_metrics import POINT_UNITS, point_metrics
from emulation.run import RunPlan, lossless_switch_arguments, plan_run, run_on_network
from emulation.run_settings import RunInputError, RunSettings
from emulation.workload import MessageSizes, WorkloadSpec, make_workload, zipf_traffic
from emulation.workload_options import (
    DEFAULT_FRAME_BYTES,
    DEFAULT_WARMUP_S,
    DEFAULT_ZIPF_EXPONENT,
    PROCESSES,
    THESIS_SIZES,
)
from topologies.model import Topology

#: Accepted traffic below this share of the offered load marks a point as saturated.
SATURATED_SHARE = 0.95
#: Default load points, as multiples of the configuration's throughput bound.
DEFAULT_LOAD_FACTORS = (0.2, 0.4, 0.6, 0.8, 0.9, 1.0, 1.2, 1.5)


@dataclass
class SweepSettings:
    """What every configuration of a sweep shares: link, workload, loads, target."""

    link_rate_pps: float
    duration_s: float = 3.0
    warmup_s: float = DEFAULT_WARMUP_S
    loads: tuple[float, ...] | None = None
    process: str = PROCESSES[0]
    sizes: MessageSizes = field(default_factory=lambda: MessageSizes.parse(THESIS_SIZES))
    zipf_exponent: float = DEFAULT_ZIPF_EXPONENT
    size: int = DEFAULT_FRAME_BYTES
    target: str = "auto"
    seed: int = 0
    cpu_capacity: float | None = None
    switch_processes: int | None = None
    #: IEEE 802.1Qbb PFC on every link (backpressure instead of drops; a deadlock ends the configuration)
    lossless: bool = False


@dataclass
class Configuration:
    """One network to sweep: its label, topology, and run settings (routing, pattern, options)."""

    label: str
    topology: Topology
    routing: str | None
    traffic: str
    pattern_options: dict[str, Any] = field(default_factory=dict)
    #: adaptive routing's selection function (with routing "adaptive")
    selection: str | None = None


@dataclass
class ConfigPlan:
    configuration: Configuration
    base: RunPlan
    bound: float | None
    loads: tuple[float, ...]
    cards_per_packet: float
    headroom: str


def bound_traffic(plan: RunPlan, name: str, exponent: float, seed: int) -> Traffic:
    """The flows the workload draws from, weighted, for the throughput bound."""
    if name != "zipf":
        return plan.traffic
    return zipf_traffic(len(plan.topology.hosts), exponent, seed)


def workload_spec(settings: SweepSettings, configuration: Configuration, load: float) -> WorkloadSpec:
    return WorkloadSpec(
        load=load,
        duration_s=settings.duration_s,
        link_rate_pps=settings.link_rate_pps,
        process=settings.process,
        sizes=settings.sizes,
        destinations=configuration.traffic,
        zipf_exponent=settings.zipf_exponent,
        warmup_s=settings.warmup_s,
        seed=settings.seed,
    )


def plan_sweep(
    configurations: list[Configuration], settings: SweepSettings, *, need_root: bool = True
) -> list[ConfigPlan]:
    """Every configuration checked and its loads fixed, before anything starts (RunInputError otherwise)."""
    if not settings.link_rate_pps > 0:
        raise RunInputError(f"--link-rate must be positive, got {settings.link_rate_pps}")
    plans = []
    for configuration in configurations:
        pattern = "uniform" if configuration.traffic == "zipf" else configuration.traffic
        run_settings = RunSettings(
            routing=configuration.routing,
            selection=configuration.selection,
            traffic=pattern,
            packets=1,
            size=settings.size,
            target=settings.target,
            seed=settings.seed,
            pattern_options=configuration.pattern_options,
            lossless=settings.lossless,
            # PFC quanta need the links' rate; the run sets it on the cards as every point does
            link_rate=settings.link_rate_pps if settings.lossless else None,
        )
        base = plan_run(configuration.topology, run_settings, need_root=need_root, check_load=False)
        traffic = bound_traffic(base, configuration.traffic, settings.zipf_exponent, settings.seed)
        raw_bound = traffic_loads(base.all_pairs, traffic)["throughput_bound"]
        bound = round(min(1.0, raw_bound), 6) if raw_bound else None
        loads = settings.loads or tuple(round(f * (bound or 1.0), 4) for f in DEFAULT_LOAD_FACTORS)
        # the host links cap what is offered; checked before any workload is made
        offered_pps = min(1.0, max(loads)) * settings.link_rate_pps * np.unique(base.traffic.src).size
        cards = mean_cards_per_packet(base.all_pairs, traffic.src, traffic.dst, traffic.weight)
        headroom, warning = check_headroom(offered_pps, cards, visits_per_core_s=settings.cpu_capacity)
        for load in loads:
            workload_spec(settings, configuration, load).check()
        plans.append(
            ConfigPlan(configuration, base, bound, tuple(loads), cards, warning or headroom.summary())
        )
    return plans


def saturation(points: list[dict[str, Any]]) -> tuple[float | None, float | None]:
    """(saturation throughput: the largest accepted traffic; the first offered load it falls behind at)."""
    if not points:
        return None, None
    best = max(point["accepted"] for point in points)
    behind = [p["offered"] for p in points if p["accepted"] < SATURATED_SHARE * p["offered"]]
    return best, (min(behind) if behind else None)


Say = Callable[[str], None]


def run_point(network, plan: ConfigPlan, settings: SweepSettings, load: float, say: Say) -> dict[str, Any]:
    """One load point on a running network: workload, rates, run, metrics, CPU verdict."""
    configuration = plan.configuration
    num_pes = len(configuration.topology.hosts)
    workload = make_workload(workload_spec(settings, configuration, load), num_pes, plan.base.traffic)
    run_plan = dataclasses.replace(
        plan.base,
        schedule=workload.schedule,
        packets_per_host=int(len(workload.schedule) / num_pes),
        rate=load * settings.link_rate_pps,
    )
    network.set_link_rates(settings.link_rate_pps)
    pids = network.switch_processes()
    cpu_before = process_cpu_s(pid for pid in pids.values() if pid)
    started = time.monotonic()
    outcome = run_on_network(run_plan, network, show_bars=False)
    if outcome.interrupted:  # Ctrl-C or SIGTERM during the point: the sweep stops, not just this point
        raise KeyboardInterrupt(outcome.interrupted)
    elapsed = time.monotonic() - started
    cpu_after = process_cpu_s(pid for pid in pids.values() if pid)
    switch_cpu = {
        name: cpu_after[pid] - cpu_before[pid]
        for name, pid in pids.items()
        if pid in cpu_after and pid in cpu_before
    }
    sources = int(np.unique(plan.base.traffic.src).size)  # the bound is per injecting PE: so is accepted
    metrics = point_metrics(outcome.results, workload, sources)
    visits = sum(len(r.arrival.hops) for r in outcome.results if r.arrival is not None)
    cpu = verdict_after(
        late_sends=outcome.injection["late_probes"],
        sends=outcome.injection["probes_sent"],
        process_cpu_s=switch_cpu,
        elapsed_s=elapsed,
        card_visits=visits,
    )
    point = {
        **metrics,
        "late_sends": outcome.injection["late_probes"],
        "max_lateness_ms": round(outcome.injection["max_lateness_s"] * 1000, 2),
        "sender": outcome.injection["sender"],
        "lost": outcome.accounting.lost,
        "queue_drops": sum(outcome.accounting.queue_drops.values()),
        "off_model_path": sum(
            1 for r in outcome.results if r.arrival is not None and r.verdict not in ON_MODEL
        ),
        "cpu": cpu,
    }
    if plan.base.adaptive is not None:
        kinds = vc_kinds(outcome.results, plan.base.adaptive)
        length = lengthening(outcome.results, plan.base.adaptive)
        point["adaptive"] = {
            "adaptive_share": kinds["adaptive_share"],
            "adaptive_hops": kinds["adaptive_hops"],
            "escape_hops": kinds["escape_hops"],
            "probes_that_escaped": kinds["probes_that_escaped"],
            "mean_links": length["mean_measured"],
            "mean_escape_path_links": length["mean_escape_path"],
            "longer_than_escape": length["longer_than_escape"],
            "shorter_than_escape": length["shorter_than_escape"],
        }
    if outcome.lossless is not None:
        point["pfc"] = {"cards": outcome.lossless["cards"], "hosts": outcome.lossless["hosts"]}
        point["deadlock"] = outcome.deadlock
    latency = metrics["latency_packet_times"]["mean"]
    say(
        f"{configuration.label}: offered {metrics['offered']:.3f} accepted {metrics['accepted']:.3f} "
        f"mean latency {latency if latency is not None else '-'} packet times, lost {point['lost']}, "
        f"late sends {point['late_sends']}" + (f"; CPU: {cpu['warning']}" if cpu["warning"] else "")
    )
    return point


def run_sweep(
    plans: list[ConfigPlan],
    settings: SweepSettings,
    *,
    say: Say | None = None,
    network_factory: Callable[..., Any] | None = None,
    checkpoint: Callable[[dict[str, Any]], Any] | None = None,
) -> dict[str, Any]:
    """Every configuration's load points on its own network (torn down after); the sweep.json content.

    ``checkpoint(result)`` is called after each configuration with what is done so far, so that
    an interrupted sweep keeps its finished configurations.
    """
    from emulation.network import build_network

    say = say or (lambda message: None)
    factory = network_factory or build_network
    result = _sweep_header(settings)
    for plan in plans:
        configuration = plan.configuration
        say(f"{configuration.label}: bound {plan.bound}, loads {', '.join(f'{x:g}' for x in plan.loads)}")
        say(f"{configuration.label}: CPU {plan.headroom}")
        network = factory(
            configuration.topology,
            target=plan.base.switch_class.target_name,
            out_dir=None,
            check_capacity=False,
            progress=None,
            switch_processes=settings.switch_processes,
            switch_arguments=lossless_switch_arguments(plan.base.settings),
        )
        with network:
            points = []
            for load in plan.loads:
                points.append(run_point(network, plan, settings, load, say))
                if points[-1].get("deadlock"):  # beyond a deadlocked load the network stays stuck
                    say(f"{configuration.label}: deadlock at offered load {load:g}; higher loads skipped")
                    break
        best, saturated_at = saturation(points)
        result["configurations"].append(
            {
                "label": configuration.label,
                "topology": {"family": configuration.topology.family, **configuration.topology.params},
                "routing": plan.base.routing_name,
                "selection": plan.base.adaptive.selection if plan.base.adaptive is not None else None,
                "traffic": configuration.traffic,
                "throughput_bound": plan.bound,
                "saturation_throughput": best,
                "saturation_offered": saturated_at,
                "mean_cards_per_packet": round(plan.cards_per_packet, 3),
                "points": points,
            }
        )
        if checkpoint is not None:
            checkpoint(result)
    return result


def _sweep_header(settings: SweepSettings) -> dict[str, Any]:
    """sweep.json without its configurations: units, link, workload."""
    return {
        "units": {
            **POINT_UNITS,
            "throughput_bound": "twinnet analyze: 1 / max link load (capped at 1, the host link); adaptive "
            "routing: its escape routing's paths",
            "adaptive": "adaptive routing: card-to-card hops by VC kind (trace adaptive bit) and mean links "
            "per received packet against the escape path's",
        },
        "link_rate_pps": settings.link_rate_pps,
        "frame_bytes": settings.size,
        "workload": {
            "process": settings.process,
            "message_sizes": dict(zip(settings.sizes.sizes, settings.sizes.probabilities, strict=True)),
            "duration_s": settings.duration_s,
            "warmup_s": settings.warmup_s,
            "seed": settings.seed,
        },
        "lossless": settings.lossless,
        "configurations": [],
    }
