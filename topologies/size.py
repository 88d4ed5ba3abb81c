"""What a topology will hold, estimated in closed form before anything is built, and the limit.

Every sub-command builds its network through ``topologies.build.build_topology``, which
calls :func:`check_topology_size` first: a request such as ``fattree --k 4 --n 100``
(1.6e60 hosts) or ``ndt --dims 100000x100000x100000`` is refused in one line instead of
growing until memory runs out. The counts follow the builders (fattree.py, torus.py):

- k-ary n-tree: k^n hosts, n*k^(n-1) switches of 2k ports, n*k^n links;
- twin fat tree: the same, each switch two cards joined by r internal links;
- torus (N = product of the radices, n dimensions): N cards of 2n+1 ports, N hosts, (n+1)*N links;
- nDT: 2N cards of n+2 ports, 2N hosts, n*N external, N internal and 2N host links.

Building costs about 400 bytes per element (card, port, host or link; measured:
fattree --k 4 --n 7 --twin, 470,000 elements, 191 MB, 5 s), so the limit of
:data:`MAX_TOPOLOGY_ELEMENTS` keeps a topology under about 1 GB.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from topologies.model import TopologyError

#: the most elements (cards, ports, hosts, links) a topology may have
MAX_TOPOLOGY_ELEMENTS = 2_000_000
#: bytes one element costs while building (measured, see the module doc)
BYTES_PER_ELEMENT = 400
#: the most routing table entries a routing may be asked for, bounded by ports x hosts (one entry
#: per ingress port and destination at most). Measured: ndt 8x8x8 DORT, bound 5.2e6, 2.1e6 entries,
#: 272 MB in 5 s; the largest benchmark (twin 16-ary 3-tree DESTRO) has a bound of 1.3e8.
MAX_ROUTE_ENTRY_BOUND = 200_000_000


@dataclass(frozen=True)
class TopologySize:
    """Estimated counts (floats: a refused request may not fit an integer worth computing)."""

    cards: float
    ports: float
    hosts: float
    links: float

    @property
    def elements(self) -> float:
        return self.cards + self.ports + self.hosts + self.links

    def describe(self) -> str:
        return f"{self.hosts:.3g} hosts, {self.cards:.3g} cards, {self.links:.3g} links"


def _power(base: float, exponent: float) -> float:
    try:
        return float(base) ** exponent
    except OverflowError:
        return math.inf


def estimate_size(
    family: str,
    *,
    k: int | None = None,
    n: int | None = None,
    twin: bool = False,
    r: int | None = None,
    dims: Sequence[int] = (),
) -> TopologySize:
    """The counts of the topology ``build_topology`` would build (parameters already checked)."""
    if family == "fattree":
        assert k is not None and n is not None
        hosts = _power(k, n)
        switches = n * _power(k, n - 1)
        links = n * hosts
        if not twin:
            return TopologySize(switches, 2 * k * switches, hosts, links)
        internal = max(1, math.ceil(k / 4)) if r is None else r
        return TopologySize(2 * switches, 2 * (k + internal) * switches, hosts, links + internal * switches)
    nodes = math.prod(float(radix) for radix in dims)
    count = len(dims)
    if family == "torus":
        return TopologySize(nodes, (2 * count + 1) * nodes, nodes, (count + 1) * nodes)
    return TopologySize(2 * nodes, 2 * (count + 2) * nodes, 2 * nodes, (count + 3) * nodes)


def topology_size(topology: Any) -> TopologySize:
    """The counts of a built topology, as :func:`estimate_size` estimates them."""
    counts = topology.counts()
    links = counts["external_links"] + counts["internal_links"] + counts["host_links"]
    ports = sum(card.num_ports for card in topology.cards.values())
    return TopologySize(counts["cards"], ports, counts["hosts"], links)


def check_routing_size(size: TopologySize, what: str) -> None:
    """TopologyError when routing tables for this topology could exceed MAX_ROUTE_ENTRY_BOUND entries."""
    bound = size.ports * size.hosts
    if bound > MAX_ROUTE_ENTRY_BOUND:
        raise TopologyError(
            f"routing {what} needs up to {bound:.3g} table entries ({size.describe()}); "
            f"twinnet routes topologies of up to {MAX_ROUTE_ENTRY_BOUND:.3g} (ports x hosts)"
        )


def check_topology_size(size: TopologySize, what: str) -> None:
    """TopologyError naming the request and its size when it exceeds MAX_TOPOLOGY_ELEMENTS."""
    if not size.elements <= MAX_TOPOLOGY_ELEMENTS:
        gigabytes = size.elements * BYTES_PER_ELEMENT / 1e9
        raise TopologyError(
            f"{what} is too large to build: {size.describe()} (about {gigabytes:.3g} GB); "
            f"twinnet builds topologies of up to {MAX_TOPOLOGY_ELEMENTS:,} cards, ports, hosts and links"
        )
