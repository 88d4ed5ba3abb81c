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
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

log = logging.getLogger("twinnet.liveness")

#: Seconds between two rounds of checks. Each round is one side-channel request per card,
#: paid by the run process and the cards: on 3DT 2x4x2 (32 cards, 2 cores) the demo's
#: injection had 158-242 late sends of 992 at 0.1 s, 14-54 at 0.3 s, 0-20 without checks.
CHECK_INTERVAL_S = 0.3
ANSWER_TIMEOUT_S = 0.25
STALE_BEAT_S = 0.75
MAX_PARALLEL_CHECKS = 32


def data_plane_healthy(card: Any, timeout: float = ANSWER_TIMEOUT_S) -> bool:
    """Whether the card's side channel says its data plane runs and beat recently (False on no answer)."""
    from p4switch.daemon.side_channel import request

    try:
        answer = request(card.control_target, {"cmd": "health"}, timeout=timeout)
    except (OSError, ValueError):
        return False
    beat = answer.get("beat_age_s")
    return bool(answer.get("ok") and answer.get("alive")) and beat is not None and beat <= STALE_BEAT_S


class DataPlaneWatch:
    """Background checks of the data planes of a network's embedded cards; see the module doc.

    ``deaths``: card name -> seconds after ``started`` (monotonic) when it was declared dead.
    """

    def __init__(
        self, network: Any, started: float, healthy: Callable[[Any], bool] = data_plane_healthy
    ) -> None:
        self.network = network
        self.started = started
        self.healthy = healthy
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
        """Check every live card (a failing one twice); kill and return those whose data plane stopped."""
        cards = {name: card for name, card in self.network.cards.items() if card.is_alive()}
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
            self.deaths.setdefault(name, round(time.monotonic() - self.started, 3))
        return confirmed
