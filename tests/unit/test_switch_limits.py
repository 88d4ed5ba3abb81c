"""The switch refuses meaningless settings in one line: queue rates, addresses, device ids, port numbers.

A queue rate of 1e-9 packets per second used to be taken and kill the forwarding thread at
the next queued frame (the poll timeout overflowed); NaN, infinite and negative rates have
no meaning either. The side channel answers such a request with an error and keeps the old
rate; the command line stops before anything starts.
"""

from __future__ import annotations

import math

import pytest

from p4switch.daemon.addresses import check_address
from p4switch.daemon.cli import parse_options
from p4switch.daemon.queues import MAX_RATE_PPS, MIN_RATE_PPS, PortQueues, check_rate
from p4switch.daemon.switch import Switch, SwitchOptions

ABSURD_RATES = [
    1e-9,
    -1.0,
    -5,
    math.nan,
    math.inf,
    -math.inf,
    MIN_RATE_PPS / 2,
    MAX_RATE_PPS * 2,
    "fast",
    True,
]


@pytest.mark.parametrize("rate", ABSURD_RATES, ids=repr)
def test_absurd_queue_rates_are_refused(rate: object) -> None:
    with pytest.raises(ValueError, match="queue rate"):
        check_rate(rate)
    queues = PortQueues(1)
    with pytest.raises(ValueError):
        queues.set_rate(rate)  # type: ignore[arg-type]
    assert queues.rate_pps is None


@pytest.mark.parametrize("rate", [None, 0, 0.0])
def test_no_rate_or_zero_means_unlimited(rate: object) -> None:
    assert check_rate(rate) is None


@pytest.mark.parametrize("rate", [MIN_RATE_PPS, 1, 1000.5, MAX_RATE_PPS])
def test_rates_within_bounds_are_kept(rate: float) -> None:
    queues = PortQueues(1)
    queues.set_rate(rate)
    assert queues.rate_pps == float(rate)


def unstarted_switch() -> Switch:
    return Switch(SwitchOptions(interfaces=[(1, "none1"), (2, "none2")], grpc_address="127.0.0.1:0"))


@pytest.mark.parametrize("rate", [1e-9, -5, "nan", None], ids=repr)
def test_side_channel_refuses_an_absurd_rate_and_keeps_the_old_one(rate: object) -> None:
    switch = unstarted_switch()
    assert switch.handle_control({"cmd": "set_queue_rate", "rate_pps": 100})["ok"]
    message = {"cmd": "set_queue_rate", "rate_pps": float(rate) if rate == "nan" else rate}
    if rate is None:  # null is "unlimited" (valid); a bad port instead
        message.update(port=99)
    answer = switch.handle_control(message)
    assert answer["ok"] is False and ("queue rate" in answer["error"] or "no port" in answer["error"])
    assert [queues.rate_pps for queues in switch.dataplane.queues.values()] == [100.0, 100.0]


@pytest.mark.parametrize("depth", [0, -1, 10**12, "64", 2.5, True])
def test_side_channel_refuses_a_bad_depth(depth: object) -> None:
    answer = unstarted_switch().handle_control({"cmd": "set_queue_depth", "depth": depth})
    assert answer["ok"] is False and "queue depth" in answer["error"]


@pytest.mark.parametrize(
    ("argv", "complaint"),
    [
        (["--no-p4", "--", "--queue-rate", "1e-9"], "--queue-rate"),
        (["--no-p4", "--", "--queue-rate", "-5"], "--queue-rate"),
        (["--no-p4", "--", "--queue-rate", "nan"], "--queue-rate"),
        (["--no-p4", "--", "--queue-rate", "inf"], "--queue-rate"),
        (["--no-p4", "--", "--grpc-server-addr", "127.0.0.1:70000"], "port must be 0..65535"),
        (["--no-p4", "--", "--grpc-server-addr", "0.0.0.0:9559"], "loopback only"),
        (["--no-p4", "--", "--grpc-server-addr", "unix:relative.sock"], "absolute"),
        (["--no-p4", "--device-id", "-1"], "--device-id"),
        (["--no-p4", "--device-id", str(2**64)], "--device-id"),
        (["--no-p4", "--thrift-port", "70000"], "--thrift-port"),
        (["--no-p4", "-i", "600@eth0"], "bit<9>"),
        (["--no-p4", "--", "--cpu-port", "-1"], "--cpu-port"),
    ],
)
def test_command_line_refuses_meaningless_values(
    argv: list[str], complaint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse_options(argv)
    assert stopped.value.code == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert complaint in error and "Traceback" not in error


def test_command_line_keeps_valid_values() -> None:
    options, _ = parse_options(
        [
            "--no-p4",
            "--device-id",
            str(2**64 - 1),
            "--",
            "--queue-rate",
            "0.5",
            "--grpc-server-addr",
            "[::1]:0",
        ]
    )
    assert (
        options.device_id == 2**64 - 1 and options.queue_rate_pps == 0.5 and options.grpc_address == "[::1]:0"
    )


@pytest.mark.parametrize(
    "address", ["127.0.0.1:9559", "localhost:0", "[::1]:65535", "127.1.2.3:1", "unix:/tmp/x/s"]
)
def test_loopback_and_unix_addresses_are_accepted(address: str) -> None:
    assert check_address(address) == address
