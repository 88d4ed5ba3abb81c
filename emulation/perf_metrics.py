"""A load point's figures in link-normalised units, as the papers report them.

Accepted traffic is packets delivered per PE per link time (a fraction of the
link rate), counted by receive time over the measurement window (the run after
its warm-up); latency is one-way, send to receive, in microseconds and in
packet times (link times), over packets of messages created after the warm-up;
message latency runs from a message's creation to its last packet's arrival.
Queue depths are the depths the cards recorded in the trace, per VC.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

from emulation.measure import ProbeResult
from emulation.workload import Workload

#: The unit and scope of every figure of :func:`point_metrics` (sweep.json and a --load run's report).
POINT_UNITS = {
    "offered": "packets per PE per link time (fraction of the link rate), in the window",
    "accepted": "packets delivered per PE per link time, by receive time, in the window",
    "latency_packet_times": "one-way send-to-receive latency in link times (1 / link rate)",
    "latency_us": "the same in microseconds",
    "message_latency_packet_times": "from a message's creation to its last packet's arrival, in link times",
    "queue_depth_by_vc": "packets queued at each card's egress port when a measured packet was enqueued",
    "window": "from the warm-up to the end of injection",
}


def _summary(values: np.ndarray, scale: float = 1.0) -> dict[str, float | None]:
    if not values.size:
        return {"mean": None, "p50": None, "p99": None, "max": None}
    data = values.astype(np.float64) * scale
    return {
        "mean": round(float(data.mean()), 3),
        "p50": round(float(np.percentile(data, 50)), 3),
        "p99": round(float(np.percentile(data, 99)), 3),
        "max": round(float(data.max()), 3),
    }


def injection_start_us(results: Sequence[ProbeResult], workload: Workload) -> int | None:
    """When the schedule's time 0 was, on the probes' clock (from the earliest send and its due time)."""
    first = workload.schedule.first_id
    starts = [
        r.send_us - int(workload.schedule.at[r.probe_id - first] * 1e6) for r in results if r.send_us >= 0
    ]
    return min(starts) if starts else None


def point_metrics(
    results: Sequence[ProbeResult], workload: Workload, num_pes: int, start_us: int | None = None
) -> dict[str, Any]:
    """Offered and accepted traffic, latency, queue depths per VC and losses of one run of `workload`."""
    spec, schedule = workload.spec, workload.schedule
    link_rate = spec.link_rate_pps
    window_s = spec.duration_s - spec.warmup_s
    start_us = injection_start_us(results, workload) if start_us is None else start_us
    first = schedule.first_id
    measured = workload.measured
    offered_packets = int(np.count_nonzero((schedule.at >= spec.warmup_s) & (schedule.at < spec.duration_s)))
    latencies, delivered_in_window = [], 0
    last_arrival: dict[int, int] = {}
    depths: dict[int, list[int]] = defaultdict(list)
    sent = lost = 0
    for result in results:
        index = result.probe_id - first
        sent += 1
        if result.arrival is None:
            lost += measured[index]
            continue
        receive_us = result.arrival.receive_us
        if start_us is not None and 0 <= (receive_us - start_us) / 1e6 - spec.warmup_s < window_s:
            delivered_in_window += 1
        if not measured[index]:
            continue
        latencies.append(receive_us - result.send_us)
        message = int(workload.message[index])
        last_arrival[message] = max(last_arrival.get(message, 0), receive_us)
        for hop in result.arrival.hops:
            depths[hop.vc].append(hop.qdepth)
    latency = np.asarray(latencies, dtype=np.int64)
    ids, first_index = np.unique(workload.message, return_index=True)
    created_us = dict(
        zip(ids.tolist(), (workload.created[first_index] * 1e6).astype(np.int64).tolist(), strict=True)
    )
    message_latency = np.asarray(
        [arrival - start_us - created_us[m] for m, arrival in last_arrival.items()]
        if start_us is not None
        else [],
        dtype=np.int64,
    )
    per_pe_time = window_s * num_pes * link_rate
    return {
        "offered": round(offered_packets / per_pe_time, 5),
        "offered_asked": spec.load,
        "accepted": round(delivered_in_window / per_pe_time, 5),
        "latency_us": _summary(latency),
        "latency_packet_times": _summary(latency, link_rate / 1e6),
        "message_latency_packet_times": _summary(message_latency, link_rate / 1e6),
        "queue_depth_by_vc": {
            str(vc): {"mean": round(float(np.mean(d)), 3), "max": int(np.max(d))}
            for vc, d in sorted(depths.items())
        },
        "sent": sent,
        "lost_measured": int(lost),
        "window_s": window_s,
    }
