"""A real network per topology (twin 4-ary 2-tree; 3DT 2x4x2, parallel links), checked from the kernel's view.

One network per topology for the whole module; the last test tears it down and
checks that nothing of it is left. Set TWINNET_TEST_STANDIN=1 to run the cards
as the tests' stand-in process instead of the embedded target.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest
from network_checks import (
    check_card_interfaces,
    check_host,
    check_links,
    check_state_file,
    leftovers,
)

from emulation.network import TwinnetNetwork, build_network
from emulation.state import current_link, read_current_state, read_state
from emulation.switches import address_open
from topologies.build import build_topology

pytestmark = pytest.mark.root

TOPOLOGIES = {
    "twin-4-ary-2-tree": lambda: build_topology("fattree", k=4, n=2, twin=True),
    "3DT-2x4x2": lambda: build_topology("ndt", dims="2x4x2"),
}


def switch_class():
    if os.environ.get("TWINNET_TEST_STANDIN") == "1":
        from standin_switch import StandinSwitch

        return StandinSwitch
    return None


@pytest.fixture(scope="module", params=sorted(TOPOLOGIES))
def network(request, tmp_path_factory) -> TwinnetNetwork:
    topology = TOPOLOGIES[request.param]()
    built = build_network(
        topology,
        target="embedded",
        switch_class=switch_class(),
        out_dir=tmp_path_factory.mktemp(request.param),
        lock_timeout=600,
    )
    try:
        yield built
    finally:
        built.stop()


def test_parallel_links_are_in_the_model(network: TwinnetNetwork) -> None:
    pairs = [tuple(sorted((link.a.node, link.b.node))) for link in network.topology.links]
    has_parallel = len(pairs) != len(set(pairs))
    assert has_parallel == (network.topology.family == "ndt")


def test_every_link_is_a_veth_with_the_model_names_and_peers(network: TwinnetNetwork) -> None:
    host_pids = {host.name: host.pid for host in read_current_state().hosts}
    check_links(network.topology, host_pids)


def test_hosts_are_configured(network: TwinnetNetwork) -> None:
    for host in read_current_state().hosts:
        check_host(network.topology, host.pe, host.pid)


def test_card_interfaces_have_ipv6_and_offloads_off(network: TwinnetNetwork) -> None:
    check_card_interfaces(network.topology)


def test_state_file_lists_live_cards_and_hosts(network: TwinnetNetwork) -> None:
    check_state_file(network.topology)
    record = read_state(network.out_dir / "state.json")
    assert record.run_id == read_current_state().run_id == network.run_id


def test_every_card_serves_grpc_on_a_socket_only_its_owner_reaches(network: TwinnetNetwork) -> None:
    state = read_current_state()
    folder = Path(state.socket_dir)
    assert (
        folder.is_dir()
        and stat.S_IMODE(folder.stat().st_mode) == 0o700
        and folder.stat().st_uid == os.geteuid()
    )
    for card in state.cards:
        group = network.cards[card.name].group if hasattr(network.cards[card.name], "group") else None
        own = f"p{group.index}" if group is not None else card.name  # a shared process: its own socket
        assert card.grpc_address == f"unix:{folder / own}.p4rt" and address_open(card.grpc_address), card
        assert card.control == f"unix:{folder / card.name}.ctl" or network.control == "tcp", card


def test_mininet_sees_the_model_ports(network: TwinnetNetwork) -> None:
    for name, card in network.cards.items():
        expected = [
            ref.port for ref in network.topology.card_ports(name) if network.topology.is_connected(ref)
        ]
        assert [port for port, _ in card.data_ports()] == expected
        assert network.mininet[name] is card
    assert network.host(0).IP() == network.topology.hosts[0].ip


def test_kill_card_stops_only_that_card(network: TwinnetNetwork) -> None:
    victim = sorted(network.cards)[1]
    card = network.cards[victim]
    pid = card.switch_pid
    shared = getattr(card, "group", None) is not None and len(card.group.cards) > 1
    network.kill_card(victim)
    if shared:  # the process goes on with its other cards; the card's side channel is gone
        assert Path(f"/proc/{pid}").exists() and not address_open(str(card.control_target))
        assert any(other.is_alive() for other in card.group.cards)
    else:
        assert not Path(f"/proc/{pid}").exists()
    assert network.dead_cards() == [victim]
    assert sorted(network.alive_cards()) == sorted(set(network.cards) - {victim})
    assert read_current_state().card(victim).killed


def test_teardown_leaves_nothing(network: TwinnetNetwork) -> None:
    state = read_current_state()
    interfaces = [name for card in state.cards for name in card.interfaces]
    pids = [card.pid for card in state.cards] + [host.pid for host in state.hosts]
    # processes left running in a host, as traffic tools would be: started with popen and in the background
    pids.append(network.host(0).popen(["sleep", "1000"]).pid)
    pids.append(int(network.host(1).cmd("sleep 1000 & echo $!").split()[-1]))
    started = time.monotonic()
    network.stop()
    assert time.monotonic() - started < 30
    assert leftovers(state.run_id, interfaces, pids) == []
    assert not current_link().exists()
    assert read_state(network.out_dir / "state.json").status == "stopped"
    assert not Path(state.socket_dir).exists()
