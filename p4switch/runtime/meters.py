"""v1model meters: two-rate three-colour markers (RFC 2698, colour-blind), as simple_switch runs them.

A cell has a committed and a peak bucket (rates per second, bursts, in packets or bytes
per the meter's type), full at configuration; each execution first refills them for the
time since the last one (the packet's ingress timestamp, in microseconds), then: fewer
peak tokens than the packet is RED (nothing taken); else fewer committed tokens is YELLOW
(the peak tokens taken); else GREEN (both taken). A cell that is not configured marks
every packet GREEN (as P4Runtime's default meter configuration does).
"""

from __future__ import annotations

from p4switch.errors import EntryError, PacketError

GREEN, YELLOW, RED = 0, 1, 2


def check_config(config: tuple[int, int, int, int] | None) -> None:
    """EntryError unless None or (cir, cburst, pir, pburst) with no negative value and cir <= pir."""
    if config is None:
        return
    cir, _, pir, _ = config
    if min(config) < 0:
        raise EntryError(f"meter rates and bursts must not be negative: {config}")
    if cir > pir:
        raise EntryError(f"meter committed rate {cir} above its peak rate {pir} (RFC 2698)")


class MeterCell:
    """One trTCM: its configuration (None: GREEN for all) and token buckets."""

    __slots__ = ("config", "committed", "peak", "last_us")

    def __init__(self) -> None:
        self.config: tuple[int, int, int, int] | None = None  # (cir, cburst, pir, pburst)
        self.committed = 0.0
        self.peak = 0.0
        self.last_us: int | None = None

    def configure(self, config: tuple[int, int, int, int] | None) -> None:
        """Set (cir, cburst, pir, pburst), rates per second, or None (every packet GREEN); buckets full."""
        check_config(config)
        if config is not None:
            self.committed, self.peak = float(config[1]), float(config[3])
        self.config = config
        self.last_us = None

    def execute(self, now_us: int, amount: int) -> int:
        """The colour of a packet of `amount` units (1, or its bytes) at time `now_us`."""
        config = self.config
        if config is None:
            return GREEN
        cir, cburst, pir, pburst = config
        if self.last_us is not None and now_us > self.last_us:
            elapsed = now_us - self.last_us
            self.committed = min(float(cburst), self.committed + elapsed * cir / 1e6)
            self.peak = min(float(pburst), self.peak + elapsed * pir / 1e6)
        if self.last_us is None or now_us > self.last_us:
            self.last_us = now_us
        if self.peak < amount:
            return RED
        self.peak -= amount
        if self.committed < amount:
            return YELLOW
        self.committed -= amount
        return GREEN


class Meter:
    """An indexed meter array (``meter(size, MeterType)``)."""

    __slots__ = ("name", "size", "bytes", "cells")

    def __init__(self, name: str, size: int, unit: str) -> None:
        self.name = name
        self.size = size
        self.bytes = unit == "bytes"
        self.cells = [MeterCell() for _ in range(size)]

    def execute(self, index: int, now_us: int, packet_length: int) -> int:
        """``execute_meter(index, result)``: the colour; an index out of range is a PacketError."""
        if not 0 <= index < self.size:
            raise PacketError(f"meter {self.name}: index {index} out of range 0..{self.size - 1}")
        return self.cells[index].execute(now_us, packet_length if self.bytes else 1)
