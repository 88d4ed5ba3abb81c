"""The cards file of a multi-card switch process (``twinnet-switch --cards CARDS.json``).

One JSON object, written by ``write_cards_file`` and read by ``read_cards_file``::

    {"cards": [{"device_id": 3, "interfaces": [[1, "c3-eth1"], [2, "c3-eth2"]],
                "control_address": "unix:/run/twinnet/c3.ctl"}, ...]}

Each card has its own P4Runtime device id, ports and (optionally) side channel; the
process shares the program, the gRPC server and the forwarding loop among them. A file
that cannot be right (duplicate device ids, an interface or side channel given twice, a
bad port number) is refused with one ``CardsFileError`` naming the problem, before the
process opens anything.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from p4switch.daemon.addresses import UNIX_PREFIX, check_address
from p4switch.daemon.ports import MAX_PORT_NUMBER
from p4switch.errors import P4SwitchError

MAX_DEVICE_ID = 2**64 - 1


class CardsFileError(P4SwitchError, ValueError):
    """A cards file that cannot be read or describes cards that cannot run together."""


@dataclass
class CardConfig:
    """One card of the process: its P4Runtime device id, ports and side channel (``unix:/path`` or None)."""

    device_id: int
    interfaces: list[tuple[int, str]] = field(default_factory=list)
    control_address: str | None = None


def write_cards_file(path: str | os.PathLike[str], cards: Sequence[CardConfig]) -> None:
    """Write ``cards`` to ``path`` (checked first: a file this writes is one the switch accepts)."""
    check_cards(list(cards), str(path))
    document = {
        "cards": [
            {
                "device_id": card.device_id,
                "interfaces": [[number, interface] for number, interface in card.interfaces],
                "control_address": card.control_address,
            }
            for card in cards
        ]
    }
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(document, handle, indent=1)
        handle.write("\n")


def read_cards_file(path: str | os.PathLike[str]) -> list[CardConfig]:
    """The cards of ``path``; CardsFileError naming the problem for anything unreadable or inconsistent."""
    name = str(path)
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except OSError as error:
        raise CardsFileError(f"cards file {name}: cannot read it: {error.strerror or error}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CardsFileError(f"cards file {name}: not JSON: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("cards"), list):
        raise CardsFileError(f'cards file {name}: expected an object {{"cards": [...]}}')
    cards = [_card(entry, position, name) for position, entry in enumerate(document["cards"])]
    check_cards(cards, name)
    return cards


def _integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _card(entry: Any, position: int, name: str) -> CardConfig:
    """One card object of the file -> CardConfig (types checked; consistency is ``check_cards``'s)."""
    where = f"cards file {name}: card {position}"
    if not isinstance(entry, dict):
        raise CardsFileError(f"{where}: expected an object, not {type(entry).__name__}")
    unknown = sorted(set(entry) - {"device_id", "interfaces", "control_address"})
    if unknown:
        raise CardsFileError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}")
    device_id = entry.get("device_id")
    if not _integer(device_id):
        raise CardsFileError(f"{where}: device_id must be an integer, not {device_id!r}")
    interfaces = entry.get("interfaces", [])
    if not isinstance(interfaces, list):
        raise CardsFileError(f"{where}: interfaces must be a list of [port, interface]")
    pairs: list[tuple[int, str]] = []
    for pair in interfaces:
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not _integer(pair[0])
            or not isinstance(pair[1], str)
        ):
            raise CardsFileError(f"{where}: an interface is [port number, name], not {pair!r}")
        pairs.append((pair[0], pair[1]))
    control = entry.get("control_address")
    if control is not None and not isinstance(control, str):
        raise CardsFileError(f'{where}: control_address must be "unix:/path" or null, not {control!r}')
    return CardConfig(device_id, pairs, control)


def check_cards(cards: list[CardConfig], name: str = "cards") -> None:
    """CardsFileError for cards that cannot run together in one process (the first problem found)."""
    if not cards:
        raise CardsFileError(f"cards file {name}: no cards")
    device_ids: set[int] = set()
    interfaces: dict[str, int] = {}
    controls: dict[str, int] = {}
    for card in cards:
        where = f"cards file {name}: device {card.device_id}"
        if not 0 <= card.device_id <= MAX_DEVICE_ID:
            raise CardsFileError(
                f"cards file {name}: device id {card.device_id} is not 0..{MAX_DEVICE_ID} (a uint64)"
            )
        if card.device_id in device_ids:
            raise CardsFileError(f"cards file {name}: device id {card.device_id} is given twice")
        device_ids.add(card.device_id)
        numbers: set[int] = set()
        for number, interface in card.interfaces:
            if not 0 <= number <= MAX_PORT_NUMBER:
                raise CardsFileError(f"{where}: port number must be 0..{MAX_PORT_NUMBER}, not {number}")
            if number in numbers:
                raise CardsFileError(f"{where}: port {number} is given twice")
            numbers.add(number)
            if not interface or "/" in interface or len(interface) > 15:
                raise CardsFileError(f"{where}: {interface!r} is not an interface name")
            if interface in interfaces:
                raise CardsFileError(
                    f"cards file {name}: interface {interface} is given to device {interfaces[interface]} "
                    f"and device {card.device_id}"
                )
            interfaces[interface] = card.device_id
        if card.control_address is not None:
            if not card.control_address.startswith(UNIX_PREFIX):
                raise CardsFileError(
                    f"{where}: control_address must be unix:/path, not {card.control_address!r}"
                )
            try:
                check_address(card.control_address)
            except ValueError as error:
                raise CardsFileError(f"{where}: control_address: {error}") from None
            if card.control_address in controls:
                raise CardsFileError(
                    f"cards file {name}: side channel {card.control_address} is given to device "
                    f"{controls[card.control_address]} and device {card.device_id}"
                )
            controls[card.control_address] = card.device_id
