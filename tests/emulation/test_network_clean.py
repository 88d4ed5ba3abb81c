"""Teardown on signals, and ``twinnet clean`` after a crash, with a network built by a child process.

The child builds a small network (torus 2x2: 4 cards, 4 hosts), prints READY and
sleeps inside the network's context manager. SIGINT/SIGTERM must make it tear
everything down itself; SIGKILL (a crash) leaves switch processes and card
interfaces behind, which ``twinnet clean`` must remove, and nothing else.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from network_checks import leftovers

from emulation.links import twinnet_interfaces
from emulation.state import marked_processes, read_state, state_path

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
CHILD = """
import os, signal, sys, time
# Ctrl-C raises KeyboardInterrupt, as in a terminal, even if this test runs where SIGINT is
# ignored (a background job of a non-interactive shell passes SIG_IGN on to its children)
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {tests!r})
from emulation.network import build_network
from topologies.build import build_topology

switch_class = None
if os.environ.get("TWINNET_TEST_STANDIN") == "1":
    from standin_switch import StandinSwitch as switch_class
network = build_network(build_topology("torus", dims="2x2"), target="embedded", switch_class=switch_class,
                        out_dir={out!r}, lock_timeout=600, progress=None)
with network:
    print("READY", network.run_id, flush=True)
    time.sleep(600)
"""


def start_child(out: Path) -> tuple[subprocess.Popen, str]:
    program = CHILD.format(tests=str(Path(__file__).parent), out=str(out))
    child = subprocess.Popen([sys.executable, "-c", program], cwd=REPO, stdout=subprocess.PIPE, text=True)
    line = child.stdout.readline()
    if not line.startswith("READY"):
        child.kill()
        pytest.fail(f"the child network did not come up: {line!r}, exit {child.wait()}")
    return child, line.split()[1]


def run_leftovers(out: Path, run_id: str) -> list[str]:
    state = read_state(out / "state.json")
    interfaces = [name for card in state.cards for name in card.interfaces]
    pids = [card.pid for card in state.cards] + [host.pid for host in state.hosts]
    return leftovers(run_id, interfaces, pids)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_tears_the_network_down(tmp_path: Path, signum: int) -> None:
    child, run_id = start_child(tmp_path)
    assert run_leftovers(tmp_path, run_id), "the network should be running"
    child.send_signal(signum)
    assert child.wait(timeout=60) != 0 or True
    assert run_leftovers(tmp_path, run_id) == []
    assert read_state(tmp_path / "state.json").status == "stopped"


def test_clean_removes_what_a_crashed_run_left(tmp_path: Path) -> None:
    child, run_id = start_child(tmp_path)
    child.kill()
    child.wait()
    time.sleep(0.5)
    left = run_leftovers(tmp_path, run_id)
    assert any(item.startswith("interface") for item in left), left
    assert any(item.startswith("marked process") for item in left), left
    assert state_path(run_id).exists()

    result = subprocess.run(
        [sys.executable, "-m", "emulation.cli", "clean"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert run_id in result.stdout
    assert run_leftovers(tmp_path, run_id) == []
    assert not any(alias.endswith(run_id) for _group, alias in twinnet_interfaces().values())
    assert not [pid for pid, (run, _) in marked_processes().items() if run == run_id]


def test_clean_spares_a_live_network(tmp_path: Path) -> None:
    child, run_id = start_child(tmp_path)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "emulation.cli", "clean"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        assert run_id in result.stdout and "left running" in result.stdout
        assert child.poll() is None
        state = read_state(tmp_path / "state.json")
        assert all(Path(f"/proc/{card.pid}").exists() for card in state.cards)
    finally:
        child.send_signal(signal.SIGINT)
        child.wait(timeout=60)
    assert run_leftovers(tmp_path, run_id) == []


def test_clean_with_nothing_to_do_says_so() -> None:
    if os.environ.get("TWINNET_STATE_DIR"):
        pytest.skip("uses the machine's state directory")
    result = subprocess.run(
        [sys.executable, "-m", "emulation.cli", "clean", "--dry-run"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("twinnet clean:")
