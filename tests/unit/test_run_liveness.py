"""The run's data plane watch: a card that stops answering for its data plane twice in a row is dead.

On fake cards and a fake health check: the watch kills the card (so that every later check,
and the accounting, sees a dead card) and notes when; one failed answer is not enough; a
card whose process already exited is left to the process check. With a real side channel:
a stopped data plane, a failed one and one that does not answer all read as unhealthy.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

from emulation.liveness import STALE_BEAT_S, DataPlaneWatch, data_plane_healthy


class FakeCard:
    def __init__(self) -> None:
        self.alive = True
        self.kills = 0

    def is_alive(self) -> bool:
        return self.alive

    def kill(self) -> None:
        self.kills += 1
        self.alive = False


def network_of(names: list[str], target: str = "embedded") -> SimpleNamespace:
    return SimpleNamespace(
        cards={name: FakeCard() for name in names}, switch_class=SimpleNamespace(target_name=target)
    )


def test_a_card_failing_twice_is_killed_and_its_death_noted() -> None:
    network = network_of(["c1", "c2", "c3"])
    answers = {"c1": [True, True], "c2": [False, False], "c3": [False, True]}  # c3 fails once only
    asked: list[str] = []

    def healthy(card: FakeCard) -> bool:
        name = next(n for n, c in network.cards.items() if c is card)
        asked.append(name)
        return answers[name].pop(0)

    watch = DataPlaneWatch(network, time.monotonic() - 2.0, healthy)
    with ThreadPoolExecutor(4) as pool:
        assert watch.check_once(pool) == ["c2"]
    assert network.cards["c2"].kills == 1 and not network.cards["c3"].kills and not network.cards["c1"].kills
    assert sorted(asked) == ["c1", "c2", "c2", "c3", "c3"]
    assert 2.0 <= watch.deaths["c2"] < 3.0 and list(watch.deaths) == ["c2"]


def test_the_watch_runs_only_for_the_embedded_target() -> None:
    network = network_of(["c1"], target="bmv2")
    with DataPlaneWatch(network, time.monotonic(), lambda card: False) as watch:
        time.sleep(0.5)
    assert network.cards["c1"].alive and watch.deaths == {}


def test_the_background_watch_finds_a_stopped_card_within_a_second() -> None:
    network = network_of(["c1", "c2"])
    stopped_at = time.monotonic() + 0.3

    def healthy(card: FakeCard) -> bool:
        return card is network.cards["c1"] or time.monotonic() < stopped_at

    started = time.monotonic()
    with DataPlaneWatch(network, started, healthy) as watch:
        deadline = time.monotonic() + 3
        while "c2" not in watch.deaths and time.monotonic() < deadline:
            time.sleep(0.02)
    assert "c2" in watch.deaths and network.cards["c1"].alive
    assert watch.deaths["c2"] - (stopped_at - started) < 1.0


SWITCH = """
import sys
from p4switch.daemon import cli
sys.exit(cli.main(["--no-p4", "--side-channel", sys.argv[1], "--", "--grpc-server-addr", sys.argv[2]]))
"""


def wait_until_stopped(pid: int, limit_s: float = 10.0) -> None:
    """Until every thread of ``pid`` is in state T (stopped), as /proc says."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        states = []
        for task in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{pid}/task/{task}/stat").read_text()
                states.append(stat[stat.rindex(")") + 2])
        if states and all(state in "tT" for state in states):
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not stop within {limit_s} s")


def test_a_real_side_channel_reads_healthy_then_stopped() -> None:
    folder = Path(tempfile.mkdtemp(prefix="twinnet-"))
    card = SimpleNamespace(control_target=f"unix:{folder}/c.ctl")
    process = subprocess.Popen(
        [sys.executable, "-c", SWITCH, card.control_target, f"unix:{folder}/c.p4rt"],
        stderr=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while not data_plane_healthy(card) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert data_plane_healthy(card)
        os.kill(process.pid, signal.SIGSTOP)  # the process exists, its data plane does not run
        wait_until_stopped(process.pid)  # a signal takes effect when the process is next scheduled
        started = time.monotonic()
        assert not data_plane_healthy(card)
        assert time.monotonic() - started < 1.0
        os.kill(process.pid, signal.SIGCONT)
        time.sleep(STALE_BEAT_S / 3)
        assert data_plane_healthy(card)
    finally:
        process.kill()
        process.wait()
    assert not data_plane_healthy(card)  # nothing answers
