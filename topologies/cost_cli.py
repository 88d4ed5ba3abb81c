"""``twinnet cost``: seed 004's fat-tree cost and optimum radix, with twin switches; seed 001's BvN degrees.

Two modes:

* ``twinnet cost [fattree] --nodes N [-a A] [-b B] [--radix R | --sweep 4:64[:2]]``:
  levels, switches, inter-switch links, crosspoints and cost of a fat tree of
  monolithic radix-R switches, of the same tree of twin switches, and of the
  deeper trees of the twin's cards and of radix-R/2 switches; the optimum
  radix (root of eq. 14, its closed form for b = 0, the exhaustive discrete
  optimum). ``--plot FILE.png`` draws cost against radix for a sweep.
* ``twinnet cost bvn --nodes N``: seed 001's per-level link degrees of a fat
  tree that only realises a load-balanced BvN switch's N permutations
  (Lemma 1) against the nonblocking ones, with the loads the bit-reverse
  family and the rotators put on them.

Examples::

    twinnet cost --nodes 4096 --sweep 4:64 --plot cost.png
    twinnet cost --nodes 21952 --radix 56 --internal-links 8 --json
    twinnet cost --nodes 65536 --preset high-end
    twinnet cost bvn --nodes 256

Only argparse is imported at module level; the model and matplotlib load in ``main``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from topologies.errors import TwinnetError

MODES = ("fattree", "bvn")
DEFAULT_A, DEFAULT_B = 10.0, 100.0  # seed 004's Fig. 3 parameters
DEFAULT_PLOT_TOP = 64  # --plot without --sweep draws 4..max(this, twice the smoothed optimum), at most 2N
BVN_LOADS_LIMIT = 256  # family loads take N**2 log N steps (about 0.5 s at 256, 12 s at 1024)


class CostCliError(TwinnetError, ValueError):
    """Options that do not fit together."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``twinnet cost``."""
    parser.add_argument(
        "mode",
        nargs="?",
        choices=MODES,
        default="fattree",
        help="fattree (default): seed 004's cost model, monolithic vs twin switches; "
        "bvn: seed 001's link degrees for a load-balanced BvN switch",
    )
    parser.add_argument(
        "--nodes",
        type=int,
        required=True,
        help="number of end nodes (bvn: a power of two); --n means stages elsewhere in twinnet",
    )
    model = parser.add_argument_group("fattree cost model")
    model.add_argument(
        "-a",
        "--link-cost",
        type=float,
        dest="a",
        help=f"a: cost of one inter-switch link, in crosspoints (default {DEFAULT_A:g})",
    )
    model.add_argument(
        "-b",
        "--switch-cost",
        type=float,
        dest="b",
        help=f"b: base cost of one switch chip, in crosspoints (default {DEFAULT_B:g})",
    )
    model.add_argument(
        "--preset",
        choices=("low-end", "high-end"),
        help="a and b as seed 004's Table I prints them (low-end 810/16.3, high-end 5100/1.63)",
    )
    radix = model.add_mutually_exclusive_group()
    radix.add_argument("--radix", type=int, help="one even radix 2k, 4..2N: compare the designs at it")
    radix.add_argument(
        "--sweep",
        metavar="START:STOP[:STEP]",
        help="even radices from START to STOP (included), step 2 by default",
    )
    model.add_argument(
        "--internal-links",
        type=int,
        metavar="R",
        help="internal links per twin, 1 <= R < k (default ceil(k/4), as topologies.fattree)",
    )
    model.add_argument(
        "--internal-link-cost",
        type=float,
        metavar="A_INT",
        help="cost of one internal link between a twin's cards (default: a)",
    )
    model.add_argument(
        "--shape",
        choices=("single", "double"),
        default="single",
        help="single-sized tree (top ports idle, r <= 2N) or double-sized (r <= N)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print JSON (with each field's unit) instead of tables"
    )
    parser.add_argument(
        "--plot",
        metavar="FILE.png",
        help="draw cost against radix, monolithic vs twin (the --sweep, else 4 to twice the optimum, "
        f"at least {DEFAULT_PLOT_TOP})",
    )


def main(args: argparse.Namespace) -> int:
    """Run the chosen mode and print a table or JSON."""
    if args.mode == "bvn":
        report = _bvn_report(args)
        print(json.dumps(report, indent=2) if args.json else _bvn_text(report))
        return 0
    report = _fattree_report(args)
    if args.plot:
        report["plot"] = _plot_sweep(report, args.plot)
    print(json.dumps(report, indent=2) if args.json else _fattree_text(report))
    return 0


# -- fattree mode -----------------------------------------------------------------------------------

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
    "total_cost": "link_cost + internal_links_cost + chip_cost, in crosspoint units (seed 004's C_ss for "
    "monolithic switches)",
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
        "seed 004: k-ary l-tree of same-radix switches, k = floor(r/2) ports down and k up, full bisection",
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


def _fattree_report(args: argparse.Namespace) -> dict[str, Any]:
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
        "source": "seed 004 (Minkenberg et al., optimum switch radix) applied to seed 000's twin switches",
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


def _fmt(value: float | int | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    return f"{int(value):,}"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell: the first left-aligned (names), the others right-aligned."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = (c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))
        return "  ".join([first, *rest]).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *(line(row) for row in rows)])


def _fattree_text(report: dict[str, Any]) -> str:
    p = report["parameters"]
    preset = f" ({p['preset']})" if p["preset"] else ""
    out = [
        f"Fat-tree cost (seed 004) for {report['nodes']:,} end nodes, {report['shape']}-sized tree",
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
            f"{best['levels']} levels, cost {_fmt(best['total_cost'])}"
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
                _fmt(net["switches"]),
                _fmt(net["chips"]),
                _fmt(net["inter_switch_links"]),
                _fmt(net["internal_links"]),
                _fmt(net["crosspoints"]),
                _fmt(net["total_cost"]),
            ]
        )
    text = _table(headers, rows)
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
                _fmt(mono["switches"]),
                _fmt(mono["inter_switch_links"]),
                _fmt(mono["total_cost"]),
                "-" if twin is None else str(twin["internal_links_per_switch"]),
                "-" if twin is None else str(twin["chip_radix"]),
                "-" if twin is None else _fmt(twin["total_cost"]),
                "-" if twin is None else f"{row['twin_over_monolithic']:.3f}",
                "-" if cards is None else _fmt(cards["total_cost"]),
                "-" if cards is None else str(cards["levels"]),
            ]
        )
    return "Costs by radix (crosspoint units; links = inter-switch links):\n" + _table(headers, rows)


def _plot_sweep(report: dict[str, Any], path: str) -> str:
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
                label=f"cheapest {kind} in sweep: radix {best['radix']} ({_fmt(cost)})",
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


# -- bvn mode -----------------------------------------------------------------------------------------

BVN_UNITS = {
    "level": "tree level j, root = 0, leaves = n (seed 001's numbering)",
    "nodes": "tree nodes at this level (count)",
    "up_*": "parallel links from one node of this level to its parent (count per node)",
    "down_*": "parallel links from one node of this level to both its children (count per node)",
    "radix_*": "ports of one node of this level: up + down (count)",
    "*_nonblocking": "degrees that realise all N! permutations (eq. 6-7)",
    "*_lemma1": "Lemma 1's lower bound for any N permutations summing to the all-ones matrix",
    "max_load_*": "largest number of packets on one node's up bundle (or on the bundle from its parent down "
    "to it) in one slot, over all nodes of the level and all permutations of the family",
    "total_up_links_*": "sum over levels 1..n of nodes x up degree (links, leaf links included)",
}


def _bvn_report(args: argparse.Namespace) -> dict[str, Any]:
    from topologies.bvn import degree_table, max_family_loads, total_up_links, tree_bits
    from topologies.permutations import (
        bit_reverse_permutations,
        has_uniform_mapping_property,
        rotator_permutations,
        sums_to_all_ones,
    )

    for name in ("a", "b", "preset", "radix", "sweep", "internal_links", "internal_link_cost", "plot"):
        if getattr(args, name) is not None:
            raise CostCliError(f"--{name.replace('_', '-')} belongs to the fattree mode, not to bvn")
    n_bits = tree_bits(args.nodes)
    levels = []
    for row in degree_table(n_bits):
        levels.append(
            {
                "level": row.level,
                "nodes": row.nodes,
                "up_nonblocking": row.up_nonblocking,
                "up_lemma1": row.up_lemma1,
                "down_nonblocking": row.down_nonblocking,
                "down_lemma1": row.down_lemma1,
                "radix_nonblocking": row.radix_nonblocking,
                "radix_lemma1": row.radix_lemma1,
            }
        )
    report: dict[str, Any] = {
        "mode": "bvn",
        "source": "seed 001 (Chueh et al., load-balanced BvN switches and fat trees), Lemma 1",
        "nodes": args.nodes,
        "n_bits": n_bits,
        "units": BVN_UNITS,
        "levels": levels,
        "total_up_links_nonblocking": total_up_links(n_bits, nonblocking=True),
        "total_up_links_lemma1": total_up_links(n_bits),
    }
    if args.nodes <= BVN_LOADS_LIMIT:
        family = bit_reverse_permutations(n_bits)
        rotators = rotator_permutations(args.nodes)
        bit_reverse_loads = max_family_loads(family, n_bits)
        rotator_loads = max_family_loads(rotators, n_bits)
        for entry in levels[1:]:
            j = entry["level"]
            entry["max_load_bit_reverse_up"], entry["max_load_bit_reverse_down"] = bit_reverse_loads[j - 1]
            entry["max_load_rotators_up"], entry["max_load_rotators_down"] = rotator_loads[j - 1]
        report["bit_reverse_family"] = {
            "sums_to_all_ones": sums_to_all_ones(family),
            "all_have_uniform_mapping_property": all(has_uniform_mapping_property(p) for p in family),
            "meets_lemma1_bound": all(
                up <= entry["up_lemma1"] and down <= entry["up_lemma1"]
                for (up, down), entry in zip(bit_reverse_loads, levels[1:], strict=True)
            ),
        }
    else:
        report["loads_note"] = f"family loads computed only up to {BVN_LOADS_LIMIT} end nodes"
    return report


def _bvn_text(report: dict[str, Any]) -> str:
    n = report["nodes"]
    with_loads = "bit_reverse_family" in report
    headers = ["level", "nodes", "up nb", "up lb", "down nb", "down lb", "radix nb", "radix lb"]
    if with_loads:
        headers += ["pi_i up/down", "rotators up/down"]
    rows = []
    for e in report["levels"]:
        row = [
            str(e["level"]),
            _fmt(e["nodes"]),
            _fmt(e["up_nonblocking"]),
            _fmt(e["up_lemma1"]),
            _fmt(e["down_nonblocking"]),
            _fmt(e["down_lemma1"]),
            _fmt(e["radix_nonblocking"]),
            _fmt(e["radix_lemma1"]),
        ]
        if with_loads:
            if e["level"] == 0:
                row += ["-", "-"]
            else:
                row += [
                    f"{e['max_load_bit_reverse_up']}/{e['max_load_bit_reverse_down']}",
                    f"{e['max_load_rotators_up']}/{e['max_load_rotators_down']}",
                ]
        rows.append(row)
    nb, lb = report["total_up_links_nonblocking"], report["total_up_links_lemma1"]
    out = [
        f"Binary fat tree of {n:,} end nodes (seed 001): degrees for a load-balanced BvN switch",
        "nb = nonblocking (all N! permutations), lb = Lemma 1 bound (N permutations summing to all-ones);",
        "up = links to the parent per node, down = links to both children per node, radix = up + down;",
        "level 0 is the root.",
        "",
        _table(headers, rows),
        "",
        f"total upward links: nonblocking {nb:,}, Lemma 1 {lb:,} (saving {1 - lb / nb:.1%})",
    ]
    if with_loads:
        fam = report["bit_reverse_family"]
        out += [
            "pi_i = bit-reverse then shift by i, i = 1..N (max bundle load over the family, per slot); "
            "rotators = shifts x -> x + i",
            f"bit-reverse family: sums to all-ones {fam['sums_to_all_ones']}, uniform mapping property "
            f"{fam['all_have_uniform_mapping_property']},"
            f" within Lemma 1's degrees {fam['meets_lemma1_bound']}",
        ]
    else:
        out.append(report["loads_note"])
    return "\n".join(out)


if __name__ == "__main__":  # pragma: no cover - run through ``twinnet cost``
    parser = argparse.ArgumentParser(prog="twinnet cost")
    add_arguments(parser)
    sys.exit(main(parser.parse_args()))
