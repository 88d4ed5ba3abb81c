"""``twinnet topo``: describe, list or draw a topology, without emulating it.

twinnet topo fattree --k 4 --n 2 --twin                  # summary and port table
twinnet topo ndt --dims 4x4x4 --list ports               # every card port and its peer
twinnet topo ndt --dims 4x4x4 --json > ndt.json          # the whole physical graph
twinnet topo fattree --k 4 --n 2 --twin --draw out/t.png # a picture
twinnet topo ndt --n 3 --k 4 --list configs              # the (1/2) C(2n, n) port configurations
"""

from __future__ import annotations

import argparse
import json
import sys

from topologies.build import add_topology_arguments, topology_from_args

LIST_WHAT = ("cards", "hosts", "links", "twins", "ports", "configs")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Topology options (shared with the other sub-commands) and what to show."""
    add_topology_arguments(parser)
    show = parser.add_argument_group("output (default: a summary with the port table)")
    show.add_argument(
        "--list",
        choices=LIST_WHAT,
        dest="list_what",
        help="print one tab-separated row per item; 'configs' lists the port configurations "
        "a twin can take (ndt: all (1/2)C(2n,n); fattree --twin: the optimal pair configurations)",
    )
    show.add_argument(
        "--list-configs",
        action="store_const",
        const="configs",
        dest="list_what",
        help="the same as --list configs",
    )
    show.add_argument("--json", action="store_true", help="print the whole topology as JSON")
    show.add_argument("--draw", metavar="FILE", help="write a picture (.png, .svg or .pdf)")


def main(args: argparse.Namespace) -> int:
    """Build the topology and print or draw what was asked."""
    from topologies import describe

    if args.list_what == "configs":
        for row in config_rows(args):
            print(row)
        return 0
    topo = topology_from_args(args)
    if args.json:
        json.dump(describe.to_dict(topo), sys.stdout, indent=1)
        print()
    elif args.list_what:
        for row in describe.list_rows(topo, args.list_what):
            print(row)
    else:
        for line in describe.summary_lines(topo):
            print(line)
    if args.draw:
        from topologies.draw import draw

        print(
            f"picture: {draw(topo, args.draw)}",
            file=sys.stderr if args.json or args.list_what else sys.stdout,
        )
    return 0


def config_rows(args: argparse.Namespace) -> list[str]:
    """Rows of `--list configs` for the family and size in `args`."""
    from topologies.model import TopologyError

    if args.family == "ndt":
        from topologies.portconfig import all_port_configs, cbest
        from topologies.torus import parse_dims

        n = len(parse_dims(args.dims)) if args.dims else args.n
        if not n:
            raise TopologyError("--list configs for ndt needs --n or --dims")
        named = {cbest(n, split_sign_on_card0=-1): "cbest-thesis", cbest(n): "cbest"}  # equal for even n
        rows = ["config\tsplit_dimensions\tname"]
        for config in all_port_configs(n):
            note = named.get(config, "")
            rows.append(f"{config}\t{','.join(map(str, config.split_dimensions)) or '-'}\t{note}")
        return rows
    if args.family == "fattree" and args.twin:
        from topologies.scp import describe_alpha, pair_configs

        if not args.k:
            raise TopologyError("--list configs for fattree needs --k")
        rows = ["alpha_ports\tbeta_ports\tname"]
        for alpha in pair_configs(args.k):
            beta = sorted(set(range(2 * args.k)) - alpha)
            name = describe_alpha(alpha, args.k)
            rows.append(
                f"{','.join(map(str, sorted(alpha)))}\t{','.join(map(str, beta))}\t"
                f"{name if not name[0].isdigit() else ''}"
            )
        return rows
    raise TopologyError(
        "--list configs applies to ndt and to fattree --twin (single-card switches have no configuration)"
    )
