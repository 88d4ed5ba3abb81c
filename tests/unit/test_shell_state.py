"""``twinnet shell --state FILE`` uses only a well-formed state of a run that is still up.

A file that is not JSON, JSON of another shape, or the state of a stopped run (whose
addresses may now belong to another network's cards) is refused in one line naming the file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from emulation import shell_cli
from emulation.state import CardState, NetworkState, StateFileError, process_identity, read_live_state


def state_dict(owner: str, status: str = "running") -> dict:
    card = CardState(
        "c0", 0, 0, "127.0.0.1:20000", 24000, "embedded", None, "card.p4", "c0.log", ["c0-eth1"], 42
    )
    state = NetworkState(
        "run-1", owner, status, 0.0, {"family": "ndt"}, "embedded", "card.p4", "/tmp", 1, {}, [card]
    )
    return state.to_json()


def shell(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    args = argparse.Namespace(card="c0", write=False, state=str(path), print_only=True)
    code = shell_cli.main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write(tmp_path: Path, content: str) -> Path:
    path = tmp_path / "state.json"
    path.write_text(content)
    return path


@pytest.mark.parametrize(
    ("content", "complaint"),
    [
        ("{not json", "invalid JSON"),
        ("\xff\xfe", "invalid JSON"),
        ("[]", "JSON object expected"),
        ("{}", "missing"),
        ('{"cards": 5}', "'cards' must be a list"),
        ("null", "JSON object expected"),
    ],
)
def test_a_file_that_is_not_a_state_is_refused_naming_it(
    tmp_path: Path, content: str, complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, content)
    code, out, err = shell(path, capsys)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and str(path) in err and complaint in err, err


@pytest.mark.parametrize(
    ("field", "value"),
    [("grpc_address", 20000), ("device_id", "zero"), ("interfaces", "c0-eth1"), ("pid", "42"), ("killed", 1)],
)
def test_a_card_of_the_wrong_shape_is_refused(tmp_path: Path, field: str, value: object, capsys) -> None:
    data = state_dict(process_identity())
    data["cards"][0][field] = value
    code, _, err = shell(write(tmp_path, json.dumps(data)), capsys)
    assert code == 2 and f"CardState.{field}" in err


def test_a_stopped_run_is_refused(tmp_path: Path, capsys) -> None:
    code, _, err = shell(write(tmp_path, json.dumps(state_dict(process_identity(), "stopped"))), capsys)
    assert code == 2 and "stopped, not running" in err


def test_a_run_whose_process_is_gone_is_refused(tmp_path: Path, capsys) -> None:
    pid, start = process_identity().split(":")
    gone = f"{pid}:{int(start) + 1}"  # this pid, another start time: a reused pid
    code, _, err = shell(write(tmp_path, json.dumps(state_dict(gone))), capsys)
    assert code == 2 and "has ended" in err
    with pytest.raises(StateFileError):
        read_live_state(tmp_path / "state.json")


def test_a_live_run_is_used(tmp_path: Path, capsys) -> None:
    code, out, err = shell(write(tmp_path, json.dumps(state_dict(process_identity()))), capsys)
    assert code == 0 and err == ""
    assert json.loads(out)["grpc_address"] == "127.0.0.1:20000"


def test_a_missing_file_is_one_line(tmp_path: Path, capsys) -> None:
    code, _, err = shell(tmp_path / "absent.json", capsys)
    assert code == 2 and "absent.json" in err and len(err.strip().splitlines()) == 1
