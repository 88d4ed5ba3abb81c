"""``twinnet cost``: fat-tree cost and optimum radix, twin switches too (Minkenberg 2010); BvN link degrees.

Two modes:

* ``twinnet cost [fattree] --nodes N [-a A] [-b B] [--radix R | --sweep 4:64[:2]]``:
  levels, switches, inter-switch links, crosspoints and cost of a fat tree of
  monolithic radix-R switches, of the same tree of twin switches, and of the
  deeper trees of the twin's cards and of radix-R/2 switches; the optimum
  radix (root of eq. 14, its closed form for b = 0, the exhaustive discrete
  optimum). ``--plot FILE.png`` draws cost against radix for a sweep.
* ``twinnet cost bvn --nodes N``: Chueh et al.'s per-level link degrees of a fat
  tree that only realises a load-balanced BvN switch's N permutations
  (Lemma 1) against the nonblocking ones, with the loads the bit-reverse
  family and the rotators put on them.

Examples::

    twinnet cost --nodes 4096 --sweep 4:64 --plot cost.png
    twinnet cost --nodes 21952 --radix 56 --internal-links 8 --json
    twinnet cost --nodes 65536 --preset high-end
    twinnet cost bvn --nodes 256

This module holds the options and picks the mode; each mode is a module of its own
(:mod:`topologies.cost_report`, :mod:`topologies.bvn_report`, their tables in
:mod:`topologies.text_table`). Only argparse is imported at module level; the model and
matplotlib load in ``main``.
"""

from __future__ import annotations

import argparse
import json
import sys

from topologies.errors import TwinnetError

MODES = ("fattree", "bvn")
DEFAULT_A, DEFAULT_B = 10.0, 100.0  # Minkenberg 2010, Fig. 3's parameters
DEFAULT_PLOT_TOP = 64  # --plot without --sweep draws 4..max(this, twice the smoothed optimum), at most 2N


class CostCliError(TwinnetError, ValueError):
    """Options that do not fit together."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``twinnet cost``."""
    parser.add_argument(
        "mode",
        nargs="?",
        choices=MODES,
        default="fattree",
        help="fattree (default): Minkenberg 2010's cost model, monolithic vs twin switches; "
        "bvn: Chueh et al.'s link degrees for a load-balanced BvN switch",
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
        help="a and b as Minkenberg 2010's Table I prints them (low-end 810/16.3, high-end 5100/1.63)",
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
        from topologies.bvn_report import bvn_report, bvn_text

        report = bvn_report(args)
        print(json.dumps(report, indent=2) if args.json else bvn_text(report))
        return 0
    from topologies.cost_report import fattree_report, fattree_text, plot_sweep

    report = fattree_report(args)
    if args.plot:
        report["plot"] = plot_sweep(report, args.plot)
    print(json.dumps(report, indent=2) if args.json else fattree_text(report))
    return 0


if __name__ == "__main__":  # pragma: no cover - run through ``twinnet cost``
    parser = argparse.ArgumentParser(prog="twinnet cost")
    add_arguments(parser)
    sys.exit(main(parser.parse_args()))
