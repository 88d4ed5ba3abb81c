"""Cost of a fat tree as a function of switch radix (Minkenberg 2010), for monolithic and twin switches.

Minkenberg 2010 (Minkenberg, Luijten, Rodriguez, *On the Optimum Switch Radix in Fat
Tree Networks*) counts, for ``nodes`` end nodes and switches of radix r
(k = floor(r/2) ports down, k up):

* L(r, n) = ceil(log n / log k) switch levels (eq. 2),
* S(r, n) = L * ceil(n / k) switches (eq. 3; as published, it counts a full
  level even where n is not a power of k),
* I(r, n) = n * (L - 1) bidirectional inter-switch links, host links excluded (eq. 4),
* C_sw(r, b) = r**2 + b per switch: r**2 crosspoints plus a base cost b (eq. 5),
* C_ss = a * I + C_sw * S (eq. 6), a and b in units of one crosspoint.

The "double-sized" tree (eq. 18-22) connects the top level's up ports to a
second half. Levels are computed with integers (smallest L with k**L >= n):
``math.log(125) / math.log(5)`` is 3.0000000000000004, so the floating-point
formula gives 4 levels for 125 nodes of radix 10 instead of 3.

The smoothed cost (eq. 7-11) has its minimum at the root of
f(r) = r**2 (1 - ln(r/2)) + a r / 2 + b (1 + ln(r/2)) (eq. 14), independent of
n; for b = 0 the root is a / (2 W(a / 4e)) (eq. 15, Lambert W).

Twin switches (Villar 2011) put the same model to work on another switch: a
radix-2k twin is two cards of radix k + r joined by r internal links, so its
cost is 2 ((k + r)**2 + b) + a_int * r, where a_int is the cost of one
internal link (by default the same as an inter-switch link: both take the
cards' pins). :func:`compare_designs` sets it beside a monolithic radix-2k
switch and beside a deeper tree built from the cards alone.

Example (the binary 4-tree of Minkenberg 2010, Fig. 1(b): 16 nodes, radix 4)::

    >>> tree = evaluate(monolithic_switch(4), nodes=16, a=10, b=100)
    >>> tree.levels, tree.switches, tree.inter_switch_links, tree.total_cost
    (4, 32, 48, 4192)
    >>> round(optimum_radix(10, 100), 2)
    18.42
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Literal

from topologies.errors import TwinnetError

TreeShape = Literal["single", "double"]
TREE_SHAPES: tuple[TreeShape, ...] = ("single", "double")

#: More radices than this in one sweep is a mistake, not a study.
MAX_SWEEP_POINTS = 100_000


class CostModelError(TwinnetError, ValueError):
    """Parameters outside Minkenberg 2010's model (too few nodes, a radix out of range, a negative cost)."""


# -- input checks ----------------------------------------------------------------------------------


def _is_integer(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_nodes(nodes: int) -> None:
    """The model needs at least 2 end nodes, as an integer.

    >>> check_nodes(1)
    Traceback (most recent call last):
    ...
    topologies.cost.CostModelError: number of end nodes must be an integer >= 2, got 1
    """
    if not _is_integer(nodes) or nodes < 2:
        raise CostModelError(f"number of end nodes must be an integer >= 2, got {nodes!r}")


def max_radix(nodes: int, shape: TreeShape = "single") -> int:
    """Largest radix the model allows: 2n single-sized (one switch, n ports idle), n double-sized.

    >>> max_radix(16), max_radix(16, "double")
    (32, 16)
    """
    check_nodes(nodes)
    _check_shape(shape)
    return 2 * nodes if shape == "single" else nodes


def _check_shape(shape: str) -> None:
    if shape not in TREE_SHAPES:
        raise CostModelError(f"tree shape must be one of {', '.join(TREE_SHAPES)}, got {shape!r}")


def check_radix(radix: int, nodes: int, shape: TreeShape = "single", *, even: bool = True) -> None:
    """Minkenberg 2010's range: an even integer radix with 4 <= r <= 2n (r <= n for the double-sized tree).

    ``even=False`` admits odd radices (a chip used as it is, one port idle).

    >>> check_radix(6, 2)
    Traceback (most recent call last):
    ...
    topologies.cost.CostModelError: radix 6 is outside the model's range 4..4 for 2 end nodes
    """
    check_nodes(nodes)
    if not _is_integer(radix):
        raise CostModelError(f"radix must be an integer, got {radix!r}")
    top = max_radix(nodes, shape)
    if top < 4:
        raise CostModelError(f"a {shape}-sized tree of {nodes} end nodes has no radix >= 4 in the model")
    if not 4 <= radix <= top:
        raise CostModelError(f"radix {radix} is outside the model's range 4..{top} for {nodes} end nodes")
    if even and radix % 2:
        raise CostModelError(f"radix {radix} is odd; fat trees with constant bisection need even radices")


def check_costs(**costs: float) -> None:
    """Cost parameters are finite numbers >= 0 (Minkenberg 2010 expects a, b > 1 in practice).

    >>> check_costs(a=10, b=-1)
    Traceback (most recent call last):
    ...
    topologies.cost.CostModelError: cost parameter b must be a finite number >= 0, got -1
    """
    for name, value in costs.items():
        if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) or value < 0:
            raise CostModelError(f"cost parameter {name} must be a finite number >= 0, got {value!r}")


# -- Minkenberg 2010: the discrete model -----------------------------------------------------------


def _smallest_power_at_least(base: int, target: int) -> int:
    """Smallest e >= 0 with base**e >= target, in integers (base >= 2)."""
    exponent, power = 0, 1
    while power < target:
        power *= base
        exponent += 1
    return exponent


def levels(radix: int, nodes: int) -> int:
    """L(r, n), eq. 2: switch levels of the single-sized tree, with integer arithmetic.

    >>> levels(10, 125), levels(12, 216), levels(4, 16), levels(64, 32)
    (3, 3, 4, 1)
    """
    check_radix(radix, nodes, even=False)
    return _smallest_power_at_least(radix // 2, nodes)


def switches(radix: int, nodes: int) -> int:
    """S(r, n), eq. 3: L * ceil(n / floor(r/2)).

    >>> switches(16, 4096), switches(8, 512)
    (2048, 640)
    """
    return levels(radix, nodes) * -(-nodes // (radix // 2))


def inter_switch_links(radix: int, nodes: int) -> int:
    """I(r, n), eq. 4: n * (L - 1) bidirectional links between switches (host links excluded).

    >>> inter_switch_links(16, 4096)
    12288
    """
    return nodes * (levels(radix, nodes) - 1)


def switch_cost(radix: int, b: float) -> float:
    """C_sw(r, b) = r**2 + b, eq. 5: crosspoints plus a per-switch base cost.

    >>> switch_cost(16, 100)
    356
    """
    return radix * radix + b


def tree_cost(radix: int, nodes: int, a: float, b: float) -> float:
    """C_ss(r, n, a, b) = a * I + C_sw * S, eq. 6, for monolithic switches.

    >>> tree_cost(8, 512, 1, 1), tree_cost(24, 1024, 10, 100)
    (43648, 194888)
    """
    check_costs(a=a, b=b)
    return a * inter_switch_links(radix, nodes) + switch_cost(radix, b) * switches(radix, nodes)


def levels_double(radix: int, nodes: int) -> int:
    """L_ds(r, n) = 1 + ceil(log(n/r) / log floor(r/2)), eq. 19, in integers: 1 + smallest e with r k**e >= n.

    >>> levels_double(4, 8), levels_double(4, 32), levels_double(8, 128)
    (2, 4, 3)
    """
    check_radix(radix, nodes, "double", even=False)
    return 1 + _smallest_power_at_least(radix // 2, -(-nodes // radix))


def switches_double(radix: int, nodes: int) -> int:
    """S_ds(r, n) = (L_ds - 1) * ceil(n / floor(r/2)) + ceil(n / r), eq. 20.

    >>> switches_double(4, 8), switches_double(4, 32), switches_double(8, 128)
    (6, 56, 80)
    """
    return (levels_double(radix, nodes) - 1) * -(-nodes // (radix // 2)) + -(-nodes // radix)


def inter_switch_links_double(radix: int, nodes: int) -> int:
    """I_ds(r, n) = n * (L_ds - 1), eq. 21.

    >>> inter_switch_links_double(8, 128)
    256
    """
    return nodes * (levels_double(radix, nodes) - 1)


def tree_counts(radix: int, nodes: int, shape: TreeShape = "single") -> tuple[int, int, int]:
    """(levels, switches, inter-switch links) of a single- or double-sized tree.

    >>> tree_counts(4, 16), tree_counts(4, 32, "double")
    ((4, 32, 48), (4, 56, 96))
    """
    _check_shape(shape)
    if shape == "single":
        return levels(radix, nodes), switches(radix, nodes), inter_switch_links(radix, nodes)
    return levels_double(radix, nodes), switches_double(radix, nodes), inter_switch_links_double(radix, nodes)


# -- Minkenberg 2010: smoothed model and optimum radix ---------------------------------------------


def smoothed_cost(radix: float, nodes: float, a: float, b: float) -> float:
    """Ĉ_ss, eq. 11: the cost with fractional levels and switches (natural logarithms).

    It underestimates C_ss except where n is a power of r/2:

    >>> smoothed_cost(16, 4096, 10, 100)
    851968.0
    """
    check_costs(a=a, b=b)
    if radix <= 2 or nodes < 2:
        raise CostModelError("the smoothed cost needs r > 2 and n >= 2")
    log_ratio = math.log(nodes) / math.log(radix / 2)
    return a * nodes * (log_ratio - 1) + (radix * radix + b) * 2 * nodes * log_ratio / radix


def optimum_equation(radix: float, a: float, b: float) -> float:
    """f(r, a, b) = r**2 (1 - ln(r/2)) + a r / 2 + b (1 + ln(r/2)), eq. 14; the optimum is its root.

    >>> optimum_equation(2 * math.e, 0, 0)   # a = b = 0: the root is 2e
    0.0
    """
    log_half = math.log(radix / 2)
    return radix * radix * (1 - log_half) + a * radix / 2 + b * (1 + log_half)


def _scaled_optimum_equation(radix: float, a: float, b: float) -> float:
    """f / r**2 (eq. 25's f_ds): same root, strictly decreasing for r > 2, no overflow for large r."""
    log_half = math.log(radix / 2)
    return 1 - log_half + a / (2 * radix) + b / (radix * radix) * (1 + log_half)


def optimum_radix(a: float, b: float) -> float:
    """r̂_opt(a, b): the root of eq. 14, which does not depend on n (bracketed, not seeded as in the paper).

    f > 0 for r <= 2e and f / r**2 falls strictly, so there is exactly one root above 2e.

    >>> round(optimum_radix(810, 16.3), 1), round(optimum_radix(5100, 1.63), 1)   # Table I
    (128.3, 551.9)
    """
    from scipy.optimize import brentq

    check_costs(a=a, b=b)
    low = 2 * math.e
    if _scaled_optimum_equation(low, a, b) <= 0:  # only when a = b = 0
        return low
    high = 4 * low
    while _scaled_optimum_equation(high, a, b) > 0:
        high *= 4  # f/r**2 ~ -ln r: a finite number of steps for finite a, b
    return float(brentq(_scaled_optimum_equation, low, high, args=(a, b), xtol=1e-12, rtol=1e-14))


def optimum_radix_lambert(a: float) -> float:
    """Closed form for b = 0, eq. 15: a / (2 W(a / 4e)) = 2 e**(1 + W(a / 4e)) (the latter also at a = 0).

    >>> round(optimum_radix_lambert(10), 2), round(optimum_radix_lambert(0), 4)
    (9.3, 5.4366)
    """
    from scipy.special import lambertw

    check_costs(a=a)
    w = float(lambertw(a / (4 * math.e)).real)
    return 2 * math.exp(1 + w)


def optimum_radix_b_only(b: float) -> float:
    """Optimum for a = 0: the solution of eq. 16, b = r**2 (ln(r/2) - 1) / (ln(r/2) + 1).

    >>> round(optimum_radix_b_only(100), 2)
    16.68
    """
    return optimum_radix(0, b)


def optimum_radix_b_estimate(b: float) -> float:
    """Eq. 17's approximation for a = 0, 2 + sqrt(b + 4) (crude: 12.2 against 16.68 at b = 100).

    >>> round(optimum_radix_b_estimate(100), 1)
    12.2
    """
    check_costs(b=b)
    return 2 + math.sqrt(b + 4)


# -- Minkenberg 2010, Table I: technology estimate -------------------------------------------------


@dataclass(frozen=True)
class TechnologyEstimate:
    """One column of Minkenberg 2010's Table I, recomputed from its inputs (costs in dollars)."""

    name: str
    packets_per_crosspoint: int
    link_cost: float
    overhead_gates: int
    packet_bytes: int = 64
    fets_per_sram_bit: int = 6
    fets_per_gate: int = 4
    fet_cost: float = 1e-8
    control_factor: float = 2.0  # "we simply double the crosspoint cost"

    @property
    def bits_per_crosspoint(self) -> int:
        return self.packets_per_crosspoint * self.packet_bytes * 8

    @property
    def fets_per_crosspoint(self) -> int:
        return self.bits_per_crosspoint * self.fets_per_sram_bit

    @property
    def crosspoint_cost(self) -> float:
        """SRAM cost of one crosspoint, doubled for control and arbitration."""
        return self.fets_per_crosspoint * self.fet_cost * self.control_factor

    @property
    def overhead_cost(self) -> float:
        return self.overhead_gates * self.fets_per_gate * self.fet_cost

    @property
    def a(self) -> float:
        """Link cost in crosspoints."""
        return self.link_cost / self.crosspoint_cost

    @property
    def b(self) -> float:
        """Switch overhead in crosspoints (the doubled crosspoint cost, as the paper's high-end column)."""
        return self.overhead_cost / self.crosspoint_cost


#: Table I's two columns. The paper prints b = 16.3 for the low end, which is the overhead over the
#: *un-doubled* crosspoint cost; the consistent value is 8.14 (r̂_opt 128.7 instead of 128.3).
TABLE_I: dict[str, TechnologyEstimate] = {
    "low-end": TechnologyEstimate("low-end", packets_per_crosspoint=8, link_cost=0.4, overhead_gates=10**5),
    "high-end": TechnologyEstimate(
        "high-end", packets_per_crosspoint=80, link_cost=25.0, overhead_gates=2 * 10**5
    ),
}

#: (a, b) exactly as Table I prints them, for reproducing the paper's optimum radices (~130, ~550).
TABLE_I_PRINTED: dict[str, tuple[float, float]] = {"low-end": (810.0, 16.3), "high-end": (5100.0, 1.63)}


# -- switch designs: monolithic and twin -----------------------------------------------------------


@dataclass(frozen=True)
class SwitchDesign:
    """How one switch of the tree is built: ``chips`` chips of ``chip_radix`` ports joined by internal links.

    ``radix`` is the number of ports the switch offers to the tree. A
    monolithic switch is one chip of that radix; a twin switch of radix 2k is
    two cards of radix k + r joined by r internal links (Villar 2011).

    >>> twin_switch(56, 8)
    SwitchDesign(kind='twin', radix=56, chips=2, chip_radix=36, internal_links=8)
    """

    kind: str
    radix: int
    chips: int
    chip_radix: int
    internal_links: int

    @property
    def crosspoints(self) -> int:
        """Crosspoints of all its chips: chips * chip_radix**2."""
        return self.chips * self.chip_radix**2

    def cost(self, b: float, internal_link_cost: float) -> float:
        """chips * (chip_radix**2 + b) + internal_link_cost * internal_links.

        >>> twin_switch(56, 8).cost(100, 10)    # 2 (36**2 + 100) + 10 * 8
        2872
        """
        return self.chips * switch_cost(self.chip_radix, b) + internal_link_cost * self.internal_links


def monolithic_switch(radix: int) -> SwitchDesign:
    """One chip of ``radix`` ports (Minkenberg 2010's switch).

    >>> monolithic_switch(16).crosspoints
    256
    """
    if not _is_integer(radix) or radix < 1:
        raise CostModelError(f"radix must be a positive integer, got {radix!r}")
    return SwitchDesign("monolithic", radix, 1, radix, 0)


def twin_switch(radix: int, internal_links: int) -> SwitchDesign:
    """A radix-2k twin: two cards of radix k + r, r internal links, 1 <= r < k (Villar 2011: k < m < 2k).

    >>> twin_switch(8, 4)
    Traceback (most recent call last):
    ...
    topologies.cost.CostModelError: a twin of radix 8 (k = 4) needs 1 <= r < 4 internal links, got 4
    """
    if not _is_integer(radix) or radix < 4 or radix % 2:
        raise CostModelError(f"a twin switch needs an even radix 2k >= 4, got {radix!r}")
    half = radix // 2
    if not _is_integer(internal_links) or not 1 <= internal_links < half:
        raise CostModelError(
            f"a twin of radix {radix} (k = {half}) needs 1 <= r < {half} internal links,"
            f" got {internal_links!r}"
        )
    return SwitchDesign("twin", radix, 2, half + internal_links, internal_links)


def default_internal_links(radix: int) -> int:
    """r = ceil(k/4), at least 1, for a twin of radix 2k: the same rule as ``topologies.fattree``.

    >>> default_internal_links(8), default_internal_links(56)
    (1, 7)
    """
    from topologies.fattree import default_internal_links as fattree_rule

    return fattree_rule(radix // 2)


# -- network cost of one design --------------------------------------------------------------------


@dataclass(frozen=True)
class NetworkCost:
    """Minkenberg 2010's counts and cost for one switch design and one number of end nodes.

    Counts are numbers of things; costs are in units of one crosspoint.
    ``switches`` counts logical switches (twins count once), ``chips`` the
    chips inside them; ``internal_links`` are the twins' links between their
    cards, never counted in ``inter_switch_links``.
    """

    design: SwitchDesign
    nodes: int
    shape: TreeShape
    levels: int
    switches: int
    inter_switch_links: int
    a: float
    b: float
    internal_link_cost: float

    @property
    def chips(self) -> int:
        return self.switches * self.design.chips

    @property
    def internal_links(self) -> int:
        return self.switches * self.design.internal_links

    @property
    def crosspoints(self) -> int:
        return self.switches * self.design.crosspoints

    @property
    def link_cost(self) -> float:
        """a * inter-switch links."""
        return self.a * self.inter_switch_links

    @property
    def internal_links_cost(self) -> float:
        """a_int * internal links."""
        return self.internal_link_cost * self.internal_links

    @property
    def chip_cost(self) -> float:
        """Crosspoints plus b per chip."""
        return self.crosspoints + self.b * self.chips

    @property
    def total_cost(self) -> float:
        return self.link_cost + self.internal_links_cost + self.chip_cost


def evaluate(
    design: SwitchDesign,
    nodes: int,
    a: float,
    b: float,
    internal_link_cost: float | None = None,
    shape: TreeShape = "single",
) -> NetworkCost:
    """Cost of a fat tree of ``nodes`` end nodes built from ``design`` switches (eq. 2-6 or 18-22).

    The tree's radix is the design's external radix; a monolithic chip of odd
    radix is allowed (its spare port stays idle). ``internal_link_cost``
    defaults to ``a``.

    >>> twin = evaluate(twin_switch(56, 8), 21952, a=10, b=100)   # Villar 2011's example
    >>> twin.levels, twin.switches, twin.chips, twin.internal_links
    (3, 2352, 4704, 18816)
    """
    check_costs(a=a, b=b)
    internal_link_cost = a if internal_link_cost is None else internal_link_cost
    check_costs(internal_link_cost=internal_link_cost)
    check_radix(design.radix, nodes, shape, even=design.kind != "monolithic")
    level_count, switch_count, links = tree_counts(design.radix, nodes, shape)
    return NetworkCost(design, nodes, shape, level_count, switch_count, links, a, b, internal_link_cost)


@dataclass(frozen=True)
class DesignComparison:
    """A monolithic radix-2k tree, the same tree of twins, and the deeper trees of the cheaper chips.

    ``card_tree`` uses the twin's cards (radix k + r) as switches by
    themselves; ``half_radix_tree`` uses radix-k switches. Either is ``None``
    (with the reason in ``notes``) where the model has no such tree.
    """

    monolithic: NetworkCost
    twin: NetworkCost
    card_tree: NetworkCost | None
    half_radix_tree: NetworkCost | None
    notes: tuple[str, ...]


def _optional_tree(radix: int, nodes: int, a: float, b: float, shape: TreeShape, what: str, notes: list[str]):
    try:
        return evaluate(monolithic_switch(radix), nodes, a, b, shape=shape)
    except CostModelError as error:
        notes.append(f"no {what}: {error}")
        return None


def compare_designs(
    radix: int,
    nodes: int,
    a: float,
    b: float,
    internal_links: int | None = None,
    internal_link_cost: float | None = None,
    shape: TreeShape = "single",
) -> DesignComparison:
    """Monolithic vs twin switches of ``radix`` ports, and the deeper trees, for the same end nodes.

    >>> c = compare_designs(56, 21952, 10, 100, internal_links=8)
    >>> c.twin.chips, c.card_tree.levels, c.card_tree.switches
    (4704, 4, 4880)
    """
    check_radix(radix, nodes, shape)
    r = default_internal_links(radix) if internal_links is None else internal_links
    twin = twin_switch(radix, r)
    notes: list[str] = []
    card_what = f"tree of the cards (radix {twin.chip_radix})"
    card_tree = _optional_tree(twin.chip_radix, nodes, a, b, shape, card_what, notes)
    half_what = f"tree of radix-{radix // 2} switches"
    half_tree = _optional_tree(radix // 2, nodes, a, b, shape, half_what, notes)
    return DesignComparison(
        evaluate(monolithic_switch(radix), nodes, a, b, shape=shape),
        evaluate(twin, nodes, a, b, internal_link_cost, shape),
        card_tree,
        half_tree,
        tuple(notes),
    )


# -- discrete optimum and sweeps -------------------------------------------------------------------


def discrete_optimum(
    nodes: int,
    a: float,
    b: float,
    kind: str = "monolithic",
    internal_links: int | None = None,
    internal_link_cost: float | None = None,
    shape: TreeShape = "single",
) -> NetworkCost:
    """The cheapest even radix for ``nodes`` end nodes, searched exhaustively over 4..2n (n double-sized).

    Every design's cost is at least r * n / 2 (its chips hold at least r**2 / 2
    crosspoints, and there are at least n / r switches), so the search stops
    once that bound passes the best cost found: it ends for any n. For twins
    with a fixed ``internal_links``, radices with r >= k are skipped.

    >>> best = discrete_optimum(256, 10, 100)
    >>> best.design.radix, best.total_cost
    (14, 37976)
    """
    check_costs(a=a, b=b)
    top = max_radix(nodes, shape)
    if top < 4:
        raise CostModelError(f"a {shape}-sized tree of {nodes} end nodes has no radix >= 4 in the model")
    best: NetworkCost | None = None
    for radix in range(4, top + 1, 2):
        if best is not None and radix * nodes / 2 > best.total_cost:
            break
        design = _design(kind, radix, internal_links)
        if design is None:
            continue
        candidate = evaluate(design, nodes, a, b, internal_link_cost, shape)
        if best is None or candidate.total_cost < best.total_cost:
            best = candidate
    if best is None:
        raise CostModelError(f"no twin radix 4..{top} admits {internal_links} internal links (r < k needed)")
    return best


def _design(kind: str, radix: int, internal_links: int | None) -> SwitchDesign | None:
    """The design of that kind at ``radix``, or None where a twin cannot have that many internal links."""
    if kind == "monolithic":
        return monolithic_switch(radix)
    if kind != "twin":
        raise CostModelError(f"switch design must be 'monolithic' or 'twin', got {kind!r}")
    r = default_internal_links(radix) if internal_links is None else internal_links
    return twin_switch(radix, r) if 1 <= r < radix // 2 else None


def parse_sweep(text: str, nodes: int, shape: TreeShape = "single") -> list[int]:
    """Radices of a sweep ``START:STOP[:STEP]`` (STOP included, STEP 2 by default), all checked.

    >>> parse_sweep("4:12", 64), parse_sweep("8:32:8", 64)
    ([4, 6, 8, 10, 12], [8, 16, 24, 32])
    >>> parse_sweep("4:64", 16)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topologies.cost.CostModelError: sweep 4:64 reaches radix 64, beyond the model's range 4..32 for 16 ...
    """
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise CostModelError(f"a sweep is START:STOP or START:STOP:STEP, got {text!r}")
    try:
        start, stop, *rest = (int(part) for part in parts)
    except ValueError:
        raise CostModelError(f"a sweep is made of integers, got {text!r}") from None
    step = rest[0] if rest else 2
    if step < 2 or step % 2 or start % 2:
        raise CostModelError(f"a sweep needs an even start and an even step >= 2, got {text!r}")
    if stop < start:
        raise CostModelError(f"sweep {text} is empty (stop below start)")
    top = max_radix(nodes, shape)
    if start < 4 or stop > top:
        bad = start if start < 4 else stop
        raise CostModelError(
            f"sweep {text} reaches radix {bad}, beyond the model's range 4..{top} for {nodes} end nodes"
        )
    if (stop - start) // step + 1 > MAX_SWEEP_POINTS:
        raise CostModelError(f"sweep {text} has more than {MAX_SWEEP_POINTS} radices; use a larger step")
    return list(range(start, stop + 1, step))
