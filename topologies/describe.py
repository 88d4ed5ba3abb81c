"""Text and JSON descriptions of a Topology: summary, port tables, listings.

The port table is the published map from the papers' port names to card port
numbers (docs/contracts.md): cards that number their ports the same way share
one row, so a whole nDT torus prints two rows (card 0, card 1) and a twin fat
tree four (alpha and beta below the roots and at the roots).

>>> from topologies.torus import ndt_torus
>>> for line in port_table_lines(ndt_torus("3x3x3")): print(line)
side 0 (27 cards, c0 c2 c4 ...): 1=d0+ 2=d0- 3=d1+ 4=int0 5=pe
side 1 (27 cards, c1 c3 c5 ...): 1=d1- 2=d2+ 3=d2- 4=int0 5=pe
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from topologies.model import Topology

LIST_CHOICES = ("cards", "hosts", "links", "twins", "ports")

#: what a Twin is called in each family
TWIN_WORDS = {
    "kary-ntree": "switches (one card each)",
    "twin-fattree": "twin switches (two cards each)",
    "torus": "nodes (one card each)",
    "ndt": "nodes (two cards each)",
}


def port_signature(topo: Topology, card: str) -> tuple[str, ...]:
    """The name of each port of `card` in port order ('-' for an unused port, '?' for an unnamed one)."""
    names = []
    for ref in topo.card_ports(card):
        name = topo.port_names.get(ref, "?")
        names.append(f"({name})" if ref in topo.unused_ports else name)
    return tuple(names)


def port_table(topo: Topology) -> list[dict[str, Any]]:
    """Groups of cards with the same port numbering: side, stage, the names of ports 1.. and the cards."""
    groups: dict[tuple, list[str]] = defaultdict(list)
    for card in sorted(topo.cards.values(), key=lambda c: c.card_id):
        stage = topo.twins[card.twin].stage if card.twin in topo.twins else None
        groups[card.side, stage, port_signature(topo, card.name)].append(card.name)
    rows = []
    for (side, stage, names), cards in groups.items():
        rows.append(
            {
                "side": side,
                "stage": stage,
                "ports": {i + 1: name for i, name in enumerate(names)},
                "cards": cards,
            }
        )
    return rows


def port_table_lines(topo: Topology) -> list[str]:
    """One line per group of port_table; unused ports in parentheses."""
    lines = []
    for row in port_table(topo):
        where = f"side {row['side']}" + (f", stage {row['stage']}" if row["stage"] is not None else "")
        cards = row["cards"]
        shown = " ".join(cards[:3]) + (" ..." if len(cards) > 3 else "")
        ports = " ".join(f"{port}={name}" for port, name in row["ports"].items())
        lines.append(f"{where} ({len(cards)} card{'s' if len(cards) != 1 else ''}, {shown}): {ports}")
    return lines


def summary_lines(topo: Topology) -> list[str]:
    """A short human description: family, parameters, counts, numbering, port table."""
    params = " ".join(f"{key}={_short(key, value)}" for key, value in topo.params.items())
    counts = topo.counts()
    lines = [
        f"{topo.family}: {params}",
        f"  {counts['hosts']} PEs (hosts h0..h{counts['hosts'] - 1}), {counts['cards']} cards, "
        f"{counts['twins']} {TWIN_WORDS.get(topo.family, 'switches')}",
        f"  links: {counts['external_links']} external card-card, {counts['internal_links']} internal "
        f"(within a twin), {counts['host_links']} host-card",
    ]
    if topo.unused_ports:
        lines.append(f"  {len(topo.unused_ports)} card ports unused (root up ports)")
    if topo.family == "ndt":
        from topologies.torus import equivalent_torus_dims

        shape = "x".join(map(str, equivalent_torus_dims(topo.params["dims"])))
        lines.append(
            f"  equivalent torus of the same cards, one per node: {shape} (twinnet topo torus --dims {shape})"
        )
    lines.append("  card ports (P4 port = Mininet interface c<id>-eth<port>):")
    lines.extend("    " + line for line in port_table_lines(topo))
    return lines


def _short(key: str, value: Any) -> str:
    if isinstance(value, list | tuple):
        return ("x" if key == "dims" else ",").join(map(str, value)) or "-"
    return str(value)


def list_rows(topo: Topology, what: str) -> list[str]:
    """Tab-separated rows for `twinnet topo --list WHAT` (WHAT in LIST_CHOICES), header first."""
    if what == "cards":
        rows = ["card\tid\ttwin\tside\tports"]
        rows += [
            f"{c.name}\t{c.card_id}\t{c.twin}\t{c.side}\t{c.num_ports}"
            for c in sorted(topo.cards.values(), key=lambda c: c.card_id)
        ]
    elif what == "hosts":
        rows = ["host\tpe\tip\tmac\tcard\tport"]
        rows += [f"{h.name}\t{h.pe}\t{h.ip}\t{h.mac}\t{h.card}\t{h.port}" for h in topo.hosts]
    elif what == "links":
        rows = ["a\tb\tkind\ta_name\tb_name"]
        rows += [
            f"{link.a}\t{link.b}\t{link.kind}\t{topo.port_names.get(link.a, 'host')}\t"
            f"{topo.port_names.get(link.b, 'host')}"
            for link in topo.links
        ]
    elif what == "twins":
        rows = ["twin\tcards\tstage\tcoords\tports"]
        rows += [
            f"{t.name}\t{','.join(t.cards)}\t{'' if t.stage is None else t.stage}\t"
            f"{','.join(map(str, t.coords))}\t{' '.join(f'{n}={ref}' for n, ref in t.ports.items())}"
            for t in topo.twins.values()
        ]
    elif what == "ports":
        rows = ["port\tname\tpeer\tkind"]
        for card in sorted(topo.cards.values(), key=lambda c: c.card_id):
            for ref in topo.card_ports(card.name):
                name = topo.port_names.get(ref, "?")
                if topo.is_connected(ref):
                    link = topo.link_at(ref)
                    rows.append(f"{ref}\t{name}\t{link.other(ref)}\t{link.kind}")
                else:
                    rows.append(f"{ref}\t{name}\t-\tunused")
    else:
        raise ValueError(f"list must be one of {', '.join(LIST_CHOICES)}, got {what!r}")
    return rows


def to_dict(topo: Topology) -> dict[str, Any]:
    """A JSON-ready description of the whole topology (ports written "card:port", hosts "h<pe>:0")."""
    return {
        "schema": {
            "ports": "card ports are P4 port numbers = Mininet interface numbers (c<id>-eth<port>), from 1; "
            "a host has port 0",
            "links": "bidirectional; kind external (card-card between switches/nodes), internal (the two "
            "cards of a twin), host (PE to card)",
            "pe": "PE index; host name h<pe>, address and MAC from topologies.addressing",
        },
        "family": topo.family,
        "params": topo.params,
        "counts": topo.counts(),
        "port_table": [
            {**row, "ports": {str(p): n for p, n in row["ports"].items()}} for row in port_table(topo)
        ],
        "cards": [
            {
                "name": card.name,
                "card_id": card.card_id,
                "twin": card.twin,
                "side": card.side,
                "ports": [
                    {
                        "port": ref.port,
                        "name": topo.port_names.get(ref),
                        "peer": str(topo.peer(ref)) if topo.is_connected(ref) else None,
                        "kind": topo.link_at(ref).kind if topo.is_connected(ref) else "unused",
                    }
                    for ref in topo.card_ports(card.name)
                ],
            }
            for card in sorted(topo.cards.values(), key=lambda c: c.card_id)
        ],
        "hosts": [
            {"pe": h.pe, "name": h.name, "ip": h.ip, "mac": h.mac, "card": h.card, "port": h.port}
            for h in topo.hosts
        ],
        "twins": [
            {
                "name": t.name,
                "cards": list(t.cards),
                "stage": t.stage,
                "coords": list(t.coords),
                "ports": {name: str(ref) for name, ref in t.ports.items()},
            }
            for t in topo.twins.values()
        ],
        "links": [{"a": str(link.a), "b": str(link.b), "kind": link.kind} for link in topo.links],
    }
