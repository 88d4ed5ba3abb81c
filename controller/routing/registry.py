"""The routing algorithms by name, and ``compute_tables(topology, algorithm)``.

>>> from topologies.torus import torus
>>> compute_tables(torus((3, 3)), "dor").algorithm
'dor'
>>> sorted(ALGORITHMS)
['destro', 'dor', 'dort', 'ts-dor']
"""

from __future__ import annotations

from collections.abc import Callable

from controller.routing.builder import TableSpec
from controller.routing.destro import destro_spec
from controller.routing.dor import dor_spec
from controller.routing.dort import dort_spec
from controller.routing.errors import UnknownAlgorithmError, UnsupportedTopologyError
from controller.routing.network import CardNetwork
from controller.routing.table import RoutingTables
from controller.routing.tsdor import tsdor_spec
from topologies.model import Topology

#: name -> (table spec of a card network, topology families it routes)
ALGORITHMS: dict[str, tuple[Callable[[CardNetwork], TableSpec], tuple[str, ...]]] = {
    "destro": (destro_spec, ("kary-ntree", "twin-fattree")),
    "dor": (dor_spec, ("torus",)),
    "dort": (dort_spec, ("ndt",)),
    "ts-dor": (tsdor_spec, ("ndt",)),
}


def algorithms_for(family: str) -> list[str]:
    """Names of the algorithms that route a topology family."""
    return [name for name, (_, families) in ALGORITHMS.items() if family in families]


def compute_tables(topology: Topology, algorithm: str) -> RoutingTables:
    """Route tables of `algorithm` ("destro", "dor", "dort", "ts-dor") for `topology`."""
    return routing_spec(topology, algorithm).build()


def routing_spec(topology: Topology, algorithm: str) -> TableSpec:
    """The TableSpec of `algorithm` for `topology`: its tables whole (``build()``) or by destinations."""
    name = algorithm.strip().lower()
    if name not in ALGORITHMS:
        raise UnknownAlgorithmError(f"routing must be one of {', '.join(ALGORITHMS)}, got {algorithm!r}")
    builder, families = ALGORITHMS[name]
    if topology.family not in families:
        fitting = algorithms_for(topology.family)
        raise UnsupportedTopologyError(
            f"routing {name} does not route a {topology.family!r} topology "
            f"(it routes {', '.join(families)}); "
            f"for this topology use {', '.join(fitting) or 'none of the registered algorithms'}"
        )
    return builder(CardNetwork(topology))
