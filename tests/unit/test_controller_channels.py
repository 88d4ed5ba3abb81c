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


def test_the_install_takes_cards_in_turn_from_each_switch_process() -> None:
    from types import SimpleNamespace

    from controller.install import TwinController

    addresses = {"c0": "p0", "c1": "p0", "c2": "p0", "c3": "p1", "c4": "p1", "c5": "own"}
    controller = SimpleNamespace(
        endpoints={name: SimpleNamespace(grpc_address=address) for name, address in addresses.items()}
    )
    order = TwinController._interleaved(controller, list(addresses))
    assert order == ["c0", "c3", "c5", "c1", "c4", "c2"]
