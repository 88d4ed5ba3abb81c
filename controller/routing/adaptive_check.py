"""Is a measured path one the adaptive tables allow? Every hop checked against its entry's candidates.

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
