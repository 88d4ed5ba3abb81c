"""nDT port configurations: which of a node's 2n torus ports each of its two cards holds.

A torus port is (dimension, sign), written ``d0+``, ``d0-``, ``d1+`` ...; X, Y, Z, W
are accepted as aliases of d0..d3. A configuration is written per card with ``|``
between the cards (docs/contracts.md), e.g. ``d0+d0-d1+|d1-d2+d2-`` or
``X+X-Y+|Y-Z+Z-``. Every card holds exactly n ports; the same configuration is
used at every node.

CBest (Andujar thesis, nDT paper, Def. 3.5, with the project's sign convention): lower dimensions
on card 0, higher on card 1; for odd n the central dimension h = (n-1)/2 is split
with **d_h+ on card 0 and d_h- on card 1**.

>>> str(cbest(3))
'd0+d0-d1+|d1-d2+d2-'
>>> parse_port_config("X+X-Y+|Y-Z+Z-", 3) == cbest(3)
True
>>> cbest(5).split_dimensions
(2,)
>>> len(all_port_configs(3))
10
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations

from topologies.model import TopologyError

#: A torus port: (dimension, sign) with sign +1 or -1.
Port = tuple[int, int]

AXIS_ALIASES = "XYZW"
_TOKEN = re.compile(r"\s*(?:d(\d+)|([XYZWxyzw]))\s*([+-])\s*")


def port_name(dimension: int, sign: int) -> str:
    """Paper name of a torus port: port_name(1, -1) == 'd1-'."""
    return f"d{dimension}{'+' if sign > 0 else '-'}"


def torus_ports(n: int) -> list[Port]:
    """All 2n ports in canonical order: d0+, d0-, d1+, d1-, ..."""
    return [(dimension, sign) for dimension in range(n) for sign in (1, -1)]


def canonical_order(ports: list[Port] | tuple[Port, ...] | frozenset[Port]) -> tuple[Port, ...]:
    """Ports sorted by dimension, + before -: the order in which a card numbers them."""
    return tuple(sorted(ports, key=lambda port: (port[0], -port[1])))


@dataclass(frozen=True)
class PortConfig:
    """The two cards' torus ports (each in canonical order) of an n-dimensional twin torus node."""

    n: int
    card0: tuple[Port, ...]
    card1: tuple[Port, ...]

    def __post_init__(self) -> None:
        together = list(self.card0) + list(self.card1)
        if sorted(together) != sorted(torus_ports(self.n)) or len(self.card0) != self.n:
            raise TopologyError(
                f"config must give each card n={self.n} of the ports {_all_names(self.n)}, each port once; "
                f"got {_format(self.card0)}|{_format(self.card1)}"
            )

    def card_of(self, dimension: int, sign: int) -> int:
        """The card (0 or 1) holding port d<dimension><sign>."""
        return 0 if (dimension, sign) in self.card0 else 1

    def ports_of(self, card: int) -> tuple[Port, ...]:
        """The ports card `card` holds, in canonical order (card port 1, 2, ...)."""
        return self.card0 if card == 0 else self.card1

    @property
    def split_dimensions(self) -> tuple[int, ...]:
        """Dimensions whose + and - ports are on different cards (their rings cross internal links)."""
        return tuple(d for d in range(self.n) if self.card_of(d, 1) != self.card_of(d, -1))

    def mirrored(self) -> PortConfig:
        """The same split with the cards swapped."""
        return PortConfig(self.n, self.card1, self.card0)

    def __str__(self) -> str:
        return f"{_format(self.card0)}|{_format(self.card1)}"

    def axis_names(self) -> str:
        """The XYZW spelling (n <= 4): 'X+X-Y+|Y-Z+Z-'."""
        if self.n > len(AXIS_ALIASES):
            return str(self)

        def spell(ports: tuple[Port, ...]) -> str:
            return "".join(f"{AXIS_ALIASES[d]}{'+' if s > 0 else '-'}" for d, s in ports)

        return f"{spell(self.card0)}|{spell(self.card1)}"


def _format(ports: tuple[Port, ...]) -> str:
    return "".join(port_name(*port) for port in ports)


def _all_names(n: int) -> str:
    return " ".join(port_name(*port) for port in torus_ports(n))


def make_config(n: int, card0_ports: list[Port] | frozenset[Port]) -> PortConfig:
    """The configuration with `card0_ports` on card 0 and the other ports on card 1."""
    card0 = canonical_order(frozenset(card0_ports))
    card1 = canonical_order(frozenset(torus_ports(n)) - frozenset(card0))
    return PortConfig(n, card0, card1)


def cbest(n: int, split_sign_on_card0: int = 1) -> PortConfig:
    """CBest for n dimensions: for odd n, d_h<split_sign_on_card0> on card 0, h = (n-1)/2.

    The project's convention is d_h+ on card 0 (the default); the nDT paper's Def. 3.5
    prints d_h- (``split_sign_on_card0=-1``, named "cbest-thesis"), which is as good
    for odd k and worse for even k with ties going +.
    """
    if n < 1:
        raise TopologyError(f"n (dimensions) must be >= 1, got {n}")
    if n % 2 == 0:
        return make_config(n, [(d, s) for d in range(n // 2) for s in (1, -1)])
    h = (n - 1) // 2
    return make_config(n, [(d, s) for d in range(h) for s in (1, -1)] + [(h, split_sign_on_card0)])


#: Named configurations; "cbest-thesis" is Def. 3.5 as printed (d_h- on card 0), equal to CBest for even n.
NAMED_CONFIGS = {
    "cbest": cbest,
    "cbest-thesis": lambda n: cbest(n, split_sign_on_card0=-1),
}


def parse_port_config(text: str, n: int) -> PortConfig:
    """Parse "cbest", "cbest-thesis" or ports per card with '|' between the cards ("X+X-Y+|Y-Z+Z-")."""
    if not isinstance(text, str):
        raise TopologyError(f"config must be a string, got {text!r}")
    name = text.strip().lower()
    if name in NAMED_CONFIGS:
        return NAMED_CONFIGS[name](n)
    halves = text.split("|")
    if len(halves) != 2:
        raise TopologyError(
            f"config must be one of {', '.join(NAMED_CONFIGS)} or the ports of card 0 and card 1 separated "
            f"by '|' (e.g. {cbest(n)}), got {text!r}"
        )
    cards = []
    for half in halves:
        ports: list[Port] = []
        position = 0
        half = half.strip()
        while position < len(half):
            match = _TOKEN.match(half, position)
            if not match:
                raise TopologyError(
                    f"config: cannot read a port at {half[position:]!r}; ports are d<i>+ / d<i>- "
                    f"(or X, Y, Z, W for d0..d3), dimensions 0..{n - 1}"
                )
            dimension = int(match.group(1)) if match.group(1) else AXIS_ALIASES.index(match.group(2).upper())
            if dimension >= n:
                raise TopologyError(
                    f"config: port {match.group(0).strip()} names dimension {dimension}, "
                    f"but the torus has dimensions 0..{n - 1}"
                )
            ports.append((dimension, 1 if match.group(3) == "+" else -1))
            position = match.end()
        cards.append(ports)
    for ports in cards:
        if len(set(ports)) != len(ports):
            raise TopologyError(f"config names a port twice: {text!r}")
    return PortConfig(n, canonical_order(cards[0]), canonical_order(cards[1]))


def all_port_configs(n: int) -> list[PortConfig]:
    """The (1/2) C(2n, n) configurations up to swapping the cards (card 0 always holds d0+)."""
    first, *others = torus_ports(n)
    return [make_config(n, [first, *chosen]) for chosen in combinations(others, n - 1)]
