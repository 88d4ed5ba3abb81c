"""Coordinates and port numbers of torus cards (k-ary n-cubes and nDT tori) as arrays, plus ring helpers.

DOR, DORT and TS-DOR decide from a card's node coordinates o, its side (card 0
or 1 of an nDT node), the destination node's coordinates t and the destination
PE's card; this module derives all of them from the Topology (twins' coords and
ports, ``port_names``), so the algorithms need no knowledge of how the
generators number ports.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from controller.routing.errors import UnsupportedTopologyError
from controller.routing.network import CardNetwork

#: upper/lower VCs of a ring (EXTOLL's rule, torus notes II §4.3): upper if t_i > o_i
UPPER, LOWER = 0, 1


def ring_direction(o: np.ndarray, t: np.ndarray, k: int, tie: int | np.ndarray) -> np.ndarray:
    """Minimal direction from o to t on a ring of k nodes: +1, -1, 0 (already there) or `tie` at distance k/2.

    >>> ring_direction(np.array([0, 0, 0, 1]), np.array([1, 3, 2, 1]), 4, +1).tolist()
    [1, -1, 1, 0]
    """
    offset = (t - o) % k
    direction = np.where(2 * offset < k, 1, np.where(2 * offset > k, -1, tie))
    return np.where(offset == 0, 0, direction)


def upper_or_lower(o: np.ndarray, t: np.ndarray) -> np.ndarray:
    """VC of a ring hop: UPPER (0) if the target coordinate is above the current one, else LOWER (1)."""
    return np.where(t > o, UPPER, LOWER)


class TorusView:
    """Node coordinates, card sides and per-port card numbers of a "torus" or "ndt" topology.

    For a torus (one card per node) every port is on side 0 and a PE sits on
    each card; for an nDT ``card_of_port[i, 0]`` / ``[i, 1]`` say which card of
    a node holds d_i+ / d_i- (the same at every node).
    """

    def __init__(self, network: CardNetwork) -> None:
        topology = network.topology
        if topology.family not in ("torus", "ndt"):
            raise UnsupportedTopologyError(
                f"a torus routing needs a torus or nDT topology, got {topology.family!r}"
            )
        self.network = network
        self.dims = tuple(int(k) for k in topology.params["dims"])
        self.n = len(self.dims)
        self.twin_cards = topology.family == "ndt"
        num_cards = network.num_cards
        self.coords = np.zeros((num_cards, self.n), dtype=np.int64)
        for twin in topology.twins.values():
            for name in twin.cards:
                self.coords[network.card_id_of_name[name]] = twin.coords
        self.side = network.side.astype(np.int64)
        #: port number per card for d_i+ (column 2i) and d_i- (column 2i+1); 0 where the card lacks it
        self.port = np.stack(
            [network.port_numbers(f"d{i}{sign}") for i in range(self.n) for sign in "+-"], axis=1
        )
        self.pe_port = network.port_numbers("pe")
        self.internal_port = network.port_numbers("int0")
        self.card_of_port = np.zeros((self.n, 2), dtype=np.int64)
        if self.twin_cards:
            first = next(iter(topology.twins.values()))
            for i in range(self.n):
                for column, sign in enumerate("+-"):
                    holder = first.ports[f"d{i}{sign}"].node
                    self.card_of_port[i, column] = network.side[network.card_id_of_name[holder]]
        self.node_of_pe = network.pe_card // 2 if self.twin_cards else network.pe_card.copy()
        self.side_of_pe = network.side[network.pe_card].astype(np.int64)
        node_coords = np.zeros((int(self.node_of_pe.max()) + 1, self.n), dtype=np.int64)
        node_coords[self.node_of_pe] = self.coords[network.pe_card]
        self.coords_of_pe = node_coords[self.node_of_pe]

    @property
    def split_dimensions(self) -> tuple[int, ...]:
        """Dimensions whose + and - ports are on different cards (their rings cross internal links)."""
        return tuple(i for i in range(self.n) if self.card_of_port[i, 0] != self.card_of_port[i, 1])

    def holder(self, i: int, direction: np.ndarray) -> np.ndarray:
        """Side (0/1) of the card holding port d_i^direction, per element (direction +1 or -1)."""
        return np.where(direction > 0, self.card_of_port[i, 0], self.card_of_port[i, 1])

    def port_of(self, cards: np.ndarray, i: int, direction: np.ndarray) -> np.ndarray:
        """Card port number of d_i^direction on `cards` (0 where that card does not hold it)."""
        return np.where(direction > 0, self.port[cards, 2 * i], self.port[cards, 2 * i + 1])

    def config_text(self) -> str:
        """The port configuration in the contracts' text form, e.g. 'd0+d0-d1+|d1-d2+d2-'."""
        halves = [[], []]
        for i in range(self.n):
            for column, sign in enumerate("+-"):
                halves[int(self.card_of_port[i, column])].append(f"d{i}{sign}")
        return "|".join("".join(half) for half in halves)


#: (cards, dimension, direction, ring VC, at home) -> (egress, VC, use): a torus routing's choice
#: on each card from DOR's next move (``move_code``) and, where the packet is at the destination
#: node, whether the destination PE is on this card
MoveDecision = Callable[
    [np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]
]


def decide_by_move(
    view: TorusView, decision: MoveDecision
) -> Callable[[np.ndarray, np.ndarray, range, dict[int, int]], tuple[np.ndarray, ...]]:
    """``decide(cards, dsts, order, ties)``: `decision` on DOR's next move in `order` (``ties`` as in
    ``move_code``), read from a per-card table that `decision` itself makes once.

    The decision depends on the destination only through the move code and, at the destination
    node, whether the PE is on this card: per card, the table holds it over those (code 0 .. 4n,
    then 4n + 1 for "at home"), so that a grid of cards x destinations costs a move code and a
    look-up instead of the decision's selects.
    """
    num_cards = view.network.num_cards
    home = 4 * view.n + 1
    codes = np.arange(home + 1, dtype=np.int8)[None, :]
    every_card = np.arange(num_cards, dtype=np.int32)[:, None]
    table = decision(every_card, *decode_move(np.where(codes == home, 0, codes)), codes == home)
    table = tuple(np.ascontiguousarray(np.broadcast_to(t, (num_cards, home + 1))).ravel() for t in table)

    def decide(cards: np.ndarray, dsts: np.ndarray, order: range, ties: dict[int, int]):
        code = move_code(view, cards, dsts, order, ties)
        side = view.side[cards].astype(np.int8)
        at_home = (code == 0) & (view.side_of_pe[dsts].astype(np.int8) == side)
        cell = np.asarray(cards, dtype=np.intp) * (home + 1) + np.where(at_home, np.int8(home), code)
        return tuple(t.take(cell) for t in table)

    return decide


def move_code(
    view: TorusView, cards: np.ndarray, dsts: np.ndarray, order: range, ties: dict[int, int]
) -> np.ndarray:
    """DOR's choice on each card for each destination PE, as one int8 code per element (decode_move
    gives its dimension, direction and ring VC).

    The first dimension in `order` whose coordinate differs from the destination's,
    the minimal direction on its ring (``ties[i]`` at distance k_i/2, + if absent),
    and UPPER/LOWER by the destination coordinate; code 0 where the packet is at
    the destination node. `cards` and `dsts` broadcast (e.g. a row of cards
    against a column of destinations). Per dimension the move is read from a
    k_i x k_i table of (t_i, o_i) as one code, 1 + 4i + 2[direction -] + ring,
    and earlier dimensions of `order` overwrite later ones.
    """
    shape = np.broadcast_shapes(np.shape(cards), np.shape(dsts))
    code = np.zeros(shape, dtype=np.int8)
    for i in reversed(order):
        moves = _move_codes(view.dims[i], ties.get(i, +1), i)
        mine = _by_pair(moves, view.coords_of_pe[dsts, i], view.coords[cards, i])
        code = np.where(mine != 0, mine, code)  # a select: np.copyto with a mask is far slower
    return code


def decode_move(code: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dimension, direction, ring VC) of move codes (dimension -1, direction 0, ring 0 for code 0)."""
    moving = code != 0
    step = code - np.int8(1)  # 4i + 2[direction -] + ring where moving
    dim = np.where(moving, step >> 2, np.int8(-1))
    direction = np.where(moving, np.int8(1) - np.int8(2) * ((step >> 1) & 1), np.int8(0))
    ring = np.where(moving, step & 1, np.int8(0))
    return dim, direction, ring


def _move_codes(k: int, tie: int, i: int) -> np.ndarray:
    """k x k table over (target t, origin o) of dimension i's move code (0 where t == o)."""
    t, o = np.divmod(np.arange(k * k), k)
    step = ring_direction(o, t, k, tie)
    code = 1 + 4 * i + 2 * (step < 0) + upper_or_lower(o, t)
    return np.where(step == 0, 0, code).astype(np.int8).reshape(k, k)


def _by_pair(table: np.ndarray, rows: np.ndarray, columns: np.ndarray) -> np.ndarray:
    """``table[rows, columns]`` broadcast; a column of rows against a row of columns reads whole rows."""
    if rows.ndim == 2 and columns.ndim == 2 and rows.shape[1] == 1 and columns.shape[0] == 1:
        return np.take(table[rows[:, 0]], columns[0], axis=1)  # C order (fancy indexing gives F order)
    return table[rows, columns]


def port_of_move(
    view: TorusView, cards: np.ndarray, dim: np.ndarray, direction: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(card port number, side of the card holding the port) of d_dim^direction; (0, -1) where dim is -1."""
    moves = 2 * view.n  # d_i+ is column 2i of view.port, d_i- column 2i + 1; column 2n: no move
    ports = np.zeros((view.port.shape[0], moves + 1), dtype=np.int16)
    ports[:, :moves] = view.port
    holders = np.append(view.card_of_port.ravel(), -1).astype(np.int8)
    column = np.where(dim < 0, np.int8(moves), np.int8(2) * dim + (direction < 0)).astype(np.int32)
    at = np.asarray(cards, dtype=np.int32) * np.int32(moves + 1) + column
    return ports.ravel().take(at), holders.take(column)
