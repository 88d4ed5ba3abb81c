"""The routing algorithms by name, and ``compute_tables(topology, algorithm)``.

>>> from topologies.torus import torus
>>> compute_tables(torus((3, 3)), "dor").algorithm
'dor'
>>> sorted(ALGORITHMS)
['destro', 'dor', 'dor-no-dateline', 'dort', 'dort-merged-vcs', 'ts-dor', 'ts-dor-unmirrored']
>>> algorithms_for("torus")
['dor']
"""

from __future__ import annotations

from collections.abc import Callable

from controller.routing.builder import TableSpec
from controller.routing.destro import destro_spec
from controller.routing.dor import dor_no_dateline_spec, dor_spec
from controller.routing.dort import dort_merged_vcs_spec, dort_spec
from controller.routing.errors import UnknownAlgorithmError, UnsupportedTopologyError
from controller.routing.network import CardNetwork
from controller.routing.table import RoutingTables
from controller.routing.tsdor import tsdor_spec, tsdor_unmirrored_spec
from topologies.model import Topology

#: name -> (table spec of a card network, topology families it routes)
ALGORITHMS: dict[str, tuple[Callable[[CardNetwork], TableSpec], tuple[str, ...]]] = {
    "destro": (destro_spec, ("kary-ntree", "twin-fattree")),
    "dor": (dor_spec, ("torus",)),
    "dort": (dort_spec, ("ndt",)),
    "ts-dor": (tsdor_spec, ("ndt",)),
    "dor-no-dateline": (dor_no_dateline_spec, ("torus",)),
    "ts-dor-unmirrored": (tsdor_unmirrored_spec, ("ndt",)),
    "dort-merged-vcs": (dort_merged_vcs_spec, ("ndt",)),
}

#: Variants whose channel dependency graph has cycles, on purpose (to show deadlock): name -> why.
UNSAFE: dict[str, str] = {
    "dor-no-dateline": "UNSAFE: DOR on one VC without dateline; its rings close dependency cycles (deadlock)",
    "ts-dor-unmirrored": (
        "UNSAFE: TS-DOR with spec part 2's d_h tie and inject/eject VCs, not mirrored for d_h+ on card 0; "
        "dependency cycles once k_h >= 4 (deadlock)"
    ),
    "dort-merged-vcs": (
        "UNSAFE: DORT with one VC for every internal-link hop (eject, inject, ring merged); "
        "dependency cycles (deadlock)"
    ),
}


def algorithms_for(family: str, *, include_unsafe: bool = False) -> list[str]:
    """Names of the algorithms that route a topology family (the unsafe variants only when asked)."""
    return [
        name
        for name, (_, families) in ALGORITHMS.items()
        if family in families and (include_unsafe or name not in UNSAFE)
    ]


#: adaptive routing (controller.routing.adaptive): candidate tables, not one (port, VC) per entry
ADAPTIVE = "adaptive"


def routing_help() -> str:
    """One line per algorithm for --help: the families it routes, and UNSAFE variants marked."""
    return "; ".join(
        [
            f"{name} ({', '.join(families)})" + (f" [{UNSAFE[name]}]" if name in UNSAFE else "")
            for name, (_, families) in ALGORITHMS.items()
        ]
        + [f"{ADAPTIVE} (ndt, torus; with --selection; twinnet analyze, run and sweep)"]
    )


def compute_tables(topology: Topology, algorithm: str) -> RoutingTables:
    """Route tables of `algorithm` (a name of ALGORITHMS) for `topology`."""
    return routing_spec(topology, algorithm).build()


def routing_spec(topology: Topology, algorithm: str) -> TableSpec:
    """The TableSpec of `algorithm` for `topology`: its tables whole (``build()``) or by destinations."""
    name = algorithm.strip().lower()
    if name == ADAPTIVE:
        raise UnknownAlgorithmError(
            "adaptive routing has candidate tables, not one route per entry: "
            "controller.routing.adaptive.adaptive_tables builds them (`twinnet analyze`, `run` and `sweep` "
            "take --routing adaptive --selection ...)"
        )
    if name not in ALGORITHMS:
        raise UnknownAlgorithmError(f"routing must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    builder, families = ALGORITHMS[name]
    if topology.family not in families:
        fitting = algorithms_for(topology.family, include_unsafe=True)
        raise UnsupportedTopologyError(
            f"routing {name} does not route a {topology.family!r} topology "
            f"(it routes {', '.join(families)}); "
            f"for this topology use {', '.join(fitting) or 'none of the registered algorithms'}"
        )
    return builder(CardNetwork(topology))
