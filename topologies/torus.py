"""Tori: the k-ary n-cube / mD torus (one card per node) and the nDT twin torus (two cards per node).

Dimensions may have different radices (``4x4x2x2x2``: k_0 = 4, ..., d0 first).
A node is o = (o_0, ..., o_{n-1}); its index is sum(o_i * prod(k_j for j < i))
(d0 least significant). Port d_i+ of node o is cabled to port d_i- of node
o + e_i (mod k_i); a ring of size 2 therefore has two parallel cables between
its two nodes.

Card ports (P4 port = Mininet interface number, from 1):

* ``torus``: card id = node index, PE = node index; ports 1..2n are
  d0+, d0-, d1+, d1-, ... and port 2n+1 is the PE port (name ``pe``).
* ``ndt_torus``: node o has card 0 and card 1, card id = 2 * node index + card,
  and PE 2 * node index + card on that card (contract numbering, so card ``c<i>``
  serves host ``h<i>``). Each card has n + 2 ports: 1..n its n torus ports in
  canonical order (dimension ascending, + before -), n + 1 the internal link
  (``int0``, joining the two cards' ports n + 1), n + 2 its PE (``pe``).

>>> topo = ndt_torus((4, 4, 4))
>>> topo.counts()["hosts"], topo.counts()["cards"], topo.counts()["internal_links"]
(128, 128, 64)
>>> [topo.port_names[ref] for ref in topo.card_ports("c0")]
['d0+', 'd0-', 'd1+', 'int0', 'pe']
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import product
from math import prod

from topologies.addressing import card_name
from topologies.model import Card, Host, Link, PortRef, Topology, TopologyError, Twin
from topologies.portconfig import PortConfig, parse_port_config, port_name, torus_ports

Coords = tuple[int, ...]


def parse_dims(text: str | Sequence[int]) -> tuple[int, ...]:
    """Radices per dimension from "4x4x4" (or a sequence of ints); each must be >= 2.

    >>> parse_dims("4x4x2")
    (4, 4, 2)
    """
    if isinstance(text, str):
        parts = [part.strip() for part in text.lower().replace("×", "x").split("x")]
        if not parts or not all(part.isdigit() for part in parts):
            raise TopologyError(f"dims must be radices joined by 'x', e.g. 4x4x4, got {text!r}")
        dims = tuple(int(part) for part in parts)
    else:
        dims = tuple(text)
    if not dims or not all(isinstance(k, int) and k >= 2 for k in dims):
        raise TopologyError(f"dims: every dimension needs a radix >= 2, got {text!r}")
    return dims


def node_index(coords: Sequence[int], dims: Sequence[int]) -> int:
    """Index of node `coords` (d0 least significant): node_index((1, 2), (4, 4)) == 9."""
    index = 0
    for coordinate, radix in zip(reversed(coords), reversed(dims), strict=True):
        index = index * radix + coordinate
    return index


def node_coords(index: int, dims: Sequence[int]) -> Coords:
    """Inverse of node_index: node_coords(9, (4, 4)) == (1, 2)."""
    coords = []
    for radix in dims:
        index, coordinate = divmod(index, radix)
        coords.append(coordinate)
    return tuple(coords)


def nodes(dims: Sequence[int]) -> Iterator[Coords]:
    """All node coordinates in index order."""
    for reversed_coords in product(*(range(radix) for radix in reversed(dims))):
        yield tuple(reversed(reversed_coords))


def neighbor(coords: Sequence[int], dims: Sequence[int], dimension: int, sign: int) -> Coords:
    """The node reached from `coords` through port d<dimension><sign>."""
    moved = list(coords)
    moved[dimension] = (moved[dimension] + sign) % dims[dimension]
    return tuple(moved)


def node_name(coords: Sequence[int]) -> str:
    """Name of a torus node: 'n' and the coordinates d0 first, node_name((1, 3, 2)) == 'n1_3_2'."""
    return "n" + "_".join(map(str, coords))


def ndt_pe(index: int, card: int) -> int:
    """PE index of the PE on `card` (0/1) of node `index` (contract: 2 * node_index + card)."""
    return 2 * index + card


def _external_links(dims: Sequence[int], port_of: dict[tuple[Coords, int, int], PortRef]) -> list[Link]:
    """One link per node and dimension: d_i+ of o to d_i- of o + e_i."""
    links = []
    for coords in nodes(dims):
        for dimension in range(len(dims)):
            far = neighbor(coords, dims, dimension, 1)
            links.append(Link(port_of[coords, dimension, 1], port_of[far, dimension, -1], "external"))
    return links


def torus(dims: str | Sequence[int]) -> Topology:
    """A k-ary n-cube (any radices): one card and one PE per node; family "torus"."""
    dims = parse_dims(dims)
    n = len(dims)
    cards, hosts, twins, links = [], [], [], []
    port_names: dict[PortRef, str] = {}
    port_of: dict[tuple[Coords, int, int], PortRef] = {}
    for index, coords in enumerate(nodes(dims)):
        card = Card(card_name(index), index, node_name(coords), 0, 2 * n + 1)
        cards.append(card)
        ports = {}
        for position, (dimension, sign) in enumerate(torus_ports(n)):
            ref = PortRef(card.name, position + 1)
            port_of[coords, dimension, sign] = ref
            ports[port_name(dimension, sign)] = ref
            port_names[ref] = port_name(dimension, sign)
        pe_port = PortRef(card.name, 2 * n + 1)
        port_names[pe_port] = "pe"
        hosts.append(Host(index, card.name, pe_port.port))
        links.append(Link(PortRef(hosts[-1].name, 0), pe_port, "host"))
        twins.append(Twin(card.twin, (card.name,), None, coords, ports))
    links = _external_links(dims, port_of) + links
    return Topology("torus", {"dims": list(dims)}, cards, hosts, twins, links, port_names)


def ndt_torus(dims: str | Sequence[int], config: str | PortConfig = "cbest") -> Topology:
    """An n-dimensional twin torus: two (n+1)-port cards and two PEs per node; family "ndt".

    `config` is a ``PortConfig`` or its text (see ``topologies.portconfig``), the
    same at every node.
    """
    dims = parse_dims(dims)
    n = len(dims)
    port_config = config if isinstance(config, PortConfig) else parse_port_config(config, n)
    if port_config.n != n:
        raise TopologyError(f"config is for {port_config.n} dimensions, dims has {n}")
    cards, hosts, twins, links = [], [], [], []
    port_names: dict[PortRef, str] = {}
    port_of: dict[tuple[Coords, int, int], PortRef] = {}
    for index, coords in enumerate(nodes(dims)):
        pair = [
            Card(card_name(2 * index + side), 2 * index + side, node_name(coords), side, n + 2)
            for side in (0, 1)
        ]
        cards.extend(pair)
        ports: dict[str, PortRef] = {}
        for side, card in enumerate(pair):
            for position, (dimension, sign) in enumerate(port_config.ports_of(side)):
                ref = PortRef(card.name, position + 1)
                port_of[coords, dimension, sign] = ref
                ports[port_name(dimension, sign)] = ref
                port_names[ref] = port_name(dimension, sign)
            port_names[PortRef(card.name, n + 1)] = "int0"
            port_names[PortRef(card.name, n + 2)] = "pe"
            hosts.append(Host(ndt_pe(index, side), card.name, n + 2))
            links.append(Link(PortRef(hosts[-1].name, 0), PortRef(card.name, n + 2), "host"))
        links.append(Link(PortRef(pair[0].name, n + 1), PortRef(pair[1].name, n + 1), "internal"))
        ordered = {port_name(*port): ports[port_name(*port)] for port in torus_ports(n)}
        twins.append(Twin(node_name(coords), (pair[0].name, pair[1].name), None, coords, ordered))
    links = _external_links(dims, port_of) + links
    params = {
        "dims": list(dims),
        "config": str(port_config),
        "split_dimensions": list(port_config.split_dimensions),
    }
    return Topology("ndt", params, cards, hosts, twins, links, port_names)


def num_nodes(dims: Sequence[int]) -> int:
    """Number of torus nodes, prod(k_i)."""
    return prod(dims)


def equivalent_torus_dims(dims: str | Sequence[int]) -> tuple[int, ...]:
    """The mD torus built from the same cards, one per node: m = (n+1)//2 dimensions, 2 * prod(k_i) PEs.

    The most balanced shape (smallest largest radix, then smallest second largest,
    ...), largest radix first, as the Andujar thesis compares them (4x4x4 3DT vs 16x8 2D).

    >>> equivalent_torus_dims("4x4x4"), equivalent_torus_dims("4x4x2x2x2"), equivalent_torus_dims("5x5x5")
    ((16, 8), (8, 8, 4), (25, 10))
    """
    dims = parse_dims(dims)
    pes, m = 2 * prod(dims), (len(dims) + 1) // 2

    def shapes(remaining: int, count: int, largest: int) -> Iterator[tuple[int, ...]]:
        if count == 1:
            if 2 <= remaining <= largest:
                yield (remaining,)
            return
        for radix in range(min(largest, remaining // 2), 1, -1):
            if remaining % radix == 0:
                for rest in shapes(remaining // radix, count - 1, radix):
                    yield (radix, *rest)

    return min(shapes(pes, m, pes), key=lambda shape: shape)
