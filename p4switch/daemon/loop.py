"""The forwarding loop: one thread over every port of every card of the process (epoll), in batches.

Each iteration waits in ``epoll`` (over all port sockets and one wake-up pipe per
process) for at most the time until the next departure any card has scheduled (the
minimum of the cards' ``_timeout_ms``), then serves each card that has something to
do: the ports that are readable, its injected frames, its queues with a backlog, its
pending PFC timers (``DataPlane.serve``, with that card's pipeline lock held for its
batch). A card without readable ports is served only while it is *pending* (queued
frames, injected frames, PFC pauses): an idle card costs the loop nothing.

A single-card switch is this loop with one card. Changes to the set of ports (a card
killed) are run by the loop thread itself (``call``), so epoll and the sockets are
only ever touched from one thread.
"""

from __future__ import annotations

import logging
import os
import select
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from p4switch.daemon.dataplane import DataPlane
    from p4switch.daemon.ports import Port

log = logging.getLogger("twinnet.switch.dataplane")

#: the longest the loop sleeps in ``epoll``: a queue's next departure can be far away, and the
#: loop's heartbeat (``last_beat``) should stay fresh while idle
MAX_POLL_MS = 250
#: the loop sleeps this long after a batch when a P4Runtime call waits for a card's pipeline lock
CONTROL_YIELD_SECONDS = 0.0002
#: how long ``call`` waits for the loop to run a change (the loop wakes within MAX_POLL_MS at worst)
CALL_TIMEOUT_SECONDS = 5.0


class ForwardingLoop:
    """The thread that forwards for a set of cards (``DataPlane``); ``start()`` then ``stop()``."""

    def __init__(self, on_failure: Callable[[str], None] | None = None) -> None:
        self.on_failure = on_failure
        #: why the loop ended, if it ended other than by ``stop()``
        self.failure: str | None = None
        #: when the loop last made progress: the start of an iteration, and the end of each card's batch
        self.last_beat = time.monotonic()
        self.cards: list[DataPlane] = []
        #: cards with work besides readable ports (queued or injected frames, PFC timers); the
        #: loop serves them every iteration, other threads only add to it
        self.pending: set[DataPlane] = set()
        self._by_fd: dict[int, tuple[DataPlane, Port]] = {}
        self._calls: deque[tuple[Callable[[], None], threading.Event]] = deque()
        self._epoll: select.epoll | None = None
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)

    # ----- cards -------------------------------------------------------------------------------
    def add(self, card: DataPlane) -> None:
        """Forward for ``card`` (its ports open); before ``start()``, or from the loop thread."""
        self.cards.append(card)
        card.loop = self
        for port in card.ports.values():
            if port.sock is None:
                continue
            fd = port.sock.fileno()
            self._by_fd[fd] = (card, port)
            if self._epoll is not None:
                self._epoll.register(fd, select.EPOLLIN)

    def remove(self, card: DataPlane) -> None:
        """Stop forwarding for ``card`` and close its ports (run by the loop thread when it runs)."""
        self.call(lambda: self._remove(card))

    def _remove(self, card: DataPlane) -> None:
        for fd, (owner, _) in list(self._by_fd.items()):
            if owner is card:
                del self._by_fd[fd]
                if self._epoll is not None:
                    try:
                        self._epoll.unregister(fd)
                    except OSError:
                        pass
        self.pending.discard(card)
        if card in self.cards:
            self.cards.remove(card)
        card.discard()

    def call(self, function: Callable[[], None]) -> None:
        """Run ``function`` in the loop thread between iterations and wait for it (at once if none runs)."""
        if not self.alive():
            function()
            return
        done = threading.Event()
        self._calls.append((function, done))
        self.wake()
        if not done.wait(CALL_TIMEOUT_SECONDS) and not self.alive():
            function()  # the loop ended meanwhile: nobody else touches the sockets now

    def _run_calls(self) -> None:
        while self._calls:
            function, done = self._calls.popleft()
            try:
                function()
            finally:
                done.set()

    # ----- thread ------------------------------------------------------------------------------
    def start(self) -> None:
        epoll = select.epoll()
        epoll.register(self._wake_read, select.EPOLLIN)
        for fd in self._by_fd:
            epoll.register(fd, select.EPOLLIN)
        self._epoll = epoll
        self._thread = threading.Thread(target=self._run, name="dataplane", daemon=True)
        self._thread.start()

    def started(self) -> bool:
        return self._thread is not None

    def alive(self) -> bool:
        """Whether the loop thread runs (started, not stopped, not failed)."""
        thread = self._thread
        return thread is not None and thread.is_alive() and self.failure is None

    def beat_age(self) -> float | None:
        """Seconds since the loop last made progress (None before it started)."""
        return None if self._thread is None else round(time.monotonic() - self.last_beat, 3)

    def wake(self) -> None:
        """Make the loop re-read rates, injected frames and calls now."""
        try:
            os.write(self._wake_write, b"\0")
        except OSError:
            pass

    def stop(self) -> None:
        self._stopping = True
        self.wake()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for fd in (self._wake_read, self._wake_write):
            try:
                os.close(fd)
            except OSError:
                pass
        if self._epoll is not None:
            self._epoll.close()

    def _run(self) -> None:
        """The loop; any exception ends it *loudly*: recorded, logged, reported to ``on_failure``.

        Per-packet errors are counted where they happen (``DataPlane._packet_error``); what
        reaches here is a failure of the loop itself, after which nothing would be forwarded.
        """
        try:
            self._loop()
        except BaseException as error:
            self.failure = f"{type(error).__name__}: {error}"
            log.critical("data plane stopped: %s", self.failure, exc_info=True)
            if self.on_failure is not None:
                self.on_failure(self.failure)

    def _timeout_ms(self) -> int:
        """Milliseconds until the earliest departure or PFC deadline of a pending card (<= MAX_POLL_MS)."""
        pending = self.pending
        if not pending:
            return MAX_POLL_MS
        return min(card._timeout_ms() for card in list(pending))

    def _drain_wake(self) -> None:
        try:
            while os.read(self._wake_read, 4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def _loop(self) -> None:
        epoll = self._epoll
        by_fd = self._by_fd
        pending = self.pending
        monotonic = time.monotonic
        while not self._stopping:
            self.last_beat = monotonic()
            if self._calls:
                self._run_calls()
            try:
                events = epoll.poll(self._timeout_ms() / 1000)
            except InterruptedError:
                continue
            ready: dict[DataPlane, list[Port]] = {}
            for fd, _ in events:
                entry = by_fd.get(fd)
                if entry is None:
                    self._drain_wake()
                    continue
                card, port = entry
                ports = ready.get(card)
                if ports is None:
                    ready[card] = [port]
                else:
                    ports.append(port)
            if pending:
                for card in list(pending):  # a copy: other threads add injected cards meanwhile
                    if card not in ready:
                        ready[card] = []
            control_waiting = 0
            for card, ports in ready.items():
                control_waiting |= card.serve(ports)
                self.last_beat = monotonic()  # progress: a long turn over many busy cards is not a hang
                if card.has_work():
                    pending.add(card)
                else:
                    pending.discard(card)
                    if card._injected:  # injected after has_work() looked
                        pending.add(card)
            if control_waiting:
                time.sleep(CONTROL_YIELD_SECONDS)  # let a P4Runtime call take a lock before the next batch
