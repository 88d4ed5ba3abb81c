"""Digests of one pipeline: the data ``digest()`` learns, batched into lists for the control plane.

As the P4Runtime specification says of DigestEntry: a digest without a configuration is
not sent; data is buffered and sent as one list when ``max_list_size`` samples are
buffered or ``max_timeout_ns`` has passed since the first of them (a list per sample when
the timeout is 0 or the size 1; size 0 is no limit). Once sent, data equal to a sample of
a list not yet acknowledged is dropped (also data equal to one already buffered): the
sample is released by the list's DigestListAck or, without one, ``ack_timeout_ns`` after
the list was sent; with ``ack_timeout_ns`` 0 nothing is deduplicated (PI, which
simple_switch_grpc runs, keeps no cache then). A list with no primary controller to take it
is dropped unsent.

Samples are tuples of the digest's flattened values (p4switch.compiler.codegen.digests).
``learn`` runs on the data plane; ``configure``, ``ack`` and the timer on other threads:
one lock guards the state, and the sink (which only queues a message) is called under it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from p4switch.errors import EntryError

#: (digest name, list id, samples, timestamp in ns since the epoch) -> whether it was delivered
Sink = Callable[[str, int, list[tuple], int], bool]


@dataclass(frozen=True)
class DigestConfig:
    """P4Runtime's DigestEntry.Config."""

    max_timeout_ns: int
    max_list_size: int
    ack_timeout_ns: int


@dataclass
class _Digest:
    """State of one configured digest."""

    config: DigestConfig
    buffer: list[tuple] = field(default_factory=list)
    buffered: set[tuple] = field(default_factory=set)
    first_ns: int = 0
    next_list_id: int = 1
    #: list id -> (ack deadline, samples) of the lists sent and not acknowledged
    unacked: dict[int, tuple[int, list[tuple]]] = field(default_factory=dict)
    outstanding: set[tuple] = field(default_factory=set)  # samples of unacknowledged lists


class DigestEngine:
    """Configured digests, their buffers and unacknowledged lists; ``sink`` sends a list."""

    def __init__(self, names: list[str], clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.names = set(names)
        self.sink: Sink | None = None
        self.clock = clock
        self._digests: dict[str, _Digest] = {}
        self._next_list_ids: dict[str, int] = {}  # of deleted digests: list ids go on, as in PI
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._timer: threading.Thread | None = None
        self._closed = False
        self.learned = 0  # digest calls seen (configured or not)
        self.suppressed = 0  # samples dropped as duplicates of buffered or unacknowledged data

    # ----- data plane ------------------------------------------------------------------------
    def learn(self, name: str, sample: tuple) -> None:
        """One ``digest()`` of a packet, at the end of its ingress."""
        self.learned += 1
        digest = self._digests.get(name)
        if digest is None:
            return
        with self._lock:
            deduplicate = digest.config.ack_timeout_ns > 0  # as PI (simple_switch_grpc): 0 keeps no cache
            if deduplicate and (sample in digest.buffered or sample in digest.outstanding):
                self.suppressed += 1
                return
            if not digest.buffer:
                digest.first_ns = self.clock()
                self._wake.notify()
            digest.buffer.append(sample)
            digest.buffered.add(sample)
            config = digest.config
            full = config.max_list_size and len(digest.buffer) >= config.max_list_size
            if full or config.max_timeout_ns <= 0:
                self._send(name, digest, self.clock())

    # ----- control plane ---------------------------------------------------------------------
    def _check(self, name: str) -> None:
        if name not in self.names:
            raise EntryError(f"unknown digest {name!r} (digests: {sorted(self.names)})")

    def configure(self, name: str, config: DigestConfig | None) -> None:
        """Set (or with None, remove) a digest's configuration; removing drops its buffered data."""
        self._check(name)
        if config is not None and min(config.max_timeout_ns, config.max_list_size, config.ack_timeout_ns) < 0:
            raise EntryError(f"digest {name}: negative values in {config}")
        with self._lock:
            if config is None:
                digest = self._digests.pop(name, None)
                if digest is not None:
                    self._next_list_ids[name] = digest.next_list_id
                return
            digest = self._digests.get(name)
            if digest is None:
                self._digests[name] = _Digest(config, next_list_id=self._next_list_ids.pop(name, 1))
            else:
                digest.config = config
            self._start_timer()
            self._wake.notify()

    def config(self, name: str) -> DigestConfig | None:
        """A digest's configuration (None: not configured, nothing is sent)."""
        self._check(name)
        digest = self._digests.get(name)
        return None if digest is None else digest.config

    def ack(self, name: str, list_id: int) -> bool:
        """A DigestListAck: its samples may be sent again. False for a list not waiting for one."""
        with self._lock:
            digest = self._digests.get(name)
            if digest is None or list_id not in digest.unacked:
                return False
            _, samples = digest.unacked.pop(list_id)
            digest.outstanding.difference_update(samples)
            return True

    def poll(self, now_ns: int | None = None) -> int:
        """Send the lists whose max_timeout_ns has passed and release lists past ack_timeout_ns;
        the time (clock ns) of the next thing to do, or 0 when nothing waits."""
        with self._lock:
            return self._poll(self.clock() if now_ns is None else now_ns)

    def close(self) -> None:
        """The pipeline is replaced: stop the timer, send nothing more."""
        with self._lock:
            self._closed = True
            self._digests.clear()
            self._wake.notify()

    # ----- internals (lock held) ---------------------------------------------------------------
    def _poll(self, now: int) -> int:
        next_time = 0
        for name, digest in self._digests.items():
            if digest.buffer:
                due = digest.first_ns + digest.config.max_timeout_ns
                if now >= due:
                    self._send(name, digest, now)
                else:
                    next_time = due if not next_time else min(next_time, due)
            for list_id, (deadline, samples) in list(digest.unacked.items()):
                if now >= deadline:
                    del digest.unacked[list_id]
                    digest.outstanding.difference_update(samples)
                else:
                    next_time = deadline if not next_time else min(next_time, deadline)
        return next_time

    def _send(self, name: str, digest: _Digest, now: int) -> None:
        samples = digest.buffer
        digest.buffer = []
        digest.buffered = set()
        sink = self.sink
        if sink is None or not sink(name, digest.next_list_id, samples, time.time_ns()):
            return
        if digest.config.ack_timeout_ns > 0:
            digest.unacked[digest.next_list_id] = (now + digest.config.ack_timeout_ns, samples)
            digest.outstanding.update(samples)
        digest.next_list_id += 1

    def _start_timer(self) -> None:
        if self._timer is None and not self._closed:
            self._timer = threading.Thread(target=self._run_timer, name="p4-digests", daemon=True)
            self._timer.start()

    def _run_timer(self) -> None:
        with self._lock:
            while not self._closed:
                next_time = self._poll(self.clock())
                timeout = None if not next_time else max(next_time - self.clock(), 0) / 1e9
                self._wake.wait(timeout)
