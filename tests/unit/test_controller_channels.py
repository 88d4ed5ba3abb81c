"""The controller's gRPC channels: one per address, shared by the cards served there, closed last."""

from __future__ import annotations

from controller.p4runtime_conn import ChannelPool


def test_cards_at_one_address_share_its_channel_until_the_last_lets_go(tmp_path) -> None:
    pool = ChannelPool()
    here, there = f"unix:{tmp_path / 'p0.p4rt'}", f"unix:{tmp_path / 'p1.p4rt'}"
    first, second, other = pool.acquire(here), pool.acquire(here), pool.acquire(there)
    assert first is second and other is not first
    pool.release(here)
    assert pool.acquire(here) is first  # still held by one user: the same channel
    pool.release(here)
    pool.release(here)  # the last user: closed and forgotten
    assert pool.acquire(here) is not first
    pool.release(here)
    pool.release(there)
    pool.release(there)  # one release too many is harmless


def controller_over(addresses: dict[str, str], workers: int):
    """A TwinController with only what its card pool reads: the cards' addresses and its limits."""
    from types import SimpleNamespace

    from controller.install import WORKERS_PER_ADDRESS, TwinController

    controller = TwinController.__new__(TwinController)
    controller.endpoints = {name: SimpleNamespace(grpc_address=where) for name, where in addresses.items()}
    controller.workers, controller.keep_sessions = workers, True
    controller.workers_per_address = WORKERS_PER_ADDRESS
    return controller


def test_the_install_takes_cards_in_turn_from_each_switch_process() -> None:
    addresses = {"c0": "p0", "c1": "p0", "c2": "p0", "c3": "p1", "c4": "p1", "c5": "own"}
    started: list[str] = []
    results = controller_over(addresses, workers=1)._each_card(
        list(addresses), lambda name: started.append(name) or name
    )
    assert started == ["c0", "c3", "c5", "c1", "c4", "c2"]
    assert list(results.items()) == [(name, name) for name in addresses]  # in the order given


def busiest(addresses: dict[str, str], workers: int) -> tuple[dict[str, int], int]:
    """Run the install's card pool over cards at these addresses (each job holds its card for
    50-150 ms, at random): the most cards of one address, and of all, in progress at once."""
    import random
    import threading
    import time

    durations = random.Random(7)
    lock = threading.Lock()
    running: dict[str, int] = {}
    most: dict[str, int] = {}
    peak = [0, 0]

    def job(name: str) -> None:
        address = addresses[name]
        with lock:
            running[address] = running.get(address, 0) + 1
            most[address] = max(most.get(address, 0), running[address])
            peak[0] += 1
            peak[1] = max(peak)
            hold = durations.uniform(0.05, 0.15)
        time.sleep(hold)
        with lock:
            running[address] -= 1
            peak[0] -= 1

    controller_over(addresses, workers)._each_card(list(addresses), job)
    return most, peak[1]


def test_the_install_keeps_a_few_cards_of_each_switch_process_busy() -> None:
    from controller.install import WORKERS_PER_ADDRESS

    two_processes = {f"c{i}": f"p{i % 2}" for i in range(10 * WORKERS_PER_ADDRESS)}
    most, overall = busiest(two_processes, workers=16)
    assert most == {"p0": WORKERS_PER_ADDRESS, "p1": WORKERS_PER_ADDRESS}
    assert overall == 2 * WORKERS_PER_ADDRESS
    one_each = {f"c{i}": f"own{i}" for i in range(8)}  # one process per card (bmv2): all at once
    assert busiest(one_each, workers=16)[1] == 8
    assert busiest(one_each, workers=5)[1] == 5


def test_a_failing_card_job_fails_the_pool_after_every_other_card_ran() -> None:
    import pytest

    addresses = {f"c{i}": f"p{i % 2}" for i in range(8)}
    ran: list[str] = []

    def job(name: str) -> None:
        ran.append(name)
        if name == "c2":
            raise RuntimeError("c2 is broken")

    with pytest.raises(RuntimeError, match="c2 is broken"):
        controller_over(addresses, workers=4)._each_card(list(addresses), job)
    assert sorted(ran) == sorted(addresses)
