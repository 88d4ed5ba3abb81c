"""Errors of the routing layer: all ValueError subclasses, so the command line prints them as messages."""

from __future__ import annotations

from topologies.errors import TwinnetError


class RoutingError(TwinnetError, ValueError):
    """Routing cannot be computed or followed (wrong topology for the algorithm, broken tables, ...)."""


class UnsupportedTopologyError(RoutingError):
    """The algorithm does not route this topology family or port configuration."""


class UnknownAlgorithmError(RoutingError):
    """No routing algorithm is registered under the given name."""


class MissingEntryError(RoutingError):
    """A packet reached a card that has no entry for (ingress port, destination PE, routing class)."""


class BlackHoleError(RoutingError):
    """An entry sends a packet out of a port with nothing attached to it."""


class MisdeliveryError(RoutingError):
    """An entry hands a packet to a host that is not its destination."""


class RoutingLoopError(RoutingError):
    """A packet comes back to a (card, ingress port) it has already visited."""
