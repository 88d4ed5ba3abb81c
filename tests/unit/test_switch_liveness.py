"""A failure of the forwarding loop is never silent: recorded, reported, and the switch process exits.

The loop used to die on an exception (e.g. a poll timeout that overflowed) while the
process, P4Runtime and the side channel stayed up and reported ok, so a run saw a live
card that forwarded nothing. Now the data plane records why it stopped, reports it in
its snapshot, and ``twinnet-switch`` exits with code 70 within ``FAILURE_CHECK_SECONDS``,
which the emulation's liveness check sees as a dead card.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from p4switch.daemon.cli import EXIT_DATAPLANE_FAILED
from p4switch.daemon.dataplane import MAX_POLL_MS, DataPlane
from p4switch.daemon.loop import ForwardingLoop
from p4switch.daemon.program import PipelineSlot
from p4switch.daemon.queues import MIN_RATE_PPS, RATE_BURST_PACKETS


def test_a_failing_loop_is_recorded_and_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    reported: list[str] = []
    done = threading.Event()

    def on_failure(reason: str) -> None:
        reported.append(reason)
        done.set()

    dataplane = DataPlane([], PipelineSlot(), on_failure=on_failure)

    def broken_timeout(self: ForwardingLoop) -> int:
        raise OverflowError("timeout is too large")

    monkeypatch.setattr(ForwardingLoop, "_timeout_ms", broken_timeout)
    dataplane.start()
    try:
        assert done.wait(2.0)
        assert reported == ["OverflowError: timeout is too large"]
        assert not dataplane.alive()
        health = dataplane.snapshot()["dataplane"]
        assert health["alive"] is False and "OverflowError" in health["failure"]
    finally:
        dataplane.stop()


def test_a_healthy_loop_is_alive_and_beats() -> None:
    dataplane = DataPlane([], PipelineSlot())
    dataplane.start()
    try:
        time.sleep(2.5 * MAX_POLL_MS / 1000)
        health = dataplane.snapshot()["dataplane"]
        assert dataplane.alive() and health["failure"] is None
        assert health["beat_age_s"] <= 1.5 * MAX_POLL_MS / 1000  # idle, it still wakes every MAX_POLL_MS
    finally:
        dataplane.stop()
    assert not dataplane.alive() and dataplane.failure is None  # a clean stop is no failure


def test_the_slowest_rate_keeps_the_poll_timeout_bounded() -> None:
    dataplane = DataPlane([], PipelineSlot())
    from p4switch.daemon.queues import PortQueues

    dataplane.queues[1] = PortQueues(1)
    dataplane.queues[1].set_rate(MIN_RATE_PPS)
    dataplane.queues[1].enqueue(0, object(), 0)
    now = time.monotonic()
    for _ in range(RATE_BURST_PACKETS + 1):  # the burst spent: the next departure is 1,000 s away
        dataplane.queues[1].charge_one(now)
    assert dataplane.queues[1].wait_time(now) > 900
    dataplane._active.add(1)
    assert 0 < dataplane._timeout_ms() <= MAX_POLL_MS


FAILING_SWITCH = """
import sys, time
from p4switch.daemon import loop, cli
calls = 0
def failing_timeout(self):
    global calls
    calls += 1
    if calls == 3:
        print(f"FAILED-AT {time.monotonic()!r}", flush=True)
        raise OverflowError("timeout is too large")
    return 50
loop.ForwardingLoop._timeout_ms = failing_timeout
sys.exit(cli.main(["--no-p4", "--thrift-port", "0", "--", "--grpc-server-addr", "127.0.0.1:0"]))
"""


def test_the_switch_process_exits_within_a_second_when_its_data_plane_fails() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", FAILING_SWITCH], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        failed_line = process.stdout.readline()
        assert failed_line.startswith("FAILED-AT"), (failed_line, process.stderr.read())
        failed_at = float(failed_line.split()[1])
        code = process.wait(timeout=10)
        exited_at = time.monotonic()  # CLOCK_MONOTONIC is the same clock in both processes
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = process.stderr.read()
    assert code == EXIT_DATAPLANE_FAILED, stderr
    assert "data plane failed: OverflowError" in stderr
    # detection takes at most FAILURE_CHECK_SECONDS; shutting down gRPC takes the rest
    print(f"exit {exited_at - failed_at:.3f} s after the failure")
    assert exited_at - failed_at < 1.0


class SlowCard:
    """A stand-in card whose every batch takes ``seconds`` (a busy card in a saturated process)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ports: dict = {}
        self._injected: list = []
        self.loop: ForwardingLoop | None = None

    def serve(self, ports: list) -> int:
        time.sleep(self.seconds)
        return 0

    def has_work(self) -> bool:
        return True

    def _timeout_ms(self) -> int:
        return 0


def test_a_long_turn_over_busy_cards_still_beats() -> None:
    """One turn of the loop over 8 cards busy for 0.15 s each lasts 1.2 s; the heartbeat follows each card.

    (A 64-card process past saturation took up to 1.1 s a turn and was killed as hung when the heartbeat
    only moved once a turn.)
    """
    loop = ForwardingLoop()
    for _ in range(8):
        card = SlowCard(0.15)
        loop.add(card)  # type: ignore[arg-type]
        loop.pending.add(card)  # type: ignore[arg-type]
    loop.start()
    try:
        ages = []
        deadline = time.monotonic() + 2.5
        while time.monotonic() < deadline:
            ages.append(loop.beat_age())
            time.sleep(0.02)
        assert loop.alive()
        assert max(ages) < 0.15 + 0.25, f"heartbeat {max(ages)} s old during a turn of 8 x 0.15 s"
    finally:
        loop.stop()
