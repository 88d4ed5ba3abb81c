"""The run's view of a network's cards through the controller (controller.install): install, read counters.

``open_cards(network)`` opens a :class:`controller.install.TwinController` on the
network's state; :meth:`Cards.install` pushes the card program to every card
(which empties its tables and zeroes its counters, so one network serves one
plan after another) and installs the plan of the route tables; :meth:`Cards.counters`
reads drops by reason, frames per port and packets per (port, VC), in packets.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from controller.routing import RoutingTables
from topologies.errors import TwinnetError
from topologies.model import Topology


class CardAccessError(TwinnetError, RuntimeError):
    """A card could not be reached, configured or read."""


@dataclass(frozen=True)
class CardCounters:
    """One card's counters in packets: drops by reason, frames received per port, sent per (port, VC)."""

    card: str
    drops: dict[str, int]
    rx_port: dict[int, int]
    tx_port_vc: dict[tuple[int, int], int]

    def minus(self, before: CardCounters) -> CardCounters:
        """Counts accumulated since `before`."""
        return CardCounters(
            self.card,
            {reason: value - before.drops.get(reason, 0) for reason, value in self.drops.items()},
            {port: value - before.rx_port.get(port, 0) for port, value in self.rx_port.items()},
            {key: value - before.tx_port_vc.get(key, 0) for key, value in self.tx_port_vc.items()},
        )


class Cards:
    """The controller of a running network, as the run uses it (see :func:`open_cards`)."""

    def __init__(self, controller, topology: Topology) -> None:
        self.controller = controller
        self.topology = topology

    @property
    def names(self) -> list[str]:
        return list(self.controller.endpoints)

    def install(self, tables: RoutingTables) -> int:
        """Push the program to every card (fresh tables and counters), install `tables`; entries written."""
        report = self.controller.install(self.topology, tables, pipeline="push")
        if not report.ok:
            raise CardAccessError(f"installing {tables.algorithm} failed: " + "; ".join(report.errors()[:5]))
        return report.written

    def counters(self, names: Iterable[str] | None = None) -> dict[str, CardCounters]:
        """Counters of the named cards (default all), in packets; a card that cannot be read is left out."""
        wanted = list(names) if names is not None else None
        answers = self.controller.read_counters(self.topology, wanted)
        result = {}
        for name, answer in answers.items():
            if isinstance(answer, str):  # the card's error message: unreadable (dead, or not answering)
                continue
            result[name] = CardCounters(
                name,
                {reason: packets for reason, (packets, _bytes) in answer.drops.items()},
                {port: packets for port, (packets, _bytes) in answer.rx.items() if packets},
                {key: packets for key, (packets, _bytes) in answer.tx.items() if packets},
            )
        return result


@contextlib.contextmanager
def open_cards(network) -> Iterator[Cards]:
    """The controller of a running :class:`~emulation.network.TwinnetNetwork`, closed afterwards."""
    from controller.install import TwinController

    try:
        controller = TwinController.from_state(network.state)
    except Exception as error:  # the program does not compile, the state names no cards, ...
        raise CardAccessError(f"cannot set up the controller: {error}") from error
    try:
        yield Cards(controller, network.topology)
    finally:
        controller.close()
