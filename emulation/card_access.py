"""The run's view of a network's cards through the controller (controller.install): install, read counters.

``open_cards(network)`` opens a :class:`controller.install.TwinController` on the
network's state; :meth:`Cards.install` pushes the card program to every card
(which empties its tables and zeroes its counters, so one network serves one
plan after another) and installs the plan of the route tables; :meth:`Cards.counters`
reads drops by reason, frames per port and packets per (port, VC)
(controller.install.CardCounters).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from controller.routing import RoutingTables
from topologies.errors import TwinnetError
from topologies.model import Topology

if TYPE_CHECKING:  # the controller (grpc, protobuf) is imported when cards are opened
    from controller.install import CardCounters, InstallReport


class CardAccessError(TwinnetError, RuntimeError):
    """A card could not be reached, configured or read."""


class Cards:
    """The controller of a running network, as the run uses it (see :func:`open_cards`)."""

    def __init__(self, controller, topology: Topology) -> None:
        self.controller = controller
        self.topology = topology

    @property
    def names(self) -> list[str]:
        return list(self.controller.endpoints)

    def install(self, tables: RoutingTables) -> InstallReport:
        """Push the program to every card (fresh tables and counters), install `tables`; the report
        (its ``seconds``: the writing, without planning the cards)."""
        report = self.controller.install(self.topology, tables, pipeline="push")
        if not report.ok:
            raise CardAccessError(f"installing {tables.algorithm} failed: " + "; ".join(report.errors()[:5]))
        return report

    def install_plans(self, plans: dict, label: str) -> InstallReport:
        """Push the program to every card and install `plans` (controller.twins.CardPlan by card name)."""
        report = self.controller.apply(plans, pipeline="push", label=f"install {label}")
        if not report.ok:
            raise CardAccessError(f"installing {label} failed: " + "; ".join(report.errors()[:5]))
        return report

    def counters(self, names: Iterable[str] | None = None) -> dict[str, CardCounters]:
        """Counters of the named cards (default all); a card that cannot be read is left out."""
        wanted = list(names) if names is not None else None
        answers = self.controller.read_counters(self.topology, wanted)
        # a str is the card's error message: unreadable (dead, or not answering)
        return {name: answer for name, answer in answers.items() if not isinstance(answer, str)}


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
