"""Checks of a running twinnet network from the kernel's own view (ip, ethtool, /proc), not the builder's.

Used by the test_network_* modules. Every function reads the system afresh, so a
check passes only if the network really is as the topology says.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from emulation.links import HOST_IP_MTU, LINK_MTU
from emulation.state import read_current_state
from p4switch.daemon.host_config import read_cards_file
from topologies.model import PortRef, Topology

CARD_INTERFACE = re.compile(r"c\d+-eth\d+")
OFFLOAD_LINES = (
    "rx-checksumming",
    "tx-checksumming",
    "tcp-segmentation-offload",
    "generic-segmentation-offload",
    "generic-receive-offload",
)


def run(*command: str) -> str:
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def in_namespace(pid: int, *command: str) -> str:
    return run("nsenter", "-t", str(pid), "-n", *command)


def links_json(pid: int | None = None) -> dict[str, dict]:
    """`ip -j link show` of the root namespace (pid None) or of process pid's namespace, by name."""
    command = ("ip", "-j", "link", "show")
    text = run(*command) if pid is None else in_namespace(pid, *command)
    return {entry["ifname"]: entry for entry in json.loads(text)}


def name(ref: PortRef) -> str:
    return f"{ref.node}-eth{ref.port}"


def check_links(topology: Topology, host_pids: dict[str, int]) -> None:
    """Every model link exists as a veth pair with the model's interface names, peers, MTU and up state."""
    root = links_json()
    hosts = {host: links_json(pid) for host, pid in host_pids.items()}
    expected_card_interfaces = set()
    for link in topology.links:
        ends = [link.a, link.b]
        card_ends = [ref for ref in ends if ref.node in topology.cards]
        expected_card_interfaces |= {name(ref) for ref in card_ends}
        if len(card_ends) == 2:
            a, b = (root[name(ref)] for ref in card_ends)
            assert a.get("link") == name(card_ends[1]) and b.get("link") == name(card_ends[0]), (link, a, b)
        else:
            card_ref, host_ref = card_ends[0], next(ref for ref in ends if ref.node not in topology.cards)
            card_side = root[name(card_ref)]
            host_side = hosts[host_ref.node][name(host_ref)]
            assert host_side["link_index"] == card_side["ifindex"], (link, card_side, host_side)
            assert card_side["link_index"] == host_side["ifindex"], (link, card_side, host_side)
            assert host_side["mtu"] == LINK_MTU and "UP" in host_side["flags"]
        for ref in card_ends:
            assert root[name(ref)]["mtu"] == LINK_MTU, root[name(ref)]
            assert "UP" in root[name(ref)]["flags"], root[name(ref)]
    present = {interface for interface in root if CARD_INTERFACE.fullmatch(interface)}
    assert present == expected_card_interfaces, sorted(present ^ expected_card_interfaces)[:10]
    for host, interfaces in hosts.items():
        assert set(interfaces) == {"lo", f"{host}-eth0"}, (host, sorted(interfaces))


def check_offloads_off(interface: str, pid: int | None = None) -> None:
    command = ("ethtool", "-k", interface)
    text = run(*command) if pid is None else in_namespace(pid, *command)
    states = dict(
        line.split(":", 1) for line in text.splitlines() if ":" in line and not line.startswith("\t")
    )
    for feature in OFFLOAD_LINES:
        assert states[feature].strip().startswith("off"), (interface, feature, states[feature])


def check_host(topology: Topology, pe: int, pid: int) -> None:
    """Address, MAC, permanent ARP entry for every other host, IPv6 off, offloads off, route MTU."""
    host = topology.hosts[pe]
    interface = f"{host.name}-eth0"
    addresses = json.loads(in_namespace(pid, "ip", "-j", "address", "show", "dev", interface))[0]
    assert addresses["address"] == host.mac
    inet = [(a["local"], a["prefixlen"]) for a in addresses["addr_info"] if a["family"] == "inet"]
    assert inet == [(host.ip, 8)]
    assert not [a for a in addresses["addr_info"] if a["family"] == "inet6"]
    neighbours = json.loads(in_namespace(pid, "ip", "-j", "neigh", "show", "dev", interface))
    entries = {entry["dst"]: (entry["lladdr"], entry["state"]) for entry in neighbours}
    expected = {other.ip: (other.mac, ["PERMANENT"]) for other in topology.hosts if other.pe != pe}
    assert entries == expected
    disabled = in_namespace(
        pid,
        "cat",
        "/proc/sys/net/ipv6/conf/all/disable_ipv6",
        f"/proc/sys/net/ipv6/conf/{interface}/disable_ipv6",
    ).split()
    assert disabled == ["1", "1"]
    routes = in_namespace(pid, "ip", "route", "show")
    assert f"10.0.0.0/8 dev {interface}" in routes and f"mtu lock {HOST_IP_MTU}" in routes, routes
    check_offloads_off(interface, pid)


def check_card_interfaces(topology: Topology) -> None:
    """IPv6 and offloads off on every card interface."""
    for card in topology.cards:
        for ref in topology.card_ports(card):
            if topology.is_connected(ref):
                assert Path(f"/proc/sys/net/ipv6/conf/{name(ref)}/disable_ipv6").read_text().strip() == "1"
                check_offloads_off(name(ref))


def check_state_file(topology: Topology) -> None:
    """The current state lists every card with a live switch started on its ports, and every host's shell."""
    state = read_current_state()
    assert state.status == "running"
    assert sorted(card.name for card in state.cards) == sorted(topology.cards)
    for card in state.cards:
        model = topology.cards[card.name]
        assert card.card_id == model.card_id == card.device_id
        command = Path(f"/proc/{card.pid}/cmdline").read_bytes().split(b"\0")
        words = [word.decode() for word in command if word]
        expected = sorted(
            f"{ref.port}@{name(ref)}" for ref in topology.card_ports(card.name) if topology.is_connected(ref)
        )
        if "--cards" in words:  # a process shared by several cards: the card is in its cards file
            hosted = {c.device_id: c for c in read_cards_file(words[words.index("--cards") + 1])}
            ports = sorted(f"{number}@{interface}" for number, interface in hosted[card.device_id].interfaces)
            assert hosted[card.device_id].control_address == card.control
        else:
            assert words[words.index("--device-id") + 1] == str(card.device_id)
            ports = sorted(words[i + 1] for i, word in enumerate(words) if word == "-i")
        assert ports == expected
        assert words[words.index("--grpc-server-addr") + 1] == card.grpc_address
        assert Path(card.log).exists()
    for host in state.hosts:
        model = topology.hosts[host.pe]
        assert (host.name, host.ip, host.mac) == (model.name, model.ip, model.mac)
        assert f"{host.name}-eth0" in links_json(host.pid)
        assert os.stat(f"/proc/{host.pid}/ns/net").st_ino == host.netns


def leftovers(run_id: str, card_interfaces: list[str], pids: list[int]) -> list[str]:
    """What of a run is still there: interfaces, processes, state. Empty when it is all gone."""
    from emulation.state import marked_processes, state_path

    found = [
        f"interface {interface}"
        for interface in card_interfaces
        if Path(f"/sys/class/net/{interface}").exists()
    ]
    found += [f"process {pid}" for pid in pids if _alive(pid)]
    found += [f"marked process {pid}" for pid, (run, _) in marked_processes().items() if run == run_id]
    if state_path(run_id).exists():
        found.append(f"state file {state_path(run_id)}")
    return found


def _alive(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return text.rsplit(")", 1)[1].split()[0] != "Z"
