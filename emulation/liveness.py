"""Whether the cards of a run still forward: the process, and for the embedded target its data plane.

A switch process can run while its data plane does not (a hung or stopped process, a
forwarding loop that stopped); counting such a card as alive hides its losses as
"unexplained". :class:`DataPlaneWatch` asks every live embedded card's side channel for
its data plane's health (``{"cmd": "health"}``: alive, failure, age of the loop's
heartbeat) every :data:`CHECK_INTERVAL_S`, in a background thread so that the sender
never waits for it. A card whose data plane reports a failure, whose heartbeat is older
than :data:`STALE_BEAT_S`, or that does not answer within :data:`ANSWER_TIMEOUT_S`, is
asked once more at once; failing twice it is declared dead: its switch process is killed
(so that it is dead for every later check, as a crashed card is) and the time noted.
Worst case from the data plane's stop to its death: one interval and two timeouts, 0.8 s.
A switch whose forwarding loop fails exits by itself (code 70) and is seen by the process
check alone.

Cards that share a switch process (emulation.switch_groups) are checked with one request
per process, to its process side channel: the loop's health, and which of its cards still
run. A stale or silent loop, twice, kills the process (all its cards die); a card the
process reports as not running is dead at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("twinnet.liveness")

#: Seconds between two rounds of checks. Each round is one side-channel request per card,
#: paid by the run process and the cards: on 3DT 2x4x2 (32 cards, 2 cores) the demo's
#: injection had 158-242 late sends of 992 at 0.1 s, 14-54 at 0.3 s, 0-20 without checks.
CHECK_INTERVAL_S = 0.3
ANSWER_TIMEOUT_S = 0.25
STALE_BEAT_S = 0.75
MAX_PARALLEL_CHECKS = 32


def loop_healthy(answer: dict[str, Any]) -> bool:
    """Whether a health answer says the forwarding loop runs and beat within STALE_BEAT_S."""
    beat = answer.get("beat_age_s")
    return bool(answer.get("ok") and answer.get("alive")) and beat is not None and beat <= STALE_BEAT_S


def data_plane_healthy(card: Any, timeout: float = ANSWER_TIMEOUT_S) -> bool:
    """Whether the card's side channel says its data plane runs and beat recently (False on no answer)."""
    from p4switch.daemon.side_channel import request

    try:
        answer = request(card.control_target, {"cmd": "health"}, timeout=timeout)
    except (OSError, ValueError):
        return False
    return loop_healthy(answer)


@dataclass
class ProcessHealth:
    """A shared switch process's answer: whether its loop runs, and which of its cards do not."""

    loop_ok: bool
    dead_cards: set[str] = field(default_factory=set)


def process_healthy(group: Any, timeout: float = ANSWER_TIMEOUT_S) -> ProcessHealth:
    """Ask a shared switch process for its loop's and its cards' health (loop not ok on no answer)."""
    try:
        answer = group.health(timeout)
    except (OSError, ValueError):
        return ProcessHealth(False)
    cards = answer.get("cards") or {}
    dead = {
        card.name
        for card in group.cards
        if not (cards.get(str(card.device_id)) or {}).get("alive", False)
    }
    return ProcessHealth(loop_healthy(answer), dead)


class DataPlaneWatch:
    """Background checks of the data planes of a network's embedded cards; see the module doc.

    ``deaths``: card name -> seconds after ``started`` (monotonic) when it was declared dead.
    """

    def __init__(
        self,
        network: Any,
        started: float,
        healthy: Callable[[Any], bool] = data_plane_healthy,
        process_health: Callable[[Any], ProcessHealth] = process_healthy,
    ) -> None:
        self.network = network
        self.started = started
        self.healthy = healthy
        self.process_health = process_health
        self.deaths: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="dataplane-watch", daemon=True)
        self._enabled = network.switch_class.target_name == "embedded"

    def __enter__(self) -> DataPlaneWatch:
        if self._enabled:
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        with ThreadPoolExecutor(MAX_PARALLEL_CHECKS, thread_name_prefix="dataplane-check") as pool:
            while not self._stop.wait(CHECK_INTERVAL_S):
                try:
                    self.check_once(pool)
                except Exception as error:  # a failed check must never end the run; say so and go on
                    log.warning("data plane check failed: %s", error)

    def check_once(self, pool: ThreadPoolExecutor) -> list[str]:
        """Check every live card (a failing one twice); return those found dead (killed if still running)."""
        live = {name: card for name, card in self.network.cards.items() if card.is_alive()}
        alone = {name: card for name, card in live.items() if getattr(card, "group", None) is None}
        groups = {
            id(card.group): card.group for card in live.values() if getattr(card, "group", None) is not None
        }
        dead = self._check_cards(pool, alone)
        if groups:
            dead += self._check_processes(pool, list(groups.values()))
        return dead

    def _died(self, name: str) -> None:
        self.deaths.setdefault(name, round(time.monotonic() - self.started, 3))

    def _check_cards(self, pool: ThreadPoolExecutor, cards: dict[str, Any]) -> list[str]:
        """Cards with a process of their own: one health request each."""
        suspects = [
            name for name, ok in zip(cards, pool.map(self.healthy, cards.values()), strict=True) if not ok
        ]
        if not suspects:
            return []
        confirmed = [
            name
            for name, ok in zip(suspects, pool.map(self.healthy, [cards[n] for n in suspects]), strict=True)
            if not ok
        ]
        for name in confirmed:
            if not cards[name].is_alive():  # exited meanwhile: the process check reports it
                continue
            log.warning("card %s: its data plane stopped answering; killing its switch", name)
            cards[name].kill()
            self._died(name)
        return confirmed

    def _check_processes(self, pool: ThreadPoolExecutor, groups: list[Any]) -> list[str]:
        """Shared processes: one request each; a failing loop twice kills the process and all its cards."""
        answers = list(pool.map(self.process_health, groups))
        suspects = [group for group, answer in zip(groups, answers, strict=True) if not answer.loop_ok]
        again = dict(zip(map(id, suspects), pool.map(self.process_health, suspects), strict=True))
        dead: list[str] = []
        for group, answer in zip(groups, answers, strict=True):
            live = [card for card in group.cards if card.is_alive()]
            if id(group) in again and not again[id(group)].loop_ok:
                if not group.is_alive():  # exited meanwhile: the process check reports it
                    continue
                log.warning("switch process %s: its loop stopped answering; killing it", group.name)
                group.process.kill()
                group.process.wait()
                for card in live:
                    self._died(card.name)
                    dead.append(card.name)
                continue
            for card in live:
                if card.name in answer.dead_cards:  # the process says the card no longer runs
                    log.warning("card %s: its switch process reports it stopped", card.name)
                    card.killed = True
                    self._died(card.name)
                    dead.append(card.name)
        return dead
