"""Switch-level connection patterns (SCPs) of a fat-tree twin switch: which switch ports card alpha owns.

Villar 2011 (fat-tree notes §3.5): a twin of arity k has 2k switch ports, 0..k-1 down
and k..2k-1 up; card alpha owns k of them (the configuration C^alpha), card beta
the rest. The optimum below the roots keeps every pair (j, j + k) on one card,
k/2 pairs per card ("pairs"); at the roots all down ports go on one card
("alldown"). Two bad baselines of the papers are offered for comparison.

A configuration is written as a name from SCP_NAMES or as alpha's switch ports,
e.g. ``"0,1,4,5"`` (k = 4).

>>> sorted(parse_scp("pairs", 4))
[0, 1, 4, 5]
>>> sorted(parse_scp("0 2 4 6", 4)) == sorted(parse_scp("0,2,4,6", 4))
True
>>> is_pair_config(parse_scp("unpaired", 8), 8)
False
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations

from topologies.model import TopologyError

#: Named configurations of card alpha; each builder takes k.
SCP_NAMES: dict[str, str] = {
    "pairs": "optimal below the roots: pairs (j, j+k) for j < k/2 on alpha (needs even k)",
    "alldown": "all down ports 0..k-1 on alpha, all up ports on beta (optimal at the roots)",
    "unpaired": "down ports 0..k/2-1 and up ports k..k+k/4-1, k+k/2..k+3k/4-1 on alpha (needs k % 4 == 0)",
}


def pairs_config(k: int) -> frozenset[int]:
    """The canonical optimal configuration {0..k/2-1} U {k..3k/2-1} (Villar 2011, Example 1.7 T_1)."""
    if k % 2:
        raise TopologyError(f"config 'pairs' needs an even k (k/2 pairs per card), got k={k}")
    return frozenset(range(k // 2)) | frozenset(range(k, k + k // 2))


def alldown_config(k: int) -> frozenset[int]:
    """All down ports on alpha: the type-B (root) optimum, and a bad choice below the roots."""
    return frozenset(range(k))


def unpaired_config(k: int) -> frozenset[int]:
    """p = k/2 with pairs split: optimal for forward and turnaround traffic only (torus notes I §1.4)."""
    if k % 4:
        raise TopologyError(f"config 'unpaired' needs k divisible by 4, got k={k}")
    quarter, half = k // 4, k // 2
    return (
        frozenset(range(half))
        | frozenset(range(k, k + quarter))
        | frozenset(range(k + half, k + half + quarter))
    )


_BUILDERS = {"pairs": pairs_config, "alldown": alldown_config, "unpaired": unpaired_config}


def check_alpha(alpha: Iterable[int], k: int, parameter: str = "config") -> frozenset[int]:
    """Validate an explicit configuration: k distinct switch ports in 0..2k-1."""
    ports = list(alpha)
    owned = frozenset(ports)
    if len(owned) != len(ports) or len(owned) != k or not owned <= frozenset(range(2 * k)):
        raise TopologyError(
            f"{parameter} must list k={k} distinct switch ports of card alpha in 0..{2 * k - 1}, got {ports}"
        )
    return owned


def parse_scp(
    value: str | Sequence[int] | frozenset[int], k: int, parameter: str = "config"
) -> frozenset[int]:
    """Card alpha's switch ports for a name of SCP_NAMES, a text list ("0,1,4,5") or a sequence of ints."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _BUILDERS:
            return _BUILDERS[text](k)
        tokens = text.replace(",", " ").split()
        if not tokens or not all(token.isdigit() for token in tokens):
            raise TopologyError(
                f"{parameter} must be one of {', '.join(SCP_NAMES)} or the switch ports of card alpha "
                f"(e.g. '0,1,{k},{k + 1}'), got {value!r}"
            )
        return check_alpha((int(token) for token in tokens), k, parameter)
    return check_alpha(value, k, parameter)


def is_pair_config(alpha: Iterable[int], k: int) -> bool:
    """True when every switch port shares its card with its partner (j <-> j + k)."""
    owned = frozenset(alpha)
    return all((port + k) % (2 * k) in owned for port in owned)


def pair_configs(k: int) -> list[frozenset[int]]:
    """Every optimal (pair) configuration of alpha: C(k, k/2) choices of k/2 pairs."""
    if k % 2:
        raise TopologyError(f"pair configurations need an even k, got k={k}")
    return [frozenset(chosen) | frozenset(j + k for j in chosen) for chosen in combinations(range(k), k // 2)]


def describe_alpha(alpha: frozenset[int], k: int) -> str:
    """The name of a configuration if it has one, else its port list.

    >>> describe_alpha(frozenset({0, 1, 4, 5}), 4), describe_alpha(frozenset({0, 2, 4, 6}), 4)
    ('pairs', '0,2,4,6')
    """
    for name, builder in _BUILDERS.items():
        try:
            if builder(k) == alpha:
                return name
        except TopologyError:
            continue
    return ",".join(map(str, sorted(alpha)))
