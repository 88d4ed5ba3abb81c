"""Workloads as the papers define them: messages of several packets at an offered load per host.

Every host generates messages (Bernoulli: at most one per link time, with
probability ``load / mean size``; Poisson: exponential gaps of the same mean), each
of a size drawn from :class:`MessageSizes` (the thesis: 70% of 2 packets, 30% of 8)
and one destination (uniform, Zipf, or any pattern of
:mod:`controller.analysis.traffic`). A message's packets leave the host one per
link time behind the packets already waiting, so the host link's rate is kept
by the injector as the cards' queues keep the other links'. The offered load is
in packets per PE per link time (a fraction of the link rate), the papers' unit.

The result is a :class:`~emulation.traffic.Schedule` (what the injector sends)
and each packet's message, creation time, and whether it falls in the warm-up.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from controller.analysis.traffic import Traffic
from emulation.traffic import Schedule, SourceFlows
from emulation.workload_options import PROCESSES, THESIS_SIZES
from topologies.errors import TwinnetError


class WorkloadError(TwinnetError, ValueError):
    """A workload option is out of range or malformed."""


@dataclass(frozen=True)
class MessageSizes:
    """Message sizes in packets and their probabilities."""

    sizes: tuple[int, ...]
    probabilities: tuple[float, ...]

    @classmethod
    def parse(cls, text: str) -> MessageSizes:
        """``"2:0.7,8:0.3"`` (size:probability, probabilities summing to 1) or one size, ``"1"``."""
        sizes, weights = [], []
        for part in text.split(","):
            size, _, weight = part.strip().partition(":")
            try:
                sizes.append(int(size))
                weights.append(float(weight) if weight else 1.0)
            except ValueError:
                raise WorkloadError(
                    f"message sizes are SIZE:PROBABILITY,... (e.g. {THESIS_SIZES}), got {text!r}"
                ) from None
        if any(size < 1 for size in sizes) or any(not weight > 0 for weight in weights):
            raise WorkloadError(f"message sizes must be >= 1 packet with positive probabilities: {text!r}")
        if not math.isclose(sum(weights), 1.0, abs_tol=1e-6):
            raise WorkloadError(f"message size probabilities must sum to 1, got {sum(weights):g} in {text!r}")
        return cls(tuple(sizes), tuple(weights))

    @property
    def mean(self) -> float:
        return float(np.dot(self.sizes, self.probabilities))

    def sample(self, rng: np.random.Generator, count: int) -> np.ndarray:
        return rng.choice(np.asarray(self.sizes), size=count, p=np.asarray(self.probabilities))


def zipf_probabilities(num_pes: int, src: int, exponent: float, rank_of: np.ndarray) -> np.ndarray:
    """P(destination = d) for source `src`: proportional to 1 / rank(d)^exponent, the source excluded.

    ``rank_of[d]`` is PE d's popularity rank (1 = most popular), one ranking for all sources.
    """
    weights = 1.0 / rank_of.astype(np.float64) ** exponent
    weights[src] = 0.0
    return weights / weights.sum()


def zipf_traffic(num_pes: int, exponent: float, seed: int) -> Traffic:
    """Zipf destinations as weighted flows (every source to every other PE), ranked as make_workload ranks."""
    rank_of = np.random.default_rng(seed).permutation(num_pes) + 1
    src = np.repeat(np.arange(num_pes), num_pes)
    dst = np.tile(np.arange(num_pes), num_pes)
    weight = np.concatenate([zipf_probabilities(num_pes, s, exponent, rank_of) for s in range(num_pes)])
    keep = weight > 0
    return Traffic("zipf", src[keep], dst[keep], weight[keep])


@dataclass(frozen=True)
class WorkloadSpec:
    """What to offer: load per PE (fraction of the link rate), process, sizes, destinations, time."""

    load: float
    duration_s: float
    link_rate_pps: float
    process: str = "bernoulli"
    sizes: MessageSizes = MessageSizes.parse(THESIS_SIZES)
    destinations: str = "uniform"
    zipf_exponent: float = 1.0
    warmup_s: float = 0.0
    seed: int = 0

    def check(self) -> None:
        if not self.load > 0 or not math.isfinite(self.load):
            raise WorkloadError(f"offered load must be a positive fraction of the link rate, got {self.load}")
        if not self.duration_s > 0:
            raise WorkloadError(f"duration must be positive, got {self.duration_s}")
        if not self.link_rate_pps > 0:
            raise WorkloadError(f"link rate must be positive, got {self.link_rate_pps}")
        if self.process not in PROCESSES:
            raise WorkloadError(
                f"injection process must be one of {', '.join(PROCESSES)}, got {self.process!r}"
            )
        if not 0 <= self.warmup_s < self.duration_s:
            raise WorkloadError(f"warm-up must be 0 <= warm-up < duration, got {self.warmup_s}")
        if self.destinations == "zipf" and not self.zipf_exponent >= 0:
            raise WorkloadError(f"Zipf exponent must be >= 0, got {self.zipf_exponent}")


@dataclass
class Workload:
    """A schedule and, per packet, its message, the message's creation time (s) and size."""

    spec: WorkloadSpec
    schedule: Schedule
    message: np.ndarray
    created: np.ndarray
    message_size: np.ndarray

    @property
    def measured(self) -> np.ndarray:
        """Per packet: whether its message was created after the warm-up (counts in the statistics)."""
        return self.created >= self.spec.warmup_s


def message_times(spec: WorkloadSpec, rng: np.random.Generator) -> np.ndarray:
    """Creation times (s) of one host's messages in [0, duration)."""
    link_time = 1.0 / spec.link_rate_pps
    per_slot = spec.load / spec.sizes.mean  # messages per link time
    if spec.process == "bernoulli":
        if per_slot > 1:
            raise WorkloadError(
                f"Bernoulli injection makes at most one message per link time: load {spec.load:g} with "
                f"mean size {spec.sizes.mean:g} asks for {per_slot:g}; use --process poisson"
            )
        slots = int(spec.duration_s * spec.link_rate_pps)
        expected = per_slot * slots
        # slots between successes of a Bernoulli trial per slot are geometric: drawn directly
        gaps = rng.geometric(per_slot, size=int(expected + 10 * math.sqrt(expected) + 20))
        chosen = np.cumsum(gaps) - 1
        return chosen[chosen < slots] * link_time
    expected = per_slot * spec.duration_s * spec.link_rate_pps
    gaps = rng.exponential(link_time / per_slot, size=int(expected + 10 * math.sqrt(expected) + 20))
    times = np.cumsum(gaps)
    return times[times < spec.duration_s]


def packet_times(created: np.ndarray, sizes: np.ndarray, link_time: float) -> np.ndarray:
    """Send times of the packets of messages created at `created` with `sizes`: one per link time, FIFO."""
    total = int(sizes.sum())
    out = np.empty(total)
    free = -math.inf
    index = 0
    for at, size in zip(created.tolist(), sizes.tolist(), strict=True):
        start = max(at, free)
        out[index : index + size] = start + np.arange(size) * link_time
        index += size
        free = start + size * link_time
    return out


def make_workload(spec: WorkloadSpec, num_pes: int, traffic: Traffic | None = None) -> Workload:
    """The packets every PE sends (see the module doc); `traffic` gives the pattern's flows."""
    spec.check()
    if spec.destinations not in ("uniform", "zipf") and traffic is None:
        raise WorkloadError(f"destinations {spec.destinations!r} need the pattern's flows")
    rng = np.random.default_rng(spec.seed)
    rank_of = rng.permutation(num_pes) + 1
    link_time = 1.0 / spec.link_rate_pps
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("src", "dst", "at", "message", "created", "size")}
    sources = range(num_pes) if traffic is None else np.unique(traffic.src).tolist()
    flows = None if traffic is None else SourceFlows(traffic)
    next_message = 0
    for src in sources:
        created = message_times(spec, rng)
        count = created.size
        if count == 0:
            continue
        sizes = spec.sizes.sample(rng, count)
        if spec.destinations == "uniform":
            others = np.delete(np.arange(num_pes), src)
            dsts = rng.choice(others, size=count)
        elif spec.destinations == "zipf":
            dsts = rng.choice(
                num_pes, size=count, p=zipf_probabilities(num_pes, src, spec.zipf_exponent, rank_of)
            )
        else:
            dsts = flows.destinations(src, count, rng)
        parts["src"].append(np.full(int(sizes.sum()), src, dtype=np.int64))
        parts["dst"].append(np.repeat(dsts, sizes))
        parts["at"].append(packet_times(created, sizes, link_time))
        parts["message"].append(np.repeat(np.arange(next_message, next_message + count), sizes))
        parts["created"].append(np.repeat(created, sizes))
        parts["size"].append(np.repeat(sizes, sizes))
        next_message += count
    if not parts["src"]:
        raise WorkloadError(f"offered load {spec.load:g} over {spec.duration_s:g} s makes no message at all")
    joined = {key: np.concatenate(value) for key, value in parts.items()}
    order = np.argsort(joined["at"], kind="stable")
    schedule = Schedule(joined["src"][order], joined["dst"][order], joined["at"][order])
    return Workload(spec, schedule, joined["message"][order], joined["created"][order], joined["size"][order])
