"""Collective operations among all PEs (the Andujar thesis's evaluation), step by step on a running network.

A collective is a list of steps; a step is a list of messages (source, destination,
packets) that may all go at once, and a step starts when the previous one has
completely arrived (each PE waits for what it needs before it sends on):

* ``broadcast``: binomial tree from PE 0, step k: PE i < 2^k sends to i + 2^k;
* ``reduce``: the same tree backwards, towards PE 0;
* ``allgather``: recursive doubling, step k: PE i sends everything it holds
  (2^k blocks) to i XOR 2^k (PE count a power of two);
* ``all-to-all``: one step, every PE sends a block to every other PE.

:func:`run_collective` injects each step (a host's packets one per link time),
waits for its last packet, and reports each step's time, the completion time (the
moment the last message arrives, counted from the first send) and message latency.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from emulation.traffic import Schedule, TrafficEngine, endpoints_of_network
from emulation.workload import packet_times
from topologies.errors import TwinnetError

COLLECTIVES = ("broadcast", "reduce", "allgather", "all-to-all")

Message = tuple[int, int, int]  # source PE, destination PE, packets


class CollectiveError(TwinnetError, ValueError):
    """A collective that cannot be run as asked."""


def collective_steps(name: str, num_pes: int, block: int = 1) -> list[list[Message]]:
    """The steps of collective `name` among `num_pes` PEs, `block` packets per PE's share of data."""
    if num_pes < 2:
        raise CollectiveError(f"a collective needs at least 2 PEs, got {num_pes}")
    if block < 1:
        raise CollectiveError(f"a block is at least 1 packet, got {block}")
    rounds = math.ceil(math.log2(num_pes))
    if name == "broadcast":
        return [
            [(i, i + (1 << k), block) for i in range(1 << k) if i + (1 << k) < num_pes] for k in range(rounds)
        ]
    if name == "reduce":
        return [
            [(i + (1 << k), i, block) for i in range(1 << k) if i + (1 << k) < num_pes]
            for k in reversed(range(rounds))
        ]
    if name == "allgather":
        if num_pes & (num_pes - 1):
            raise CollectiveError(
                f"allgather by recursive doubling needs a power-of-two PE count, got {num_pes}"
            )
        return [[(i, i ^ (1 << k), block << k) for i in range(num_pes)] for k in range(rounds)]
    if name == "all-to-all":
        return [[(s, d, block) for s in range(num_pes) for d in range(num_pes) if s != d]]
    raise CollectiveError(f"collective must be one of {', '.join(COLLECTIVES)}, got {name!r}")


def step_schedule(messages: list[Message], link_rate_pps: float, first_id: int) -> Schedule:
    """A step's packets, all messages ready at once; each host sends one packet per link time.

    A host's messages go in the order of their destinations' distance in PE numbers
    (i+1, i+2, ...), so that in an all-to-all not every host starts with the same PE.
    """
    link_time = 1.0 / link_rate_pps
    num = 1 + max(max(s, d) for s, d, _ in messages)
    src, dst, at = [], [], []
    for source in sorted({s for s, _, _ in messages}):
        mine = sorted((m for m in messages if m[0] == source), key=lambda m: (m[1] - source) % num)
        sizes = np.array([m[2] for m in mine])
        src.append(np.full(int(sizes.sum()), source, dtype=np.int64))
        dst.append(np.repeat([m[1] for m in mine], sizes))
        at.append(packet_times(np.zeros(len(mine)), sizes, link_time))
    s, d, a = np.concatenate(src), np.concatenate(dst), np.concatenate(at)
    order = np.argsort(a, kind="stable")
    return Schedule(s[order], d[order], a[order], first_id)


def run_collective(
    network,
    name: str,
    *,
    link_rate_pps: float,
    block: int = 1,
    size: int = 64,
    step_limit_s: float = 30.0,
    say: Callable[[str], None] | None = None,
    lossless: bool = False,
) -> dict[str, Any]:
    """Run collective `name` on a network whose tables are installed and links rate-limited; its figures.

    ``lossless``: the cards run PFC (the network was built with it); the hosts then obey the
    pauses their cards send, as in a lossless run.
    """
    from emulation.measure import decode_arrival
    from emulation.traffic import HostPauses
    from p4switch.daemon.pfc import NOMINAL_FRAME_BITS

    say = say or (lambda message: None)
    steps = collective_steps(name, len(network.topology.hosts), block)
    step_times, latencies, missing = [], [], 0
    late_sends, max_late_s, sender = 0, 0.0, ""
    next_id = 1
    pauses = HostPauses(link_rate_pps * NOMINAL_FRAME_BITS, link_rate_pps) if lossless else None
    with TrafficEngine(endpoints_of_network(network), pauses) as engine:
        for number, messages in enumerate(steps):
            schedule = step_schedule(messages, link_rate_pps, next_id)
            next_id += len(schedule)
            record = engine.inject(schedule, size)
            late_sends, max_late_s = late_sends + record.late_probes, max(max_late_s, record.max_late_s)
            sender = record.sender
            engine.wait_for(record.sent, quiet_s=min(2.0, step_limit_s), limit_s=step_limit_s)
            time.sleep(0.05)
            arrivals = [decode_arrival(f.pe, f.frame, f.receive_us) for f in engine.take_received()]
            arrived = [a for a in arrivals if a is not None and schedule.first_id <= a.probe_id < next_id]
            missing += len(schedule) - len({a.probe_id for a in arrived})
            if arrived:
                step_times.append((max(a.receive_us for a in arrived) - record.started_us) / 1e6)
                latencies.extend(a.receive_us - a.send_us for a in arrived)
            say(f"{name} step {number + 1}/{len(steps)}: {len(arrived)} of {len(schedule)} packets")
    link_time_us = 1e6 / link_rate_pps
    latency = np.asarray(latencies, dtype=np.float64)
    completion = sum(step_times)
    return {
        "collective": name,
        "pes": len(network.topology.hosts),
        "block_packets": block,
        "steps": len(steps),
        "packets": sum(m[2] for step in steps for m in step),
        "missing_packets": missing,
        "step_times_s": [round(t, 6) for t in step_times],
        "completion_time_s": round(completion, 6),
        "completion_time_packet_times": round(completion * 1e6 / link_time_us, 1),
        "latency_mean_packet_times": round(float(latency.mean()) / link_time_us, 3) if latency.size else None,
        "latency_p99_packet_times": (
            round(float(np.percentile(latency, 99)) / link_time_us, 3) if latency.size else None
        ),
        # whether the emulator kept the schedule: sends later than emulation.traffic.LATE_THRESHOLD_S
        "late_sends": late_sends,
        "max_lateness_ms": round(max_late_s * 1000, 2),
        "sender": sender,
    }
