"""Per-egress-port strict-priority queues with tail drop and an optional packet rate.

The ordering follows bmv2's ``simple_switch --priority-queues N``: a packet whose
``standard_metadata.priority`` is ``p`` goes to queue ``N - 1 - p`` and queue 0 is
served first, so the *highest* priority value is sent first. A priority ``>= N`` is
dropped (bmv2 logs "Priority out of range, dropping packet").

Depths are bounded per queue (bmv2's default is 64 packets per queue); a full queue
drops the arriving packet (tail drop), counted per queue. The optional rate (packets
per second, shared by all queues of the port, like a link's bandwidth) is a token
bucket with a small burst so that a late wake-up does not lose rate.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

DEFAULT_QUEUE_DEPTH = 64
MAX_PRIORITY_QUEUES = 8
#: the deepest queue a port accepts, in packets (a bound on what a full queue holds in memory)
MAX_QUEUE_DEPTH = 1_000_000
RATE_BURST_PACKETS = 4
#: the rates a port accepts, in packets per second: one packet every 1,000 s up to a billion a second
MIN_RATE_PPS = 1e-3
MAX_RATE_PPS = 1e9


def check_rate(rate_pps: object) -> float | None:
    """A queue rate as given (pps; None or 0: unlimited) -> the rate, or ValueError naming the problem.

    A tiny rate would put the next departure years away (the poll timeout overflows);
    a negative, NaN or infinite rate has no meaning: all are refused, not clamped.
    """
    if rate_pps is None:
        return None
    if isinstance(rate_pps, bool) or not isinstance(rate_pps, (int, float)):
        raise ValueError(f"queue rate must be a number of packets per second, not {rate_pps!r}")
    rate = float(rate_pps)
    if rate == 0:
        return None
    if not math.isfinite(rate) or not MIN_RATE_PPS <= rate <= MAX_RATE_PPS:
        raise ValueError(
            f"queue rate must be {MIN_RATE_PPS:g}..{MAX_RATE_PPS:g} packets per second "
            f"(0 or null: unlimited), not {rate_pps!r}"
        )
    return rate


@dataclass
class QueueCounters:
    """Counters of one priority queue (indexed by priority value, not queue number)."""

    enqueued: int = 0
    dequeued: int = 0
    tail_drops: int = 0


@dataclass
class QueuedPacket:
    """What waits in a queue: the pipeline's ingress result and its enqueue facts."""

    state: Any
    enq_qdepth: int
    enq_time_us: int
    ingress: int = -1
    arrival_class: int = 0


@dataclass
class PortQueues:
    """The priority queues of one egress port.

    ``queues[p]`` holds packets of priority ``p``; the service order is from the
    highest ``p`` down, which is bmv2's order (priority ``p`` lives in its queue
    ``N - 1 - p`` and bmv2 serves queue 0 first).
    """

    port: int
    priority_count: int = 1
    depth: int = DEFAULT_QUEUE_DEPTH
    rate_pps: float | None = None
    queues: list[deque[QueuedPacket]] = field(default_factory=list)
    counters: list[QueueCounters] = field(default_factory=list)
    backlog: int = 0
    out_of_range_drops: int = 0
    next_send_time: float = 0.0

    def __post_init__(self) -> None:
        if not 1 <= self.priority_count <= MAX_PRIORITY_QUEUES:
            raise ValueError(
                f"priority queue count must be 1..{MAX_PRIORITY_QUEUES}, not {self.priority_count}"
            )
        self.queues = [deque() for _ in range(self.priority_count)]
        self.counters = [QueueCounters() for _ in range(self.priority_count)]

    def enqueue(
        self, priority: int, state: Any, now_us: int, ingress: int = -1, arrival_class: int = 0
    ) -> bool:
        """Queue one packet; False (and counted) when dropped for a full queue or bad priority.

        ``ingress`` and ``arrival_class`` are kept for lossless accounting (p4switch.daemon.pfc).
        """
        if priority >= self.priority_count or priority < 0:
            self.out_of_range_drops += 1
            return False
        queue = self.queues[priority]
        counters = self.counters[priority]
        if len(queue) >= self.depth:
            counters.tail_drops += 1
            return False
        queue.append(QueuedPacket(state, self.backlog, now_us, ingress, arrival_class))
        self.backlog += 1
        counters.enqueued += 1
        return True

    def dequeue(self, paused: int = 0) -> QueuedPacket | None:
        """Take the next packet in strict priority order (highest priority value first).

        ``paused`` is a bit mask of priorities not to serve (PFC); None if nothing may go.
        """
        if not self.backlog:
            return None
        for priority in range(self.priority_count - 1, -1, -1):
            queue = self.queues[priority]
            if queue and not paused >> priority & 1:
                self.backlog -= 1
                self.counters[priority].dequeued += 1
                return queue.popleft()
        return None

    def sendable(self, paused: int) -> bool:
        """Whether some queue with packets is not paused (``paused``: bit mask of priorities)."""
        return any(queue and not paused >> priority & 1 for priority, queue in enumerate(self.queues))

    def may_send(self, now: float) -> bool:
        """Whether the rate limit lets one packet go at time ``now`` (seconds, monotonic)."""
        return self.rate_pps is None or now >= self.next_send_time

    def charge_one(self, now: float) -> None:
        """Account one sent packet against the rate limit."""
        rate = self.rate_pps
        if rate is None:
            return
        interval = 1.0 / rate
        self.next_send_time = max(self.next_send_time, now - interval * (RATE_BURST_PACKETS - 1)) + interval

    def wait_time(self, now: float) -> float | None:
        """Seconds until this port may send its backlog, None if it has no backlog."""
        if not self.backlog:
            return None
        if self.rate_pps is None:
            return 0.0
        return max(0.0, self.next_send_time - now)

    def set_rate(self, rate_pps: float | None) -> None:
        """Set the port's rate in packets per second (None or 0: unlimited; see ``check_rate``)."""
        self.rate_pps = check_rate(rate_pps)
        self.next_send_time = 0.0

    def set_depth(self, depth: int) -> None:
        """Set the depth of every queue of the port, in packets (queued packets stay)."""
        if not 1 <= depth <= MAX_QUEUE_DEPTH:
            raise ValueError(f"queue depth must be 1..{MAX_QUEUE_DEPTH}, not {depth}")
        self.depth = depth

    def snapshot(self) -> dict[str, Any]:
        """Counters and state as a JSON-ready dict."""
        return {
            "port": self.port,
            "rate_pps": self.rate_pps,
            "depth": self.depth,
            "backlog": self.backlog,
            "priority_out_of_range_drops": self.out_of_range_drops,
            "queues": [
                {
                    "priority": priority,
                    "length": len(self.queues[priority]),
                    "enqueued": counters.enqueued,
                    "dequeued": counters.dequeued,
                    "tail_drops": counters.tail_drops,
                }
                for priority, counters in enumerate(self.counters)
            ],
        }
