"""Is a measured path one the adaptive tables allow? Every hop checked against its entry's candidates;
and the fewest card-to-card links an allowed path of a pair takes (:class:`FewestHops`).

A hop is (card id, ingress port, egress port, VC, adaptive bit) as the trace
records it. Starting at the source PE's card on its host port in the
non-escaped state, each hop must match an entry of the tables and leave by one
of its adaptive candidates (port, VC) with the adaptive bit set, or by its
escape (port, VC) with the bit clear, after which the state is escaped; the
next hop must start on the card and port the link leads to, and the last hop
must hand the packet to PE `dst`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from controller.routing.adaptive import AdaptiveTables
from controller.routing.network import HOST

Hop = tuple[int, int, int, int, int]


def path_problems(model: AdaptiveTables, src: int, dst: int, hops: Sequence[Hop]) -> list[str]:
    """What is wrong with `hops` as a path from PE `src` to PE `dst` (empty: allowed)."""
    net = model.network
    card, port, escaped = int(net.pe_card[src]), int(net.pe_port[src]), 0
    problems: list[str] = []
    for number, (hop_card, in_port, out_port, vc, adaptive) in enumerate(hops, start=1):
        where = f"hop {number} ({net.card_names[hop_card]} in {in_port} out {out_port} vc {vc})"
        if (hop_card, in_port) != (card, port):
            problems.append(f"{where}: expected on {net.card_names[card]} port {port}")
            return problems
        entry = model.lookup(card, in_port, dst, escaped)
        if entry is None:
            problems.append(f"{where}: no entry for escaped={escaped}")
            return problems
        if adaptive:
            if (out_port, vc) not in entry.candidates:
                problems.append(f"{where}: not an adaptive candidate {list(entry.candidates)}")
                return problems
        elif (out_port, vc) != (entry.escape_port, entry.escape_vc):
            problems.append(f"{where}: not the escape ({entry.escape_port}, {entry.escape_vc})")
            return problems
        else:
            escaped = 1
        if net.port_kind[card, out_port] == HOST:
            if int(net.host_at[card, out_port]) != dst or number != len(hops):
                problems.append(f"{where}: delivered to PE {int(net.host_at[card, out_port])}")
            return problems
        card, port = int(net.peer_card[card, out_port]), int(net.peer_port[card, out_port])
    problems.append(f"the path ends on {net.card_names[card]} port {port}, not at PE {dst}")
    return problems


class FewestHops:
    """Fewest card-to-card links (external and internal) of a path the adaptive tables allow, per pair.

    At a card a packet that has not escaped may leave by any candidate port or
    by its escape port (and the escape routing delivers from every state), so
    the fewest links from a card to PE `dst` is a shortest path over those
    ports, the same for every selection function. Computed per destination
    (relaxation over all cards at once) when first asked, and kept.
    """

    def __init__(self, model: AdaptiveTables) -> None:
        self.model = model
        self._by_dst: dict[int, np.ndarray] = {}
        self._moves_of: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def __call__(self, src: int, dst: int) -> int | None:
        """The fewest links from PE `src` to PE `dst` (None: no allowed path)."""
        hops = self.of_destination(dst)[int(self.model.network.pe_card[src])]
        return None if hops < 0 else int(hops)

    def of_destination(self, dst: int) -> np.ndarray:
        """Per card, the fewest links to PE `dst` (-1 where no allowed path starts)."""
        if dst not in self._by_dst:
            self._by_dst[dst] = self._compute(dst)
        return self._by_dst[dst]

    def cards_on_paths(self, src: int, dst: int) -> list[int]:
        """The cards some allowed path from PE `src` to PE `dst` visits, nearest to the source first."""
        allowed, far, _ = self._moves(dst)
        start = int(self.model.network.pe_card[src])
        order, seen = [start], {start}
        for card in order:
            for nxt in far[card][allowed[card]].tolist():
                if nxt not in seen:
                    seen.add(nxt)
                    order.append(nxt)
        return order

    def _moves(self, dst: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(allowed[card, port], far card of each port (0 where not allowed), cards that deliver to `dst`)."""
        if dst not in self._moves_of:
            self._moves_of[dst] = self._compute_moves(dst)
        return self._moves_of[dst]

    def _compute_moves(self, dst: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        model, net = self.model, self.model.network
        first, last = np.searchsorted(model.dst_pe, [dst, dst + 1])
        rows = np.arange(first, last)
        rows = rows[model.escaped[rows] == 0]
        cards = model.card_id[rows].astype(np.int64)
        ports = np.arange(net.max_port + 1)
        masks = model.candidate_ports[rows] | (np.int64(1) << model.escape_port[rows].astype(np.int64))
        allowed = np.zeros((net.num_cards, ports.size), dtype=bool)
        allowed[cards] = ((masks[:, None] >> ports[None, :]) & 1).astype(bool)
        peer = net.peer_card.astype(np.int64)
        allowed &= peer >= 0
        far = np.where(allowed, peer, 0)
        delivers = cards[net.port_kind[cards, model.escape_port[rows]] == HOST]
        return allowed, far, delivers

    def _compute(self, dst: int) -> np.ndarray:
        net = self.model.network
        allowed, far, delivers = self._moves(dst)
        unreached = np.iinfo(np.int64).max // 2
        hops = np.full(net.num_cards, unreached, dtype=np.int64)
        hops[delivers] = 0
        for _ in range(net.num_cards):
            step = np.where(allowed, hops[far] + 1, unreached).min(axis=1)
            new = np.minimum(hops, step)
            if np.array_equal(new, hops):
                break
            hops = new
        return np.where(hops >= unreached, -1, hops)
