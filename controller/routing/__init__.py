"""Routing as per-card route tables (DESTRO, DOR, DORT, TS-DOR) and a walker that follows packets."""

from controller.routing.errors import (
    BlackHoleError,
    MisdeliveryError,
    MissingEntryError,
    RoutingError,
    RoutingLoopError,
    UnknownAlgorithmError,
    UnsupportedTopologyError,
)
from controller.routing.registry import (
    ALGORITHMS,
    UNSAFE,
    algorithms_for,
    compute_tables,
    routing_help,
    routing_spec,
)
from controller.routing.table import RouteEntry, RoutingTables
from controller.routing.walker import Path, RouteHop, walk

__all__ = [
    "ALGORITHMS",
    "BlackHoleError",
    "MisdeliveryError",
    "MissingEntryError",
    "Path",
    "RouteEntry",
    "RouteHop",
    "RoutingError",
    "RoutingLoopError",
    "RoutingTables",
    "UNSAFE",
    "UnknownAlgorithmError",
    "UnsupportedTopologyError",
    "algorithms_for",
    "compute_tables",
    "routing_spec",
    "routing_help",
    "walk",
]
