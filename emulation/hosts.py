"""Hosts (PEs): Mininet hosts in their own network namespaces, configured as docs/contracts.md says.

Each host ``h<pe>`` has one interface ``h<pe>-eth0`` with the PE's address and MAC
(topologies/addressing.py), in 10.0.0.0/8 with no default route; a permanent ARP
entry for every other host (no ARP ever crosses the cards); IPv6 off in its
namespace; checksum/TSO/GSO/GRO offloads off; device MTU :data:`~emulation.links.LINK_MTU`
(a probe arriving with a full trace fits) and route MTU :data:`~emulation.links.HOST_IP_MTU`
(its own IP packets stay at 1500 bytes).

The set-up of all hosts runs in parallel: one command is sent to every host's
shell, then the answers are collected. The ARP entries, n(n-1) for n hosts, are written
by this process over rtnetlink in batches (emulation.neighbours): through ``ip`` they took
most of a 1,024-host bring-up's host set-up.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mininet.node import Host

from emulation.links import ETHTOOL_OFFLOADS_OFF, HOST_IP_MTU, LINK_MTU, interface_name
from emulation.neighbours import neighbour_attributes, write_neighbours
from emulation.state import MarkedPopenMixin
from topologies.addressing import HOST_NETWORK, HOST_PREFIX_LEN
from topologies.model import Host as ModelHost
from topologies.model import PortRef

Progress = Callable[[str], None]

#: Run in each host's shell as soon as it exists, before its interface is created in its namespace.
IPV6_OFF_COMMAND = (
    "echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6; echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6"
)


class TwinnetHost(MarkedPopenMixin, Host):
    """A PE's Mininet host; every process it starts carries the run's markers (see emulation.state)."""


def host_interface(host: ModelHost) -> str:
    return interface_name(PortRef(host.name, 0))


def ip_batch_lines(host: ModelHost, mtu: int = LINK_MTU, ip_mtu: int = HOST_IP_MTU) -> list[str]:
    """``ip -batch`` lines that configure one host's interface and route (its ARP table: write_arp_tables)."""
    interface = host_interface(host)
    return [
        "link set dev lo up",
        f"link set dev {interface} mtu {mtu} up",
        f"address add {host.ip}/{HOST_PREFIX_LEN} dev {interface} noprefixroute",
        f"route add {HOST_NETWORK} dev {interface} src {host.ip} mtu lock {ip_mtu}",
    ]


def write_arp_tables(namespaces: dict[str, str], hosts: list[ModelHost]) -> None:
    """A permanent ARP entry for every other host in each host's table (emulation.neighbours), two
    hosts at a time (the kernel's part of one overlaps the other's message building)."""
    entries = {host.pe: neighbour_attributes(host.ip, host.mac) for host in hosts}

    def write(host: ModelHost) -> None:
        others = [entry for pe, entry in entries.items() if pe != host.pe]
        write_neighbours(namespaces[host.name], host_interface(host), others)

    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(write, hosts))


def setup_command(host: ModelHost, batch_file: Path) -> str:
    """The one shell command that configures a host (run in its namespace)."""
    interface = host_interface(host)
    return (
        f"echo 1 > /proc/sys/net/ipv6/conf/{interface}/disable_ipv6; "
        f"ethtool -K {interface} {ETHTOOL_OFFLOADS_OFF} > /dev/null 2>&1; "
        f"ip -batch {batch_file} && echo twinnet-host-ok"
    )


def configure_hosts(nodes: dict[str, TwinnetHost], hosts: list[ModelHost], work_dir: Path) -> None:
    """Configure every host in parallel; raise RuntimeError naming the hosts whose set-up failed.

    The ``ip -batch`` files (one per host, inspectable afterwards) go to `work_dir`; the ARP
    entries are written afterwards, from this process (NeighbourError if the kernel refuses one).
    """
    work_dir.mkdir(parents=True, exist_ok=True)
    for host in hosts:
        batch_file = work_dir / f"{host.name}.ip"
        batch_file.write_text("\n".join(ip_batch_lines(host)) + "\n")
        nodes[host.name].sendCmd(setup_command(host, batch_file))
    failed = []
    for host in hosts:
        node = nodes[host.name]
        output = node.waitOutput()
        if "twinnet-host-ok" not in output:
            failed.append(f"{host.name}: {output.strip()[:300]}")
        interface = node.intf(host_interface(host))
        interface.ip, interface.prefixLen, interface.mac = host.ip, HOST_PREFIX_LEN, host.mac
    if failed:
        raise RuntimeError("host set-up failed:\n" + "\n".join(failed[:10]))
    write_arp_tables({host.name: f"/proc/{nodes[host.name].pid}/ns/net" for host in hosts}, hosts)


def disable_ipv6_at_start(nodes: Iterable[TwinnetHost]) -> None:
    """IPv6 off in each host's namespace before any interface is created there (in parallel)."""
    nodes = list(nodes)
    for node in nodes:
        node.sendCmd(IPV6_OFF_COMMAND)
    for node in nodes:
        node.waitOutput()
