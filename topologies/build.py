"""One entry point from a topology spec (family and parameters) to a Topology, shared by every sub-command.

Every ``twinnet`` sub-command that takes a network (topo, analyze, run, cli) calls
``add_topology_arguments(parser)`` and ``topology_from_args(args)``, so the same
words build the same network everywhere:

    twinnet topo fattree --k 4 --n 2 --twin [--r 1] [--config pairs] [--root-config alldown]
    twinnet topo ndt --dims 4x4x4 [--config cbest | --config 'X+X-Y+|Y-Z+Z-']
    twinnet topo torus --dims 8x8        (or --k 8 --n 2)

>>> build_topology("ndt", dims="3x3x3").family
'ndt'
>>> build_topology("fattree", k=4, n=2, twin=True).counts()["cards"]
16
"""

from __future__ import annotations

import argparse
from typing import Any

from topologies.model import Topology, TopologyError

#: a torus of more dimensions has at least 2^64 nodes (its radices are at least 2)
MAX_DIMENSIONS = 64

#: family word on the command line -> what it builds
FAMILIES: dict[str, str] = {
    "fattree": "k-ary n-tree (Villar 2011); --twin builds it of twin switches",
    "ndt": "n-dimensional twin torus nDT (Andujar thesis, nDT paper): two cards and two PEs per node",
    "torus": "k-ary n-cube / mD torus: one card and one PE per node",
}


def build_topology(
    family: str,
    *,
    k: int | None = None,
    n: int | None = None,
    twin: bool = False,
    r: int | None = None,
    config: str | None = None,
    root_config: str | None = None,
    dims: str | list[int] | tuple[int, ...] | None = None,
) -> Topology:
    """Build a topology of `family` (a key of FAMILIES); a parameter the family does not take is an error."""
    from topologies.fattree import check_tree_parameters, kary_ntree, twin_fattree
    from topologies.size import check_topology_size, estimate_size
    from topologies.torus import ndt_torus, parse_dims, torus

    given = {"r": r, "config": config, "root_config": root_config, "dims": dims, "twin": twin or None}
    if family == "fattree":
        _refuse(family, given, allowed=("r", "config", "root_config", "twin") if twin else ())
        if k is None or n is None:
            raise TopologyError("fattree needs both k (switch arity) and n (stages), e.g. --k 4 --n 2")
        check_tree_parameters(k, n)
        size = estimate_size(family, k=k, n=n, twin=twin, r=r)
        check_topology_size(size, f"fattree k={k} n={n}{' twin' if twin else ''}")
        if not twin:
            return kary_ntree(k, n)
        return twin_fattree(k, n, r=r, config=config or "pairs", root_config=root_config or "alldown")
    if family in ("ndt", "torus"):
        _refuse(family, given, allowed=("config", "dims") if family == "ndt" else ("dims",))
        if dims is None:
            if k is None or n is None:
                raise TopologyError(f"{family} needs dims (e.g. --dims 4x4x4) or both k and n (--k 4 --n 3)")
            if n > MAX_DIMENSIONS or n < 1:
                raise TopologyError(f"{family}: n (dimensions) must be 1..{MAX_DIMENSIONS}, got {n}")
            dims = [k] * n
        elif k is not None or n is not None:
            raise TopologyError(f"{family}: give either dims or k and n, not both")
        dims = parse_dims(dims)
        check_topology_size(estimate_size(family, dims=dims), f"{family} {'x'.join(map(str, dims))}")
        if family == "ndt":
            return ndt_torus(dims, config or "cbest")
        return torus(dims)
    raise TopologyError(f"family must be one of {', '.join(FAMILIES)}, got {family!r}")


def _refuse(family: str, given: dict[str, Any], allowed: tuple[str, ...]) -> None:
    extra = [name for name, value in given.items() if value is not None and name not in allowed]
    if extra:
        hint = " (twin-switch options need --twin)" if family == "fattree" else ""
        raise TopologyError(
            f"{family} does not take {', '.join(extra)}{hint}; it takes {', '.join(allowed) or 'k, n'}"
        )


def add_topology_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the family word and the topology options to a sub-command's parser."""
    parser.add_argument(
        "family", choices=sorted(FAMILIES), help="; ".join(f"{k}: {v}" for k, v in FAMILIES.items())
    )
    group = parser.add_argument_group("topology")
    group.add_argument(
        "--k", type=int, help="fattree: switch arity (2k ports per switch); tori: radix of every dimension"
    )
    group.add_argument("--n", type=int, help="fattree: stages (N = k^n PEs); tori: dimensions")
    group.add_argument("--dims", help="tori: radices per dimension, d0 first, e.g. 4x4x4 or 4x4x2x2x2")
    group.add_argument(
        "--twin", action="store_true", help="fattree: build it of twin switches (two cards each)"
    )
    group.add_argument("--r", type=int, help="fattree --twin: internal links per twin (default ceil(k/4))")
    group.add_argument(
        "--config",
        help="ndt: port configuration, 'cbest' (default), 'cbest-thesis' or e.g. 'X+X-Y+|Y-Z+Z-'; "
        "fattree --twin: ports of card alpha below the roots, 'pairs' (default), 'alldown', "
        "'unpaired' or e.g. 0,1,4,5",
    )
    group.add_argument(
        "--root-config",
        help="fattree --twin: ports of card alpha at the roots, 'alldown' (default) or as --config",
    )


def topology_from_args(args: argparse.Namespace) -> Topology:
    """The topology the parsed arguments of ``add_topology_arguments`` describe."""
    return build_topology(
        args.family,
        k=args.k,
        n=args.n,
        twin=args.twin,
        r=args.r,
        config=args.config,
        root_config=args.root_config,
        dims=args.dims,
    )
