"""Priority queues, tail drop and the packet rate of one egress port; the switch's command line. No root."""

from __future__ import annotations

import pytest

from p4switch.daemon.cli import parse_options
from p4switch.daemon.queues import PortQueues


def test_highest_priority_is_served_first_and_fifo_within_a_priority() -> None:
    queues = PortQueues(port=3, priority_count=8, depth=10)
    arrivals = [(0, "a"), (5, "b"), (7, "c"), (0, "d"), (5, "e")]
    for priority, name in arrivals:
        assert queues.enqueue(priority, name, now_us=0)
    assert [queues.dequeue().state for _ in arrivals] == ["c", "b", "e", "a", "d"]
    assert queues.dequeue() is None


def test_enqueue_depth_counts_all_queues_of_the_port() -> None:
    queues = PortQueues(port=1, priority_count=2, depth=4)
    queues.enqueue(0, "x", 0)
    queues.enqueue(1, "y", 0)
    queues.enqueue(1, "z", 0)
    assert [item.enq_qdepth for item in (queues.dequeue(), queues.dequeue(), queues.dequeue())] == [1, 2, 0]


def test_tail_drop_per_queue_and_out_of_range_priority() -> None:
    queues = PortQueues(port=1, priority_count=4, depth=2)
    results = [queues.enqueue(2, i, 0) for i in range(5)] + [queues.enqueue(1, "other", 0)]
    assert results == [True, True, False, False, False, True]
    assert queues.counters[2].tail_drops == 3 and queues.counters[1].tail_drops == 0
    assert queues.enqueue(4, "too high", 0) is False
    assert queues.out_of_range_drops == 1
    snapshot = queues.snapshot()
    assert snapshot["queues"][2] == {
        "priority": 2,
        "length": 2,
        "enqueued": 2,
        "dequeued": 0,
        "tail_drops": 3,
    }


def test_rate_limit_spaces_departures_after_a_small_burst() -> None:
    queues = PortQueues(port=1, priority_count=1, depth=100)
    queues.set_rate(100.0)  # one packet every 10 ms
    for i in range(50):
        queues.enqueue(0, i, 0)
    sent_at = []
    now = 5.0
    while queues.backlog:
        if queues.may_send(now):
            queues.dequeue()
            queues.charge_one(now)
            sent_at.append(now)
        else:
            now = now + queues.wait_time(now)
    duration = sent_at[-1] - sent_at[0]
    assert duration == pytest.approx((50 - 4) / 100.0, abs=1e-6)  # a burst of 4, then 10 ms apart
    assert queues.wait_time(now) is None
    queues.set_rate(None)
    queues.enqueue(0, "free", 0)
    assert queues.may_send(now) and queues.wait_time(now) == 0.0


def test_command_line_takes_simple_switch_grpc_form() -> None:
    options, _ = parse_options(
        [
            "--device-id",
            "4",
            "-i",
            "1@c4-eth1",
            "-i",
            "3@c4-eth3",
            "--thrift-port",
            "9094",
            "--log-console",
            "-L",
            "debug",
            "--no-p4",
            "--",
            "--grpc-server-addr",
            "127.0.0.1:50004",
            "--priority-queues",
            "8",
            "--cpu-port",
            "255",
        ]
    )
    assert options.device_id == 4 and options.interfaces == [(1, "c4-eth1"), (3, "c4-eth3")]
    assert (options.control_port, options.grpc_address, options.priority_queues, options.cpu_port) == (
        9094,
        "127.0.0.1:50004",
        8,
        255,
    )
    assert options.program is None
    defaults, _ = parse_options(["card.p4"])
    assert (defaults.program, defaults.grpc_address, defaults.control_port, defaults.priority_queues) == (
        "card.p4",
        "127.0.0.1:9559",
        9090,
        1,
    )
    assert (defaults.effective_queue_depth(), defaults.queue_rate_pps) == (64, None)


@pytest.mark.parametrize(
    "argv",
    [
        ["--no-p4", "--", "--priority-queues", "9"],
        ["--no-p4", "-i", "eth1"],
        ["--no-p4", "-i", "1@a", "-i", "1@b"],
        ["card.p4", "--no-p4"],
        [],
    ],
)
def test_command_line_rejects_bad_options(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse_options(argv)
    assert exit_info.value.code == 2


def test_lossless_options_and_their_defaults() -> None:
    from p4switch.daemon.pfc import DEFAULT_HEADROOM, DEFAULT_XOFF, ClassField

    lossy, _ = parse_options(["--no-p4", "-i", "1@a", "-i", "2@b"])
    assert lossy.lossless is None
    options, _ = parse_options(
        ["--no-p4", "-i", "1@a", "-i", "2@b", "--", "--lossless", "--pfc-class-field", "0x88b5,20,40,0x0f"]
    )
    assert options.lossless.class_field == ClassField(0x88B5, 20, 40, 0x0F)
    assert options.effective_queue_depth() == 2 * (DEFAULT_XOFF + DEFAULT_HEADROOM)
    tuned, _ = parse_options(
        [
            "--no-p4",
            "--",
            "--lossless",
            "--pfc-xoff",
            "10",
            "--pfc-xon",
            "3",
            "--pfc-headroom",
            "5",
            "--queue-depth",
            "7",
        ]
    )
    assert (tuned.lossless.xoff, tuned.lossless.xon, tuned.lossless.headroom) == (10, 3, 5)
    assert tuned.effective_queue_depth() == 7


@pytest.mark.parametrize(
    "target",
    [
        ["--lossless", "--pfc-xon", "16", "--pfc-xoff", "16"],
        ["--lossless", "--pfc-headroom", "0"],
        ["--lossless", "--link-bps", "0"],
        ["--lossless", "--pfc-class-field", "88b5"],
    ],
)
def test_bad_lossless_options_are_refused(target: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse_options(["--no-p4", "--", *target])
    assert exit_info.value.code == 2
