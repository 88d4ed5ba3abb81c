"""k-ary n-trees (Villar 2011): one card per switch, or twin switches of two cards each.

Notation of Villar 2011 (fat-tree notes §1): N = k^n terminals h = h_{n-1}..h_0 (base k);
n stages of k^(n-1) switches <s, o> with o = o_{n-2}..o_0; a switch has 2k ports,
0..k-1 down (towards the terminals) and k..2k-1 up. The wiring is the butterfly
rule in closed form: up port k + j of <s, o> is cabled to down port o_s of
<s+1, o with digit s set to j>; terminal h sits on down port h_0 of <0, h div k>.
Root switches (stage n-1) leave their up ports unused.

Card ports (contract: P4 port = Mininet interface number, from 1):

* ``kary_ntree``: one card of 2k ports per switch; switch port l is card port l + 1.
* ``twin_fattree``: each switch <s, o> is a twin of card alpha (side 0) and card
  beta (side 1). A card owns k of the 2k switch ports (its configuration, see
  ``topologies.scp``) on card ports 1..k in ascending switch-port order, and its
  r internal links on card ports k+1..k+r (names ``int0``..``int{r-1}``); internal
  link j joins port k+1+j of alpha to port k+1+j of beta.

Numbering: switches are ordered by stage, then by the value of o; card ids are
the switch index (one card) or 2 * switch index + side (twins). The PE index of
terminal h is h.

>>> topo = kary_ntree(2, 3)
>>> topo.counts()["cards"], topo.counts()["external_links"]
(12, 16)
>>> up_neighbor(2, 1, (1, 0), 3)        # 2-ary 3-tree: up port 3 of <1,01> ...
(2, (1, 1), 0)
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence

from topologies.addressing import card_name
from topologies.model import Card, Host, Link, PortRef, Topology, TopologyError, Twin
from topologies.scp import describe_alpha, parse_scp

Digits = tuple[int, ...]


# -- digits and switches -------------------------------------------------------


def check_tree_parameters(k: int, n: int) -> None:
    """Reject arities below 2 and stage counts below 1, naming the parameter."""
    if not isinstance(k, int) or k < 2:
        raise TopologyError(f"k (switch arity) must be an integer >= 2, got {k!r}")
    if not isinstance(n, int) or n < 1:
        raise TopologyError(f"n (number of stages) must be an integer >= 1, got {n!r}")


def to_digits(value: int, k: int, count: int) -> Digits:
    """Base-k digits of `value`, least significant first: to_digits(5, 2, 3) == (1, 0, 1)."""
    out = []
    for _ in range(count):
        value, digit = divmod(value, k)
        out.append(digit)
    return tuple(out)


def from_digits(digits: Sequence[int], k: int) -> int:
    """Inverse of to_digits: from_digits((1, 0, 1), 2) == 5."""
    return sum(digit * k**position for position, digit in enumerate(digits))


def switches(k: int, n: int) -> Iterator[tuple[int, Digits]]:
    """All switches <s, o> in numbering order (stage, then value of o); o is least significant first."""
    for stage in range(n):
        for value in range(k ** (n - 1)):
            yield stage, to_digits(value, k, n - 1)


def switch_index(k: int, n: int, stage: int, o: Sequence[int]) -> int:
    """Position of <stage, o> in ``switches(k, n)``."""
    return stage * k ** (n - 1) + from_digits(o, k)


def switch_name(stage: int, o: Sequence[int], k: int) -> str:
    """Name of <s, o> with the digits most significant first, as Villar 2011 writes them.

    >>> switch_name(1, (1, 0), 2)
    's1o01'
    >>> switch_name(0, (11, 3), 12)
    's0o3.11'
    """
    shown = reversed(tuple(o))
    text = ".".join(map(str, shown)) if k > 10 else "".join(map(str, shown))
    return f"s{stage}o{text}"


def leaf_of(h: int, k: int, n: int) -> tuple[Digits, int]:
    """Stage-0 switch digits o and down port of terminal h: o_i = h_{i+1}, port h_0."""
    digits = to_digits(h, k, n)
    return digits[1:], digits[0]


def up_neighbor(k: int, stage: int, o: Sequence[int], up_port: int) -> tuple[int, Digits, int]:
    """(stage + 1, o', down port) cabled to up port `up_port` (k..2k-1) of <stage, o>."""
    if not k <= up_port < 2 * k:
        raise TopologyError(f"up port must be in {k}..{2 * k - 1}, got {up_port}")
    upper = list(o)
    upper[stage] = up_port - k
    return stage + 1, tuple(upper), o[stage]


def down_neighbor(k: int, stage: int, o: Sequence[int], down_port: int) -> tuple[int, Digits, int]:
    """(stage - 1, o', up port) cabled to down port `down_port` (0..k-1) of <stage, o>, stage >= 1."""
    if stage < 1 or not 0 <= down_port < k:
        raise TopologyError(f"down port {down_port} of stage {stage} leads to no switch")
    lower = list(o)
    lower[stage - 1] = down_port
    return stage - 1, tuple(lower), k + o[stage - 1]


def default_internal_links(k: int) -> int:
    """r = ceil(k/4), at least 1 (k=4: 1, k=8: 2), as the Andujar thesis simulates (torus notes I §1.5)."""
    return max(1, math.ceil(k / 4))


# -- builders --------------------------------------------------------------------


def kary_ntree(k: int, n: int) -> Topology:
    """A k-ary n-tree of single-card switches (2k ports each); family "kary-ntree"."""
    check_tree_parameters(k, n)
    cards: list[Card] = []
    twins: list[Twin] = []
    port_names: dict[PortRef, str] = {}
    ports_of: dict[tuple[int, Digits], dict[int, PortRef]] = {}
    for index, (stage, o) in enumerate(switches(k, n)):
        card = Card(card_name(index), index, switch_name(stage, o, k), 0, 2 * k)
        cards.append(card)
        mapping = {port: PortRef(card.name, port + 1) for port in range(2 * k)}
        ports_of[stage, o] = mapping
        port_names.update({ref: str(port) for port, ref in mapping.items()})
        twins.append(Twin(card.twin, (card.name,), stage, o, {str(p): ref for p, ref in mapping.items()}))
    links, hosts, unused = _tree_wiring(k, n, ports_of)
    return Topology("kary-ntree", {"k": k, "n": n}, cards, hosts, twins, links, port_names, unused)


def twin_fattree(
    k: int,
    n: int,
    r: int | None = None,
    config: str | Sequence[int] = "pairs",
    root_config: str | Sequence[int] = "alldown",
) -> Topology:
    """A k-ary n-tree of twin switches; family "twin-fattree".

    `r` internal links join the two cards of every twin (default ``default_internal_links(k)``).
    `config` places the 2k switch ports of stages 0..n-2 on the cards, `root_config`
    those of stage n-1: a name from ``topologies.scp.SCP_NAMES`` or the list of switch
    ports card alpha owns. The defaults are the optimal ones of Villar 2011 (whole
    pairs (j, j+k) per card below the roots, all down ports on alpha at the roots).
    Both cards of every twin exist, including root betas that carry no traffic.

    >>> topo = twin_fattree(4, 2)
    >>> topo.counts()["cards"], topo.counts()["internal_links"]
    (16, 8)
    >>> topo.twins["s0o0"].ports["5"]           # switch port 5 is on alpha (pair 1, 5)
    PortRef(node='c0', port=4)
    """
    check_tree_parameters(k, n)
    r = default_internal_links(k) if r is None else r
    if not isinstance(r, int) or r < 1:
        raise TopologyError(f"r (internal links per twin) must be an integer >= 1, got {r!r}")
    alpha_ports = parse_scp(config, k, parameter="config")
    root_alpha_ports = parse_scp(root_config, k, parameter="root_config")
    cards: list[Card] = []
    twins: list[Twin] = []
    links: list[Link] = []
    port_names: dict[PortRef, str] = {}
    ports_of: dict[tuple[int, Digits], dict[int, PortRef]] = {}
    for index, (stage, o) in enumerate(switches(k, n)):
        alpha = root_alpha_ports if stage == n - 1 else alpha_ports
        owned = (sorted(alpha), sorted(set(range(2 * k)) - alpha))
        name = switch_name(stage, o, k)
        pair = [Card(card_name(2 * index + side), 2 * index + side, name, side, k + r) for side in (0, 1)]
        cards.extend(pair)
        mapping: dict[int, PortRef] = {}
        for card, switch_ports in zip(pair, owned, strict=True):
            for position, port in enumerate(switch_ports):
                mapping[port] = PortRef(card.name, position + 1)
                port_names[mapping[port]] = str(port)
            for j in range(r):
                port_names[PortRef(card.name, k + 1 + j)] = f"int{j}"
        for j in range(r):
            links.append(Link(PortRef(pair[0].name, k + 1 + j), PortRef(pair[1].name, k + 1 + j), "internal"))
        ports_of[stage, o] = mapping
        twins.append(
            Twin(name, (pair[0].name, pair[1].name), stage, o, {str(p): mapping[p] for p in range(2 * k)})
        )
    tree_links, hosts, unused = _tree_wiring(k, n, ports_of)
    params = {
        "k": k,
        "n": n,
        "r": r,
        "config": describe_alpha(alpha_ports, k),
        "root_config": describe_alpha(root_alpha_ports, k),
        "alpha_ports": sorted(alpha_ports),
        "root_alpha_ports": sorted(root_alpha_ports),
    }
    return Topology("twin-fattree", params, cards, hosts, twins, links + tree_links, port_names, unused)


def _tree_wiring(
    k: int, n: int, ports_of: dict[tuple[int, Digits], dict[int, PortRef]]
) -> tuple[list[Link], list[Host], list[PortRef]]:
    """Inter-stage links, hosts on leaf down ports, and the unused root up ports."""
    links: list[Link] = []
    for (stage, o), mapping in ports_of.items():
        if stage == n - 1:
            continue
        for up_port in range(k, 2 * k):
            upper_stage, upper_o, down_port = up_neighbor(k, stage, o, up_port)
            links.append(Link(mapping[up_port], ports_of[upper_stage, upper_o][down_port], "external"))
    hosts: list[Host] = []
    for h in range(k**n):
        o, port = leaf_of(h, k, n)
        ref = ports_of[0, o][port]
        hosts.append(Host(h, ref.node, ref.port))
        links.append(Link(PortRef(hosts[-1].name, 0), ref, "host"))
    unused = [
        mapping[port]
        for (stage, _), mapping in ports_of.items()
        if stage == n - 1
        for port in range(k, 2 * k)
    ]
    return links, hosts, unused
