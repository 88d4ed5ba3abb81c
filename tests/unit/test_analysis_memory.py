"""The memory estimate of the streaming analysis: grows with the network, refuses what does not fit."""

from __future__ import annotations

import pytest

from controller.analysis import memory
from controller.analysis.memory import MemoryEstimateError, check_memory, estimate
from controller.analysis.progress import Progress
from controller.analysis.traffic import make_traffic
from controller.routing import routing_spec
from topologies.torus import ndt_torus


def test_estimate_grows_with_the_network_and_with_workers() -> None:
    small, large = (routing_spec(ndt_torus(dims), "dort") for dims in ((4, 4, 4), (8, 8, 8)))
    assert estimate(small) < estimate(large)
    assert estimate(large) < estimate(large, workers=2)
    traffic = make_traffic("bit-reverse-family", ndt_torus((8, 8, 8)))  # flow arrays: N^2 of them
    assert estimate(large, traffic) >= estimate(large) + traffic.num_flows * 32


def test_refusal_names_the_need_and_what_is_available(monkeypatch) -> None:
    spec = routing_spec(ndt_torus((4, 4, 4)), "dort")
    monkeypatch.setattr(memory, "available", lambda: estimate(spec) - 1)
    with pytest.raises(MemoryEstimateError, match=r"needs about .* GiB but .* GiB are available"):
        check_memory(spec)
    monkeypatch.setattr(memory, "available", lambda: estimate(spec))
    check_memory(spec)  # just fits


def test_available_memory_is_read() -> None:
    assert memory.available() > 0


class _Terminal:
    def __init__(self) -> None:
        self.text = ""

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> None:
        self.text += text

    def flush(self) -> None:
        pass


def test_progress_bar_only_on_a_terminal_after_the_delay(monkeypatch) -> None:
    terminal = _Terminal()
    bar = Progress(4, stream=terminal)
    bar.update(1)
    assert terminal.text == ""  # under a second: nothing
    monkeypatch.setattr(bar, "start", bar.start - 5)
    bar.update(2)
    assert "2/4" in terminal.text and "#" * 15 in terminal.text
    bar.close()
    assert terminal.text.endswith("\r")
