"""The veth pairs of a network: names, MACs, MTUs, offloads, created and deleted in batches.

Every link of the topology is one veth pair. A card's port p is interface
``c<id>-eth<p>`` in the root network namespace; a host's end is ``h<pe>-eth0`` in
the host's namespace. All root-namespace interfaces of a run share one Linux link
group (:func:`link_group_for`) and carry the alias ``twinnet:<run id>``, so that the
whole network is deleted with one ``ip link delete group`` (a few tenths of a second
for hundreds of links, where one ``ip link del`` per link takes ~17 ms each) and a
crashed run's interfaces are recognised by ``twinnet clean``.

MTU: a host sends IP packets of up to :data:`HOST_IP_MTU` bytes; the first card
inserts the twinnet header and every card appends a trace entry, so every veth
carries up to :data:`LINK_MTU` = HOST_IP_MTU + :data:`ENCAPSULATION_OVERHEAD`
bytes after the Ethernet header. Hosts' interfaces have the same device MTU (a
probe delivered with its full trace must not be dropped by the receiving veth)
and a route MTU of HOST_IP_MTU, so their own IP traffic stays at 1500.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import re
import socket
import struct
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from p4src.card import MAX_TRACE
from topologies.model import Link, PortRef, Topology

# -- sizes: p4src/card.p4 and p4src/README.md; the same as emulation/packets.py's (a unit test checks),
#    kept here so that the builder and `twinnet clean` do not import scapy

#: The twinnet routing header inserted after Ethernet by the first card (header twinnet_t).
TWINNET_HEADER_BYTES = 20
#: One trace entry (header trace_entry_t).
TRACE_ENTRY_BYTES = 16
#: Bytes the cards may add to a host's frame: routing header plus a full trace stack.
ENCAPSULATION_OVERHEAD = TWINNET_HEADER_BYTES + MAX_TRACE * TRACE_ENTRY_BYTES
#: The IP MTU of hosts: plain IP packets are at most this long.
HOST_IP_MTU = 1500
#: Device MTU of every veth (card-card and host-card): a traced, encapsulated 1500-byte packet fits.
LINK_MTU = HOST_IP_MTU + ENCAPSULATION_OVERHEAD

#: Link groups of twinnet runs: LINK_GROUP_BASE + (owner pid mod 2^16) ("tw" in the upper half).
LINK_GROUP_BASE = 0x7477_0000
ALIAS_PREFIX = "twinnet:"
#: Names of card interfaces (c<id>-eth<port>).
CARD_INTERFACE = re.compile(r"c\d+-eth\d+")


def link_group_for(pid: int) -> int:
    return LINK_GROUP_BASE + (pid & 0xFFFF)


def groups_in_use() -> set[int]:
    """Link groups of the root namespace's interfaces."""
    used = set()
    for entry in Path("/sys/class/net").iterdir():
        group = interface_attribute(entry.name, "netdev_group")
        if group is not None:
            used.add(int(group))
    return used


def free_link_group(pid: int) -> int:
    """A twinnet link group no interface uses yet, preferring link_group_for(pid)."""
    used = groups_in_use()
    for offset in range(0x10000):
        group = LINK_GROUP_BASE + ((pid + offset) & 0xFFFF)
        if group not in used:
            return group
    raise OSError("every twinnet link group is in use: run `twinnet clean`")


def is_twinnet_group(group: int) -> bool:
    return LINK_GROUP_BASE <= group <= LINK_GROUP_BASE + 0xFFFF


def interface_name(ref: PortRef) -> str:
    """``c7-eth3`` for card c7 port 3, ``h5-eth0`` for host h5 (Mininet's names)."""
    return f"{ref.node}-eth{ref.port}"


def card_port_mac(card_id: int, port: int) -> str:
    """Locally administered MAC of a card port: 02:01, the card id in 24 bits, the port in 8."""
    if not 0 <= card_id < 1 << 24 or not 0 <= port < 256:
        raise ValueError(f"card id {card_id} / port {port} out of the MAC scheme's range")
    return "02:01:" + ":".join(f"{(card_id >> shift) & 0xFF:02x}" for shift in (16, 8, 0)) + f":{port:02x}"


@dataclass(frozen=True)
class VethEnd:
    """One end of a veth pair: its name, MAC, and the host shell pid whose namespace holds it (None: root)."""

    ref: PortRef
    name: str
    mac: str
    namespace_pid: int | None = None


@dataclass(frozen=True)
class Veth:
    """The veth pair of one topology link; `root` is always in the root namespace."""

    link: Link
    root: VethEnd
    other: VethEnd


def plan_veths(topology: Topology, host_pids: dict[str, int]) -> list[Veth]:
    """The veth pair of every link: card ends in the root namespace, host ends in their host's."""
    from topologies.addressing import host_mac

    pes = {host.name: host.pe for host in topology.hosts}

    def end(ref: PortRef) -> VethEnd:
        if ref.node in topology.cards:
            return VethEnd(
                ref, interface_name(ref), card_port_mac(topology.cards[ref.node].card_id, ref.port)
            )
        return VethEnd(ref, interface_name(ref), host_mac(pes[ref.node]), host_pids[ref.node])

    veths = []
    for link in topology.links:
        a, b = end(link.a), end(link.b)
        if a.namespace_pid is not None:
            a, b = b, a
        if a.namespace_pid is not None:
            raise ValueError(f"link {link.a} - {link.b} joins two hosts: twinnet links end on a card")
        veths.append(Veth(link, a, b))
    return veths


def root_interfaces(veths: Iterable[Veth]) -> list[str]:
    """Names of all interfaces the plan puts in the root namespace."""
    names = []
    for veth in veths:
        names.append(veth.root.name)
        if veth.other.namespace_pid is None:
            names.append(veth.other.name)
    return names


def existing_interfaces(names: Iterable[str]) -> list[str]:
    """Those of `names` that exist in the root namespace now."""
    return [name for name in names if Path(f"/sys/class/net/{name}").exists()]


def create_veths(veths: list[Veth], group: int, alias: str, mtu: int = LINK_MTU) -> None:
    """Create every pair (down), root-namespace ends in `group`, then label those with `alias`.

    Two ``ip -batch`` runs: ``ip link add`` takes a group but ignores an alias.
    """
    lines = []
    for veth in veths:
        root, other = veth.root, veth.other
        line = (
            f"link add name {root.name} address {root.mac} mtu {mtu} group {group} "
            f"type veth peer name {other.name} address {other.mac} mtu {mtu}"
        )
        line += f" group {group}" if other.namespace_pid is None else f" netns {other.namespace_pid}"
        lines.append(line)
    run_ip_batch(lines)
    run_ip_batch([f"link set dev {name} alias {alias}" for name in root_interfaces(veths)])


def prepare_root_interfaces(names: Iterable[str]) -> None:
    """IPv6 off and checksum/TSO/GSO/GRO offloads off on root-namespace interfaces, then bring them up."""
    names = list(names)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as control:
        for name in names:
            disable_ipv6(name)
            disable_offloads(control, name)
    run_ip_batch([f"link set dev {name} up" for name in names])


def disable_ipv6(name: str) -> None:
    """Turn IPv6 off on one root-namespace interface (nothing to do if the kernel has no IPv6)."""
    path = Path(f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6")
    if path.exists():
        path.write_text("1")


# ethtool ioctl commands and the feature string set (linux/ethtool.h).
_SIOCETHTOOL = 0x8946
_ETHTOOL_GSTRINGS = 0x1B
_ETHTOOL_GSSET_INFO = 0x37
_ETHTOOL_SFEATURES = 0x3B
_ETH_SS_FEATURES = 4
_ETH_GSTRING_LEN = 32

#: Kernel feature names turned off on every veth: checksum offloads, TSO (all variants), GSO, GRO.
OFFLOAD_FEATURES = re.compile(
    r"tx-checksum-.*|rx-checksum|tx-tcp.*-segmentation|tx-generic-segmentation|rx-gro.*"
)
#: The same for a shell (hosts' namespaces): ``ethtool -K <if> ...``.
ETHTOOL_OFFLOADS_OFF = "rx off tx off tso off gso off gro off"

_feature_names: list[str] = []


def _ethtool(control: socket.socket, name: str, request: ctypes.Array) -> None:
    ifreq = struct.pack("16sP", name.encode(), ctypes.addressof(request)).ljust(40, b"\0")
    fcntl.ioctl(control.fileno(), _SIOCETHTOOL, ifreq)


def feature_names(control: socket.socket, name: str) -> list[str]:
    """The kernel's offload feature names, in bit order (the same for every interface)."""
    if not _feature_names:
        info = ctypes.create_string_buffer(
            struct.pack("IIQI", _ETHTOOL_GSSET_INFO, 0, 1 << _ETH_SS_FEATURES, 0)
        )
        _ethtool(control, name, info)
        count = struct.unpack_from("I", info.raw, 16)[0]
        strings = ctypes.create_string_buffer(
            struct.pack("III", _ETHTOOL_GSTRINGS, _ETH_SS_FEATURES, count) + bytes(count * _ETH_GSTRING_LEN)
        )
        _ethtool(control, name, strings)
        raw = strings.raw[12:]
        _feature_names.extend(
            raw[i * _ETH_GSTRING_LEN : (i + 1) * _ETH_GSTRING_LEN].split(b"\0")[0].decode()
            for i in range(count)
        )
    return _feature_names


def disable_offloads(control: socket.socket, name: str) -> None:
    """Checksum, TSO, GSO and GRO offloads off on `name`, in the namespace `control` was opened in.

    One SIOCETHTOOL ioctl (ETHTOOL_SFEATURES) per interface: the ``ethtool`` program costs
    ~5 ms a call, seconds for a network of hundreds of interfaces. Features the device
    cannot change are left as they are (as ``ethtool -K`` does).
    """
    names = feature_names(control, name)
    blocks = (len(names) + 31) // 32
    valid = [0] * blocks
    for bit, feature in enumerate(names):
        if OFFLOAD_FEATURES.fullmatch(feature):
            valid[bit // 32] |= 1 << (bit % 32)
    payload = struct.pack("II", _ETHTOOL_SFEATURES, blocks) + b"".join(struct.pack("II", v, 0) for v in valid)
    _ethtool(control, name, ctypes.create_string_buffer(payload))


def delete_link_group(group: int) -> None:
    """Delete every root-namespace interface of `group` (and so their veth peers, wherever they are)."""
    subprocess.run(["ip", "link", "delete", "group", str(group)], capture_output=True, text=True, check=False)


def run_ip_batch(lines: list[str], *, force: bool = False) -> None:
    """Run ``ip -batch -`` on `lines`; raise OSError with ip's message on failure."""
    if not lines:
        return
    command = ["ip", "-force", "-batch", "-"] if force else ["ip", "-batch", "-"]
    result = subprocess.run(
        command, input="\n".join(lines) + "\n", capture_output=True, text=True, check=False
    )
    if result.returncode != 0 and not force:
        raise OSError(f"ip -batch failed: {result.stderr.strip() or result.stdout.strip()}")


def interface_attribute(name: str, attribute: str) -> str | None:
    """A root-namespace interface's /sys/class/net attribute ("ifalias", "netdev_group"), None if absent."""
    try:
        return Path(f"/sys/class/net/{name}/{attribute}").read_text().strip()
    except OSError:
        return None


def twinnet_interfaces() -> dict[str, tuple[int, str]]:
    """Root-namespace interfaces that belong to some twinnet run: name -> (link group, alias).

    An interface belongs to twinnet when it is in a twinnet link group and carries the
    ``twinnet:<run id>`` alias, or (created, not yet labelled) is named like a card port.
    Its alias is "" in the second case.
    """
    found = {}
    for entry in Path("/sys/class/net").iterdir():
        group_text = interface_attribute(entry.name, "netdev_group")
        if group_text is None or not is_twinnet_group(int(group_text)):
            continue
        alias = interface_attribute(entry.name, "ifalias") or ""
        if alias.startswith(ALIAS_PREFIX) or CARD_INTERFACE.fullmatch(entry.name):
            found[entry.name] = (int(group_text), alias)
    return found


def netem_missing() -> str | None:
    """Why netem delays cannot be used here (None if they can): tried on a throw-away veth pair."""
    probe = f"tnnetem{os.getpid() % 100000}"
    created = subprocess.run(
        ["ip", "link", "add", probe, "type", "veth", "peer", "name", probe + "p"],
        capture_output=True,
        text=True,
        check=False,
    )
    if created.returncode != 0:
        return f"cannot create a probe interface: {created.stderr.strip()}"
    try:
        result = subprocess.run(
            ["tc", "qdisc", "add", "dev", probe, "root", "netem", "delay", "1ms"],
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        subprocess.run(["ip", "link", "del", probe], capture_output=True, check=False)
    if result.returncode != 0:
        return f"the kernel has no netem qdisc (sch_netem): {result.stderr.strip()}"
    return None


def add_delay(names: Iterable[str], delay: str) -> None:
    """A netem delay (e.g. "1ms") on the egress of root-namespace interfaces, in one ``tc -batch``."""
    lines = [f"qdisc add dev {name} root netem delay {delay}" for name in names]
    result = subprocess.run(
        ["tc", "-batch", "-"], input="\n".join(lines) + "\n", capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        raise OSError(f"tc cannot add delay {delay!r}: {result.stderr.strip()}")
