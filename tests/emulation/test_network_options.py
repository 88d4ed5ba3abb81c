"""Builder options on a small real network (torus 2x2: 4 cards, 4 hosts): port rates, refusals, link delay.

The tests run in file order: the leftover test stops the module's network, the
delay test builds its own (only one network runs at a time).
"""

from __future__ import annotations

import os
import subprocess

import pytest

from emulation.links import netem_missing
from emulation.network import NetworkError, TwinnetNetwork, build_network
from emulation.state import NetworkBusyError
from topologies.build import build_topology

pytestmark = pytest.mark.root


def switch_class():
    if os.environ.get("TWINNET_TEST_STANDIN") == "1":
        from standin_switch import StandinSwitch

        return StandinSwitch
    return None


@pytest.fixture(scope="module")
def network(tmp_path_factory) -> TwinnetNetwork:
    built = build_network(
        build_topology("torus", dims="2x2"),
        target="embedded",
        switch_class=switch_class(),
        out_dir=tmp_path_factory.mktemp("options"),
        lock_timeout=600,
    )
    try:
        yield built
    finally:
        built.stop()


def qdisc(interface: str) -> str:
    return subprocess.run(["tc", "qdisc", "show", "dev", interface], capture_output=True, text=True).stdout


@pytest.mark.skipif(os.environ.get("TWINNET_TEST_STANDIN") == "1", reason="the stand-in has no side channel")
def test_set_link_rates_reaches_every_card_port(network: TwinnetNetwork) -> None:
    from p4switch.daemon.side_channel import request

    network.set_link_rates(500)
    for card in network.cards.values():
        ports = request(card.control_target, {"cmd": "stats"})["ports"]
        assert [port["rate_pps"] for port in ports] == [500] * len(card.data_ports())
    network.set_link_rates(None)
    for card in network.cards.values():
        assert all(
            port["rate_pps"] is None for port in request(card.control_target, {"cmd": "stats"})["ports"]
        )


def test_a_second_network_waits_then_refuses(network: TwinnetNetwork) -> None:
    with pytest.raises(NetworkBusyError, match="another twinnet network is running"):
        build_network(network.topology, switch_class=network.switch_class, lock_timeout=0.3, progress=None)
    assert sorted(network.alive_cards()) == sorted(network.cards)


def test_leftover_interfaces_are_refused(network: TwinnetNetwork, tmp_path) -> None:
    network.stop()
    created = subprocess.run(
        ["ip", "link", "add", "c0-eth1", "type", "veth", "peer", "name", "tnleft0"],
        capture_output=True,
        text=True,
    )
    if created.returncode != 0:
        pytest.skip(f"cannot create c0-eth1 here: {created.stderr.strip()}")
    try:
        with pytest.raises(NetworkError, match="c0-eth1 already exist"):
            build_network(
                network.topology,
                switch_class=network.switch_class,
                out_dir=tmp_path,
                lock_timeout=600,
                progress=None,
            )
    finally:
        subprocess.run(["ip", "link", "del", "tnleft0"], capture_output=True)


def test_link_delay_is_on_card_links_only(network: TwinnetNetwork, tmp_path) -> None:
    topology = network.topology
    if netem_missing():
        with pytest.raises(NetworkError, match="needs tc netem"):
            build_network(topology, switch_class=network.switch_class, link_delay="2ms", progress=None)
        return
    with build_network(
        topology,
        switch_class=network.switch_class,
        out_dir=tmp_path,
        link_delay="2ms",
        lock_timeout=600,
        progress=None,
    ):
        for link in topology.links:
            for end in (link.a, link.b):
                if end.node in topology.cards:
                    shown = qdisc(f"{end.node}-eth{end.port}")
                    if link.kind == "host":
                        assert "netem" not in shown
                    else:
                        assert "netem" in shown and "delay 2ms" in shown, shown
