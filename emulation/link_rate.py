"""Link rates as users write them: packets per second, or bits per second for a given frame size.

``1000`` and ``1000pps`` are packets per second; ``2Mbit``, ``500kbit``, ``1Gbit``
(``bps``/``bit``, k/M/G by 1000) are bits per second, turned into packets per
second for frames of ``frame_bytes`` bytes (as the host sends them, Ethernet
header included: the cards' queues count packets, not bytes).
"""

from __future__ import annotations

import math
import re

from topologies.errors import TwinnetError

_PATTERN = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*(pps|[kmg]?(?:bit|bps|bit/s))?\s*$", re.I)
_SCALE = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}


class LinkRateError(TwinnetError, ValueError):
    """A link rate that is not a positive number of packets or bits per second."""


def parse_link_rate(text: str, frame_bytes: int) -> float:
    """Packets per second for `text` (see the module doc)."""
    match = _PATTERN.match(str(text))
    if not match:
        raise LinkRateError(
            f"--link-rate takes packets/s (1000, 1000pps) or bits/s (2Mbit, 500kbit), got {text!r}"
        )
    value, unit = float(match.group(1)), (match.group(2) or "pps").lower()
    if unit != "pps":
        value = value * _SCALE[unit[0] if unit[0] in "kmg" else ""] / (8 * frame_bytes)
    if not value > 0 or not math.isfinite(value):
        raise LinkRateError(f"--link-rate must be positive, got {text!r}")
    return value
