"""``twinnet cost [fattree]``: the fat-tree cost model's report (JSON-ready dict), its text tables and plot.

Monolithic radix-R switches against twin switches (and the deeper trees of the twin's
cards and of radix-R/2 switches), the optimum radix, and a sweep over radices.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from topologies.cost_cli import DEFAULT_A, DEFAULT_B, DEFAULT_PLOT_TOP, CostCliError
from topologies.text_table import fmt, table

FATTREE_UNITS = {
    "nodes": "end nodes (count)",
    "radix": "ports per switch offered to the tree (a twin counts its 2k external ports)",
    "chip_radix": "ports per chip (a twin's card has k + r)",
    "levels": "switch levels (count), eq. 2 / 19 in integer arithmetic",
    "switches": "switches (count, a twin counts once), eq. 3 / 20 as published",
    "chips": "chips (count): switches x chips per switch",
    "inter_switch_links": "bidirectional links between switches (count), eq. 4 / 21; host links and twin "
    "internal "
    "links excluded",
    "internal_links": "links between the two cards of a twin (count)",
    "crosspoints": "chips x chip_radix^2 (count)",
    "link_cost": "a x inter_switch_links, in crosspoint units",
    "internal_links_cost": "internal_link_cost x internal_links, in crosspoint units",
    "chip_cost": "crosspoints + b x chips, in crosspoint units",
    "total_cost": "link_cost + internal_links_cost + chip_cost, in crosspoint units (Minkenberg 2010's C_ss "
    "for monolithic switches)",
    "a, b, internal_link_cost": "crosspoint units (one crosspoint = 1)",
    "optimum radices": "ports (real numbers for the smoothed model, even integers for the discrete one)",
}


def _cost_parameters(args: argparse.Namespace) -> tuple[float, float, str | None]:
    from topologies.cost import TABLE_I_PRINTED

    if args.preset:
        if args.a is not None or args.b is not None:
            raise CostCliError("--preset sets a and b; give either --preset or -a/-b")
        a, b = TABLE_I_PRINTED[args.preset]
        return a, b, f"Table I {args.preset} (as printed)"
    a = DEFAULT_A if args.a is None else args.a
    b = DEFAULT_B if args.b is None else args.b
    return a, b, None


def _assumptions(a: float, b: float, internal_link_cost: float, internal_links: int | None) -> list[str]:
    rule = (
        f"r = {internal_links}"
        if internal_links is not None
        else "r = ceil(k/4), at least 1 (topologies.fattree)"
    )
    return [
        "Minkenberg 2010: k-ary l-tree of same-radix switches, k = floor(r/2) ports down and k up, full "
        "bisection",
        "cost unit: one crosspoint; a chip of radix m costs m^2 + b (crosspoints plus base cost b)",
        f"inter-switch link: a = {a:g} each; host links excluded (the same for every design)",
        "levels: smallest L with k^L >= N (integers); switches: L x ceil(N/k) as published (a full level "
        "even when N is not a power of k)",
        f"twin of radix 2k: two cards of radix k + r joined by r internal links ({rule}); cost "
        f"2((k+r)^2 + b) + a_int x r with a_int = {internal_link_cost:g}; both cards of every twin counted, "
        "root twins included",
        "twin internal links are not inter-switch links; a twin carries at most r links of traffic between "
        "its cards (r < k), so it is not a nonblocking radix-2k switch",
        "card tree: the twin's cards used alone as switches (radix k + r; an odd radix leaves a port idle); "
        "half-radix tree: switches of radix k",
        "shape single: top switches keep their up ports idle (r <= 2N); double: they "
        "join a second half (r <= N)",
    ]


def _network_json(cost: Any) -> dict[str, Any]:
    design = cost.design
    return {
        "design": design.kind,
        "radix": design.radix,
        "chip_radix": design.chip_radix,
        "chips_per_switch": design.chips,
        "internal_links_per_switch": design.internal_links,
        "levels": cost.levels,
        "switches": cost.switches,
        "chips": cost.chips,
        "inter_switch_links": cost.inter_switch_links,
        "internal_links": cost.internal_links,
        "crosspoints": cost.crosspoints,
        "link_cost": _number(cost.link_cost),
        "internal_links_cost": _number(cost.internal_links_cost),
        "chip_cost": _number(cost.chip_cost),
        "total_cost": _number(cost.total_cost),
    }


def _number(value: float) -> float | int:
    """An integer when the value is one (costs with integer a and b), else the float."""
    return int(value) if float(value).is_integer() else value


def _comparison_json(comparison: Any) -> dict[str, Any]:
    return {
        "monolithic": _network_json(comparison.monolithic),
        "twin": _network_json(comparison.twin),
        "card_tree": None if comparison.card_tree is None else _network_json(comparison.card_tree),
        "half_radix_tree": None
        if comparison.half_radix_tree is None
        else _network_json(comparison.half_radix_tree),
        "twin_over_monolithic": comparison.twin.total_cost / comparison.monolithic.total_cost,
        "notes": list(comparison.notes),
    }


def _optimum_json(nodes: int, a: float, b: float, args: argparse.Namespace, a_int: float) -> dict[str, Any]:
    from topologies.cost import (
        discrete_optimum,
        optimum_radix,
        optimum_radix_b_estimate,
        optimum_radix_b_only,
        optimum_radix_lambert,
    )

    smoothed = optimum_radix(a, b)
    result: dict[str, Any] = {
        "smoothed": smoothed,
        "smoothed_even": 2 * math.ceil(smoothed / 2),
        "smoothed_note": "root of eq. 14, independent of N; the single-sized optimum and the double-sized "
        "one as N grows",
        "lambert_b0": optimum_radix_lambert(a),
        "lambert_b0_note": "eq. 15: the optimum if b were 0 (exact when b = 0)",
        "a0_exact": optimum_radix_b_only(b),
        "a0_estimate": optimum_radix_b_estimate(b),
        "a0_note": "eq. 16 (exact) and eq. 17 (estimate 2 + sqrt(b + 4)): the optimum if a were 0",
    }
    for kind in ("monolithic", "twin"):
        try:
            best = discrete_optimum(nodes, a, b, kind, args.internal_links, a_int, args.shape)
        except ValueError as error:
            result[f"discrete_{kind}"] = None
            result[f"discrete_{kind}_note"] = str(error)
            continue
        result[f"discrete_{kind}"] = {
            "radix": best.design.radix,
            "chip_radix": best.design.chip_radix,
            "internal_links_per_switch": best.design.internal_links,
            "levels": best.levels,
            "total_cost": _number(best.total_cost),
        }
    return result


def _sweep_radices(args: argparse.Namespace, smoothed_optimum: float) -> list[int] | None:
    """The radices of ``--sweep``; for a plot without one, 4 up to twice the optimum (at least 64)."""
    from topologies.cost import max_radix, parse_sweep

    if args.sweep:
        return parse_sweep(args.sweep, args.nodes, args.shape)
    if args.plot:
        wanted = max(DEFAULT_PLOT_TOP, 2 * math.ceil(smoothed_optimum))
        top = min(max_radix(args.nodes, args.shape), wanted)
        return parse_sweep(f"4:{top - top % 2}", args.nodes, args.shape)
    return None


def fattree_report(args: argparse.Namespace) -> dict[str, Any]:
    from topologies.cost import check_costs, check_nodes, check_radix, compare_designs, discrete_optimum

    check_nodes(args.nodes)
    a, b, preset = _cost_parameters(args)
    check_costs(a=a, b=b)
    a_int = a if args.internal_link_cost is None else args.internal_link_cost
    check_costs(internal_link_cost=a_int)
    if args.internal_links is not None and args.internal_links < 1:
        raise CostCliError(f"--internal-links must be >= 1, got {args.internal_links}")
    if args.plot and not args.plot.lower().endswith(".png"):
        raise CostCliError(f"--plot writes a PNG file; give a name ending in .png, got {args.plot!r}")
    report: dict[str, Any] = {
        "mode": "fattree",
        "source": "Minkenberg 2010 (optimum switch radix) applied to Villar 2011's twin switches",
        "nodes": args.nodes,
        "shape": args.shape,
        "parameters": {
            "a": a,
            "b": b,
            "internal_link_cost": a_int,
            "internal_links": args.internal_links,
            "preset": preset,
        },
        "assumptions": _assumptions(a, b, a_int, args.internal_links),
        "units": FATTREE_UNITS,
        "optimum": _optimum_json(args.nodes, a, b, args, a_int),
    }
    radices = _sweep_radices(args, report["optimum"]["smoothed"])
    if radices is not None:
        report["sweep"] = [_sweep_row(radix, args, a, b, a_int) for radix in radices]
    else:
        if args.radix is not None:
            radix = args.radix
        else:
            radix = discrete_optimum(args.nodes, a, b, "monolithic", shape=args.shape).design.radix
            report["radix_note"] = (
                "no --radix given: the designs are compared at the discrete monolithic optimum"
            )
        check_radix(radix, args.nodes, args.shape)
        report["radix"] = radix
        report["comparison"] = _comparison_json(
            compare_designs(radix, args.nodes, a, b, args.internal_links, a_int, args.shape)
        )
    return report


def _sweep_row(radix: int, args: argparse.Namespace, a: float, b: float, a_int: float) -> dict[str, Any]:
    """One radix of a sweep: the comparison, or the monolithic tree alone where no twin of that radix fits."""
    from topologies.cost import CostModelError, compare_designs, evaluate, monolithic_switch

    try:
        row = _comparison_json(
            compare_designs(radix, args.nodes, a, b, args.internal_links, a_int, args.shape)
        )
    except CostModelError as error:
        mono = evaluate(monolithic_switch(radix), args.nodes, a, b, shape=args.shape)
        row = {
            "monolithic": _network_json(mono),
            "twin": None,
            "card_tree": None,
            "half_radix_tree": None,
            "twin_over_monolithic": None,
            "notes": [f"no twin: {error}"],
        }
    row["radix"] = radix
    return row


def fattree_text(report: dict[str, Any]) -> str:
    p = report["parameters"]
    preset = f" ({p['preset']})" if p["preset"] else ""
    out = [
        f"Fat-tree cost (Minkenberg 2010) for {report['nodes']:,} end nodes, {report['shape']}-sized tree",
        f"a = {p['a']:g}{preset}, b = {p['b']:g}, internal link = {p['internal_link_cost']:g}"
        "  (all in crosspoint units)",
        "",
        "Assumptions:",
        *(f"  - {line}" for line in report["assumptions"]),
        "",
        _optimum_text(report["optimum"]),
        "",
    ]
    if "sweep" in report:
        out.append(_sweep_text(report["sweep"]))
    else:
        if "radix_note" in report:
            out.append(f"({report['radix_note']})")
        out.append(_comparison_text(report["comparison"]))
    if "plot" in report:
        out += ["", f"plot: {report['plot']}"]
    return "\n".join(out)


def _optimum_text(opt: dict[str, Any]) -> str:
    lines = [
        "Optimum radix:",
        f"  smoothed model, root of eq. 14: {opt['smoothed']:.2f} (even: {opt['smoothed_even']}),"
        " independent of N",
        f"  closed form for b = 0 (eq. 15, Lambert W): {opt['lambert_b0']:.2f}",
        f"  for a = 0 (eq. 16): {opt['a0_exact']:.2f};"
        f" estimate 2 + sqrt(b + 4) (eq. 17): {opt['a0_estimate']:.2f}",
    ]
    for kind in ("monolithic", "twin"):
        best = opt[f"discrete_{kind}"]
        if best is None:
            lines.append(f"  discrete {kind}: none ({opt[f'discrete_{kind}_note']})")
            continue
        extra = (
            f" (cards of radix {best['chip_radix']}, r = {best['internal_links_per_switch']})"
            if kind == "twin"
            else ""
        )
        lines.append(
            f"  discrete {kind} optimum over even radices: {best['radix']}{extra}, "
            f"{best['levels']} levels, cost {fmt(best['total_cost'])}"
        )
    return "\n".join(lines)


def _comparison_text(comparison: dict[str, Any]) -> str:
    headers = [
        "design",
        "radix",
        "chip radix",
        "levels",
        "switches",
        "chips",
        "inter-switch links",
        "internal links",
        "crosspoints",
        "cost",
    ]
    names = {
        "monolithic": "monolithic",
        "twin": "twin",
        "card_tree": "card tree",
        "half_radix_tree": "half-radix tree",
    }
    rows = []
    for key, label in names.items():
        net = comparison[key]
        if net is None:
            continue
        rows.append(
            [
                label,
                str(net["radix"]),
                str(net["chip_radix"]),
                str(net["levels"]),
                fmt(net["switches"]),
                fmt(net["chips"]),
                fmt(net["inter_switch_links"]),
                fmt(net["internal_links"]),
                fmt(net["crosspoints"]),
                fmt(net["total_cost"]),
            ]
        )
    text = table(headers, rows)
    text += f"\ntwin / monolithic cost: {comparison['twin_over_monolithic']:.3f}"
    return text + "".join(f"\nnote: {note}" for note in comparison["notes"])


def _sweep_text(sweep: list[dict[str, Any]]) -> str:
    headers = [
        "radix",
        "levels",
        "switches",
        "links",
        "monolithic",
        "twin r",
        "card radix",
        "twin",
        "twin/mono",
        "card tree",
        "card levels",
    ]
    rows = []
    for row in sweep:
        mono, twin, cards = row["monolithic"], row["twin"], row["card_tree"]
        rows.append(
            [
                str(row["radix"]),
                str(mono["levels"]),
                fmt(mono["switches"]),
                fmt(mono["inter_switch_links"]),
                fmt(mono["total_cost"]),
                "-" if twin is None else str(twin["internal_links_per_switch"]),
                "-" if twin is None else str(twin["chip_radix"]),
                "-" if twin is None else fmt(twin["total_cost"]),
                "-" if twin is None else f"{row['twin_over_monolithic']:.3f}",
                "-" if cards is None else fmt(cards["total_cost"]),
                "-" if cards is None else str(cards["levels"]),
            ]
        )
    return "Costs by radix (crosspoint units; links = inter-switch links):\n" + table(headers, rows)


def plot_sweep(report: dict[str, Any], path: str) -> str:
    """Cost against radix for monolithic and twin switches (and the card tree), written as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep = report["sweep"]
    figure, axes = plt.subplots(figsize=(9, 5.5), dpi=120)
    series = [
        ("monolithic", "monolithic radix-2k switches", "tab:blue", "o", "-"),
        ("twin", "twin switches (2 cards of radix k+r)", "tab:orange", "s", "-"),
        ("card_tree", "tree of the cards alone (radix k+r)", "tab:gray", "^", ":"),
    ]
    for key, label, colour, marker, style in series:
        points = [(row["radix"], row[key]["total_cost"]) for row in sweep if row[key] is not None]
        if points:
            xs, ys = zip(*points, strict=True)
            size = 3.5 if len(xs) <= 40 else 1.5
            axes.plot(xs, ys, style, color=colour, marker=marker, markersize=size, linewidth=1.4, label=label)
    for kind, colour in (("monolithic", "tab:blue"), ("twin", "tab:orange")):
        best = min(
            (row for row in sweep if row[kind] is not None),
            key=lambda row, kind=kind: row[kind]["total_cost"],
            default=None,
        )
        if best is not None:
            cost = best[kind]["total_cost"]
            axes.plot(
                [best["radix"]],
                [cost],
                "*",
                color=colour,
                markersize=14,
                markeredgecolor="black",
                label=f"cheapest {kind} in sweep: radix {best['radix']} ({fmt(cost)})",
            )
    smoothed = report["optimum"]["smoothed"]
    axes.axvline(
        smoothed,
        color="tab:green",
        linestyle="--",
        linewidth=1,
        label=f"smoothed optimum (eq. 14): {smoothed:.1f}",
    )
    axes.set_yscale("log")
    axes.set_xlabel("switch radix 2k (ports offered to the tree)")
    axes.set_ylabel("network cost (crosspoint units, log scale)")
    p = report["parameters"]
    rule = f"r = {p['internal_links']}" if p["internal_links"] is not None else "r = ceil(k/4)"
    axes.set_title(
        f"Fat-tree cost, {report['nodes']:,} end nodes ({report['shape']}-sized), "
        f"a = {p['a']:g}, b = {p['b']:g}, internal link = {p['internal_link_cost']:g}, {rule}",
        fontsize=10,
    )
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8, loc="best")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
    return path
