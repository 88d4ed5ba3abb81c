"""The pictures of a run's report (matplotlib, Agg: no display needed). See emulation.report."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib import colormaps  # noqa: E402
from matplotlib.colors import Normalize  # noqa: E402
from matplotlib.patches import FancyArrowPatch  # noqa: E402

from emulation.measure import hop_kinds, latency_groups, link_loads  # noqa: E402
from emulation.run import RunOutcome  # noqa: E402
from topologies.draw import LABEL_LIMIT, layout  # noqa: E402

DPI = 130


def draw_all(outcome: RunOutcome, out: Path) -> dict[str, Path]:
    """Draw every picture into `out`; return their paths by name."""
    files = {
        "link_loads": draw_link_loads(outcome, out / "link_loads.png"),
        "path_lengths": draw_path_lengths(outcome, out / "path_lengths.png"),
        "latency": draw_latency(outcome, out / "latency.png"),
    }
    plt.close("all")
    return files


def _title(outcome: RunOutcome) -> str:
    plan = outcome.plan
    params = plan.topology.params
    shape = params.get("dims") or f"k={params.get('k')} n={params.get('n')}"
    if isinstance(shape, (list, tuple)):
        shape = "x".join(str(v) for v in shape)
    return f"{plan.topology.family} {shape}, {plan.routing_name}, {plan.traffic.name}"


def draw_link_loads(outcome: RunOutcome, path: Path) -> Path:
    """The topology, every card-to-card link coloured and widened by the probes it carried (both ways)."""
    topology = outcome.plan.topology
    net = outcome.plan.tables.network
    positions = layout(topology)
    torus = topology.family in ("torus", "ndt")
    directed = link_loads(outcome.results)
    per_link = []
    for link in topology.links:
        if link.kind == "host":
            continue
        a, b = net.card_id_of_name[link.a.node], net.card_id_of_name[link.b.node]
        per_link.append((link, directed.get((a, link.a.port), 0) + directed.get((b, link.b.port), 0)))
    cards = len(topology.cards)
    size = min(16.0, max(7.0, 0.35 * cards**0.5 * 4))
    fig, ax = plt.subplots(figsize=(size, size * (0.95 if torus else 0.6)))
    scales = {}
    for kind, cmap_name in (("external", "Blues"), ("internal", "Reds")):
        loads = [load for link, load in per_link if link.kind == kind]
        top = max(loads, default=0) or 1
        scales[kind] = (colormaps[cmap_name], Normalize(0, top))
    seen: Counter[tuple[str, str]] = Counter()
    for link, load in per_link:
        (x1, y1), (x2, y2) = positions[link.a.node], positions[link.b.node]
        pair = tuple(sorted((link.a.node, link.b.node)))
        parallel = seen[pair]
        seen[pair] += 1
        cmap, norm = scales[link.kind]
        distance = ((x1 - x2) ** 2 + (y1 - y2) ** 2) ** 0.5
        rad = 0.25 if torus and distance > 1.5 else 0.0
        rad += 0.2 * parallel * (1 if parallel % 2 else -1)
        colour = cmap(0.25 + 0.75 * norm(load)) if load else (0.8, 0.8, 0.8, 1.0)
        width = 0.6 + 4.5 * norm(load) if load else 0.6
        between_planes = torus and _dimension(topology.port_names.get(link.a, "")) >= 2
        patch = FancyArrowPatch(
            (x1, y1),
            (x2, y2),
            arrowstyle="-",
            connectionstyle=f"arc3,rad={rad}",
            color=colour,
            linewidth=width * (0.5 if between_planes else 1.0),
            alpha=0.3 if between_planes else 1.0,
            linestyle="-" if load else ":",
            zorder=0 if between_planes else 1,
        )
        ax.add_patch(patch)
    xs = [positions[name][0] for name in topology.cards]
    ys = [positions[name][1] for name in topology.cards]
    dead = {entry["card"] for entry in outcome.dead_cards}
    colours = ["black" if name in dead else "white" for name in topology.cards]
    ax.scatter(xs, ys, s=120 if cards <= LABEL_LIMIT else 30, c=colours, edgecolors="black", zorder=3)
    if cards <= LABEL_LIMIT:
        for name, x, y in zip(topology.cards, xs, ys, strict=True):
            side = topology.cards[name].side
            ax.annotate(
                name,
                (x, y),
                textcoords="offset points",
                xytext=(9, 4) if side else (-9, -10),
                ha="left" if side else "right",
                fontsize=7,
                zorder=4,
                bbox={"boxstyle": "round,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.7},
            )
    if torus:
        ax.set_aspect("equal", adjustable="datalim")
    ax.autoscale_view()
    ax.margins(0.08)
    ax.axis("off")
    note = " (black: dead card)" if dead else ""
    text_size = 10 if size <= 9 else 15
    if torus and len(topology.params.get("dims", ())) > 2:
        note += "; links between planes (d2 and up) faint"
    ax.set_title(
        f"Probes per link, both directions: {_title(outcome)}{note}\n"
        "blue = external links, red = internal links, dotted = unused",
        fontsize=text_size + 1,
    )
    fig.subplots_adjust(left=0.03, right=0.97, top=0.9, bottom=0.2)
    for left, (kind, label) in zip(
        (0.08, 0.55),
        (("external", "external link load (probes)"), ("internal", "internal link load (probes)")),
        strict=True,
    ):
        cmap, norm = scales[kind]
        mappable = plt.cm.ScalarMappable(norm=norm, cmap=cmap)
        bar = fig.colorbar(mappable, cax=fig.add_axes((left, 0.11, 0.37, 0.025)), orientation="horizontal")
        bar.set_label(label, fontsize=text_size)
        bar.ax.tick_params(labelsize=text_size - 1)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _dimension(port_name: str) -> int:
    """The dimension of a torus port name ("d2+" -> 2), -1 for other ports."""
    if len(port_name) >= 3 and port_name[0] == "d" and port_name[1:-1].isdigit():
        return int(port_name[1:-1])
    return -1


def _bars(ax, measured: Counter, model: Counter, xlabel: str) -> None:
    keys = sorted(set(measured) | set(model))
    positions = range(len(keys))
    ax.bar(
        [p - 0.2 for p in positions],
        [measured.get(k, 0) for k in keys],
        width=0.4,
        label="measured",
        color="tab:blue",
    )
    ax.bar(
        [p + 0.2 for p in positions],
        [model.get(k, 0) for k in keys],
        width=0.4,
        label="model (tables)",
        color="tab:gray",
    )
    ax.set_xticks(list(positions), [str(k) for k in keys])
    ax.set_xlabel(xlabel)
    ax.set_ylabel("probes")
    ax.legend(fontsize=8)


def draw_path_lengths(outcome: RunOutcome, path: Path) -> Path:
    """Histograms of card-to-card links and internal-link crossings per received probe, measured vs model."""
    tables = outcome.plan.tables
    received = [r for r in outcome.results if r.arrival is not None]
    measured_len = Counter(len(r.arrival.hops) - 1 for r in received)
    measured_int = Counter(Counter(hop_kinds(r.arrival.hops, tables))["internal"] for r in received)
    model_len = Counter(r.model.links for r in received if r.model is not None)
    model_int = Counter(r.model.internal_hops for r in received if r.model is not None)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    _bars(left, measured_len, model_len, "card-to-card links per probe (external + internal)")
    left.set_title("Path length")
    _bars(right, measured_int, model_int, "internal-link crossings per probe")
    right.set_title("Internal-link crossings")
    fig.suptitle(f"{_title(outcome)}: {len(received)} received probes", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def draw_latency(outcome: RunOutcome, path: Path) -> Path:
    """Latency distributions (box plots, us) per routing class and per queue used."""
    groups = latency_groups(outcome.results, outcome.plan.tables)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (key, title) in zip(
        axes, (("routing_class", "per routing class"), ("queue", "per queue waited in")), strict=True
    ):
        data = groups[key]
        if not data:
            ax.text(0.5, 0.5, "no probe received", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
            continue
        labels = [f"{name}\n({len(values)})" for name, values in data.items()]
        ax.boxplot(list(data.values()), showfliers=True, flierprops={"markersize": 2})
        ax.set_xticks(range(1, len(labels) + 1), labels)
        ax.set_yscale("log")
        ax.set_ylabel("one-way latency (us, log scale)")
        ax.set_title(f"Latency {title}")
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"{_title(outcome)} (probes per box in brackets)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
