"""``twinnet-switch --cards``: the cards file, its refusals, and the process as a whole (cards without ports).

A bad file is refused with one line and exit status 2 before anything starts; a process
started with --cards answers health for all cards, kills one card on request, and when
it is killed (SIGKILL) none of its sockets answers any more.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4switch.daemon import cli
from p4switch.daemon.host_config import CardConfig, CardsFileError, read_cards_file, write_cards_file
from p4switch.daemon.side_channel import request
from p4switch.errors import P4SwitchError

REPO = Path(__file__).resolve().parents[2]


def test_a_cards_file_reads_back_as_written(tmp_path: Path) -> None:
    cards = [
        CardConfig(7, [(1, "c7-eth1"), (2, "c7-eth2")], f"unix:{tmp_path}/c7.ctl"),
        CardConfig(0, [], None),
    ]
    path = tmp_path / "cards.json"
    write_cards_file(path, cards)
    assert read_cards_file(path) == cards


BAD_FILES = [
    pytest.param("not json", "not JSON", id="not-json"),
    pytest.param("[]", '{"cards": [...]}', id="not-an-object"),
    pytest.param({"cards": []}, "no cards", id="no-cards"),
    pytest.param(
        {"cards": [{"device_id": 1}, {"device_id": 1}]}, "device id 1 is given twice", id="dup-device"
    ),
    pytest.param(
        {"cards": [{"device_id": 1, "interfaces": [[1, "a"]]}, {"device_id": 2, "interfaces": [[1, "a"]]}]},
        "interface a is given to device 1 and device 2",
        id="dup-interface",
    ),
    pytest.param(
        {"cards": [{"device_id": 1, "interfaces": [[1, "a"], [1, "b"]]}]},
        "port 1 is given twice",
        id="dup-port",
    ),
    pytest.param({"cards": [{"device_id": 1, "interfaces": [[512, "a"]]}]}, "0..511", id="port-range"),
    pytest.param({"cards": [{"device_id": -1}]}, "device id -1", id="negative-device"),
    pytest.param({"cards": [{"device_id": "1"}]}, "device_id must be an integer", id="device-type"),
    pytest.param({"cards": [{"device_id": 1, "interfaces": ["1@a"]}]}, "[port number, name]", id="spec"),
    pytest.param(
        {"cards": [{"device_id": 1, "control_address": "127.0.0.1:9"}]}, "must be unix:/path", id="tcp-side"
    ),
    pytest.param(
        {
            "cards": [
                {"device_id": 1, "control_address": "unix:/tmp/x.ctl"},
                {"device_id": 2, "control_address": "unix:/tmp/x.ctl"},
            ]
        },
        "side channel unix:/tmp/x.ctl is given to device 1 and device 2",
        id="dup-side",
    ),
    pytest.param({"cards": [{"device_id": 1, "ports": []}]}, "unknown key(s) 'ports'", id="unknown-key"),
]


@pytest.mark.parametrize(("content", "message"), BAD_FILES)
def test_a_bad_cards_file_is_refused_naming_the_problem(
    tmp_path: Path, content: object, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cards.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(CardsFileError) as caught:
        read_cards_file(path)
    assert message in str(caught.value) and str(path) in str(caught.value)
    assert isinstance(caught.value, P4SwitchError)
    assert cli.main(["--cards", str(path), "--no-p4"]) == 2  # nothing started: refused at once
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0] and "Traceback" not in err[0]


def test_a_missing_cards_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--cards", str(tmp_path / "none.json"), "--no-p4"]) == 2
    assert "cannot read it" in capsys.readouterr().err


def test_a_side_channel_that_is_also_the_process_one_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cards.json"
    write_cards_file(path, [CardConfig(1, [], f"unix:{tmp_path}/x.ctl")])
    assert cli.main(["--cards", str(path), "--process-control", f"unix:{tmp_path}/x.ctl", "--no-p4"]) == 2
    assert "device 1's side channel" in capsys.readouterr().err
    assert not (tmp_path / "x.ctl").exists()


@pytest.mark.parametrize("extra", [["-i", "1@a"], ["--device-id", "3"], ["--side-channel", "unix:/tmp/s"]])
def test_per_card_options_are_refused_with_cards(
    tmp_path: Path, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cards.json"
    write_cards_file(path, [CardConfig(1)])
    with pytest.raises(SystemExit) as caught:
        cli.main(["--cards", str(path), *extra, "--no-p4"])
    assert caught.value.code == 2
    assert extra[0] in capsys.readouterr().err


def wait_for(path: Path, process: subprocess.Popen, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.05)


def start_process(tmp_path: Path, devices: list[int]) -> tuple[subprocess.Popen, str]:
    cards = [CardConfig(device, [], f"unix:{tmp_path}/c{device}.ctl") for device in devices]
    write_cards_file(tmp_path / "cards.json", cards)
    grpc_address = f"unix:{tmp_path}/grpc.sock"
    command = [
        sys.executable,
        "-m",
        "p4switch.daemon.cli",
        "--cards",
        str(tmp_path / "cards.json"),
        "--process-control",
        f"unix:{tmp_path}/group.ctl",
        "--no-p4",
        "--",
        "--grpc-server-addr",
        grpc_address,
        "--priority-queues",
        "8",
    ]
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(command, cwd=REPO, env=environment, stderr=subprocess.PIPE, text=True)
    wait_for(tmp_path / "group.ctl", process)
    return process, grpc_address


def capabilities(address: str) -> None:
    with grpc.insecure_channel(address) as channel:
        p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=3)


def test_a_cards_process_kills_one_card_and_stops_cleanly(tmp_path: Path) -> None:
    process, grpc_address = start_process(tmp_path, [1, 2])
    try:
        assert (os.stat(tmp_path / "grpc.sock").st_mode & 0o777) == 0o600
        health = request(f"unix:{tmp_path}/group.ctl", {"cmd": "health"})
        assert health["alive"] and set(health["cards"]) == {"1", "2"}
        assert request(f"unix:{tmp_path}/c2.ctl", {"cmd": "kill"}) == {"ok": True}
        health = request(f"unix:{tmp_path}/group.ctl", {"cmd": "health"})
        assert health["cards"]["2"] == {"alive": False, "failure": "killed"}
        assert health["cards"]["1"] == {"alive": True, "failure": None}
        assert request(f"unix:{tmp_path}/c1.ctl", {"cmd": "health"})["alive"] is True
        capabilities(grpc_address)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert not [name for name in os.listdir(tmp_path) if name.endswith((".ctl", ".sock"))]


def test_a_killed_process_takes_all_its_cards(tmp_path: Path) -> None:
    process, grpc_address = start_process(tmp_path, [1, 2, 3])
    try:
        for device in (1, 2, 3):
            assert request(f"unix:{tmp_path}/c{device}.ctl", {"cmd": "health"})["alive"] is True
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=10) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    for device in (1, 2, 3):  # the files may stay; nothing listens on them
        with pytest.raises(OSError):
            request(f"unix:{tmp_path}/c{device}.ctl", {"cmd": "health"}, timeout=2)
    with pytest.raises(OSError):
        request(f"unix:{tmp_path}/group.ctl", {"cmd": "health"}, timeout=2)
    with pytest.raises(grpc.RpcError) as caught:
        capabilities(grpc_address)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE


FAILING_CARDS_PROCESS = """
import sys
from p4switch.daemon import loop, cli
calls = 0
def failing_timeout(self):
    global calls
    calls += 1
    if calls == 3:
        raise OverflowError("timeout is too large")
    return 50
loop.ForwardingLoop._timeout_ms = failing_timeout
sys.exit(cli.main(sys.argv[1:]))
"""


def test_a_failed_loop_ends_the_process_with_all_its_cards(tmp_path: Path) -> None:
    write_cards_file(
        tmp_path / "cards.json", [CardConfig(d, [], f"unix:{tmp_path}/c{d}.ctl") for d in (1, 2)]
    )
    command = [
        sys.executable,
        "-c",
        FAILING_CARDS_PROCESS,
        "--cards",
        str(tmp_path / "cards.json"),
        "--process-control",
        f"unix:{tmp_path}/group.ctl",
        "--no-p4",
        "--",
        "--grpc-server-addr",
        f"unix:{tmp_path}/grpc.sock",
    ]
    process = subprocess.run(
        command,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert process.returncode == cli.EXIT_DATAPLANE_FAILED, process.stderr
    assert "data plane failed: OverflowError" in process.stderr
    assert not [name for name in os.listdir(tmp_path) if name.endswith((".ctl", ".sock"))]
