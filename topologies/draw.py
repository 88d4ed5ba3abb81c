"""Pictures of a Topology (PNG, SVG or PDF by the file's suffix) with matplotlib, no display needed.

Fat trees are drawn by stage (roots on top, PEs at the bottom), every twin as a
box around its two cards. Tori are drawn on a grid: d0 across, d1 up, and one such
plane per combination of the further coordinates, the planes themselves in a
near-square grid (their links drawn faintly); the two cards of a node sit
diagonally in its box. Internal links are red,
external links grey (wrap-around links of a ring dashed and curved), host
links light blue.
"""

from __future__ import annotations

from math import ceil, prod, sqrt
from pathlib import Path

from topologies.model import Link, Topology

Position = tuple[float, float]

#: above this many cards, labels are left out (they would overlap)
LABEL_LIMIT = 80


def layout(topo: Topology) -> dict[str, Position]:
    """Positions of every card and host of `topo` (fat-tree, torus or, for other families, spring layout)."""
    if topo.family in ("kary-ntree", "twin-fattree"):
        return _tree_layout(topo)
    if topo.family in ("torus", "ndt"):
        return _torus_layout(topo)
    import networkx as nx

    return {node: tuple(xy) for node, xy in nx.spring_layout(topo.to_networkx(), seed=1).items()}


def _tree_layout(topo: Topology) -> dict[str, Position]:
    k, n = topo.params["k"], topo.params["n"]
    positions: dict[str, Position] = {}
    spacing = 2.0 if topo.family == "twin-fattree" else 1.0
    per_stage = k ** (n - 1)
    for twin in topo.twins.values():
        value = sum(digit * k**i for i, digit in enumerate(twin.coords))
        x = (value - (per_stage - 1) / 2) * spacing * 1.25
        for side, card in enumerate(twin.cards):
            positions[card] = (x + (side - (len(twin.cards) - 1) / 2) * 0.9, 2.0 * (twin.stage + 1))
    hosts_per_leaf = k
    for host in topo.hosts:
        leaf, digit = divmod(host.pe, hosts_per_leaf)
        x = (leaf - (per_stage - 1) / 2) * spacing * 1.25 + (digit - (k - 1) / 2) * spacing * 1.25 / k
        positions[host.name] = (x, 0.0)
    return positions


def _torus_layout(topo: Topology) -> dict[str, Position]:
    dims = list(topo.params["dims"]) + [1]
    planes = prod(dims[2:])
    columns = ceil(sqrt(planes))
    positions: dict[str, Position] = {}
    for twin in topo.twins.values():
        coords = list(twin.coords) + [0]
        plane = 0
        for coordinate, radix in zip(reversed(coords[2:]), reversed(dims[2:]), strict=True):
            plane = plane * radix + coordinate
        x = coords[0] + (plane % columns) * (dims[0] + 0.8)
        y = coords[1] + (plane // columns) * (dims[1] + 0.8)
        for side, card in enumerate(twin.cards):
            positions[card] = (x + 0.22 * side, y + 0.22 * side)
    for host in topo.hosts:
        cx, cy = positions[host.card]
        side = topo.cards[host.card].side
        positions[host.name] = (cx - 0.2 + 0.45 * side, cy + 0.22 - 0.45 * side)
    return positions


def draw(topo: Topology, path: str | Path, title: str | None = None) -> Path:
    """Write a picture of `topo` to `path` and return the path."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.collections import LineCollection
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    positions = layout(topo)
    xs = [x for x, _ in positions.values()]
    ys = [y for _, y in positions.values()]
    width = min(40.0, max(6.0, (max(xs) - min(xs)) * 0.9 + 2))
    height = min(30.0, max(4.0, (max(ys) - min(ys)) * 0.9 + 2, width / 3.5))
    figure, axes = plt.subplots(figsize=(width, height))
    is_torus = topo.family in ("torus", "ndt")
    colours = {"external": "0.45", "internal": "tab:red", "host": "lightsteelblue"}
    straight: dict[str, list] = {kind: [] for kind in colours}
    between_planes: list = []
    for link in topo.links:
        a, b = positions[link.a.node], positions[link.b.node]
        if is_torus and link.kind == "external" and _dimension(topo, link) >= 2:
            between_planes.append((a, b))
        elif is_torus and link.kind == "external" and _is_wrap(topo, link.a.node, link.b.node):
            axes.add_patch(
                FancyArrowPatch(
                    a,
                    b,
                    arrowstyle="-",
                    connectionstyle="arc3,rad=0.25",
                    linestyle="--",
                    color=colours["external"],
                    linewidth=0.6,
                    alpha=0.6,
                )
            )
        else:
            straight[link.kind].append((a, b))
    if between_planes:
        axes.add_collection(
            LineCollection(
                between_planes,
                colors="0.6",
                linewidths=0.4,
                alpha=0.35,
                zorder=0,
                label="external links of d2, d3, ...",
            )
        )
    for kind, segments in straight.items():
        axes.add_collection(
            LineCollection(
                segments,
                colors=colours[kind],
                linewidths=1.6 if kind == "internal" else 0.8,
                zorder=1,
                label=f"{kind} links",
            )
        )
    if any(len(twin.cards) == 2 for twin in topo.twins.values()):
        for twin in topo.twins.values():
            corners = [positions[card] for card in twin.cards]
            x0, y0 = min(x for x, _ in corners), min(y for _, y in corners)
            x1, y1 = max(x for x, _ in corners), max(y for _, y in corners)
            pad = 0.18 if is_torus else 0.35
            axes.add_patch(
                FancyBboxPatch(
                    (x0 - pad, y0 - pad),
                    x1 - x0 + 2 * pad,
                    y1 - y0 + 2 * pad,
                    boxstyle="round,pad=0.02",
                    fill=False,
                    edgecolor="0.7",
                    zorder=0,
                )
            )
    card_xy = [positions[name] for name in topo.cards]
    card_colours = ["tab:blue" if card.side == 0 else "tab:orange" for card in topo.cards.values()]
    axes.scatter(
        [x for x, _ in card_xy],
        [y for _, y in card_xy],
        s=60 if len(card_xy) <= LABEL_LIMIT else 12,
        c=card_colours,
        marker="s",
        zorder=3,
    )
    host_xy = [positions[host.name] for host in topo.hosts]
    axes.scatter(
        [x for x, _ in host_xy],
        [y for _, y in host_xy],
        s=14 if len(host_xy) <= LABEL_LIMIT else 4,
        c="0.2",
        marker="o",
        zorder=3,
    )
    if len(topo.cards) <= LABEL_LIMIT:
        for name, (x, y) in ((name, positions[name]) for name in topo.cards):
            axes.annotate(name, (x, y), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=7)
        for host in topo.hosts:
            x, y = positions[host.name]
            axes.annotate(
                host.name, (x, y), textcoords="offset points", xytext=(0, -10), ha="center", fontsize=6
            )
    params = " ".join(
        f"{key}={value}"
        for key, value in topo.params.items()
        if key not in ("alpha_ports", "root_alpha_ports")
    )
    axes.set_title(title or f"{topo.family}: {params}", fontsize=10)
    axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    axes.set_aspect("equal" if is_torus else "auto")
    axes.autoscale()
    axes.margins(0.05)
    axes.axis("off")
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return out


def _dimension(topo: Topology, link: Link) -> int:
    """The torus dimension of an external link, from its port name (d<i>+ / d<i>-)."""
    return int(topo.port_names[link.a][1:-1])


def _is_wrap(topo: Topology, card_a: str, card_b: str) -> bool:
    """True for a ring's wrap-around link (coordinates k-1 and 0): drawn curved, off the grid."""
    a = topo.twins[topo.cards[card_a].twin].coords
    b = topo.twins[topo.cards[card_b].twin].coords
    return any(abs(x - y) > 1 for x, y in zip(a, b, strict=True)) or (
        a != b and any(radix == 2 for radix in topo.params["dims"]) and _parallel_pair(topo, card_a, card_b)
    )


def _parallel_pair(topo: Topology, card_a: str, card_b: str) -> bool:
    """In a ring of size 2, the d- link of the lower node is the second cable: draw it curved too."""
    a = topo.twins[topo.cards[card_a].twin].coords
    b = topo.twins[topo.cards[card_b].twin].coords
    # the link counted as "wrap" is the one leaving the higher-coordinate node through d+
    return any(x == 1 and y == 0 for x, y in zip(a, b, strict=True))
