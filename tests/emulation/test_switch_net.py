"""Network namespaces and veth pairs for the switch tests (names start with ``tsw``), and host-side sockets.

Switch-side interfaces stay in the root namespace (as Mininet's switch interfaces do);
each host end goes into its own namespace, so the kernel of the test machine never
routes or answers on them. IPv6 is turned off on every interface so that no router
solicitation or MLD report lands on a switch port. ``Lab.close()`` removes exactly
what the lab created, also after a failure.
"""

from __future__ import annotations

import ctypes
import os
import select
import socket
import subprocess
import threading
import time

import pytest

from emulation.links import prepare_root_interfaces

CLONE_NEWNET = 0x40000000
ETH_P_ALL = 0x0003
TEST_ETHERTYPE = 0x88B6
PACKET_IGNORE_OUTGOING = 23
_libc = ctypes.CDLL(None, use_errno=True)


def run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True)


class Lab:
    """Namespaces and veth pairs with a per-process prefix."""

    def __init__(self, tag: str) -> None:
        self.prefix = f"tsw{os.getpid() % 10000:04d}{tag}"
        self.namespaces: list[str] = []
        self.root_interfaces: list[str] = []

    def _name(self, suffix: str) -> str:
        name = f"{self.prefix}{suffix}"
        assert len(name) <= 15, name
        return name

    def _quiet_up(self, interface: str, namespace: str | None = None) -> None:
        prefix = ("ip", "netns", "exec", namespace) if namespace else ()
        subprocess.run(
            (*prefix, "sysctl", "-q", "-w", f"net.ipv6.conf.{interface}.disable_ipv6=1"), capture_output=True
        )
        run(*prefix, "ip", "link", "set", interface, "up")

    def host_link(self, switch_suffix: str, host: str) -> tuple[str, str]:
        """A veth pair: switch end in the root namespace, host end ``eth0`` in namespace ``host``."""
        namespace = self._name(host)
        if namespace not in self.namespaces:
            run("ip", "netns", "add", namespace)
            self.namespaces.append(namespace)
        switch_end, host_end = self._name(switch_suffix), self._name(host + "h")
        run("ip", "link", "add", switch_end, "type", "veth", "peer", "name", host_end)
        self.root_interfaces.append(switch_end)
        run("ip", "link", "set", host_end, "netns", namespace)
        run("ip", "netns", "exec", namespace, "ip", "link", "set", host_end, "name", "eth0")
        prepare_root_interfaces([switch_end])  # as twinnet's links: IPv6 and offloads off, up
        self._quiet_up("eth0", namespace)
        return switch_end, namespace

    def switch_link(self, suffix_a: str, suffix_b: str) -> tuple[str, str]:
        """A veth pair between two switches, both ends in the root namespace."""
        a, b = self._name(suffix_a), self._name(suffix_b)
        run("ip", "link", "add", a, "type", "veth", "peer", "name", b)
        self.root_interfaces.append(a)
        prepare_root_interfaces([a, b])  # as twinnet's links: IPv6 and offloads off, up
        return a, b

    def close(self) -> None:
        for interface in self.root_interfaces:
            subprocess.run(("ip", "link", "del", interface), capture_output=True)
        for namespace in self.namespaces:
            subprocess.run(("ip", "netns", "del", namespace), capture_output=True)


def host_socket(namespace: str, interface: str = "eth0") -> socket.socket:
    """A raw socket on ``interface`` inside ``namespace`` (created by a thread that enters it)."""
    made: dict[str, object] = {}

    def enter_and_open() -> None:
        try:
            fd = os.open(f"/var/run/netns/{namespace}", os.O_RDONLY)
            try:
                if _libc.setns(fd, CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns {namespace}")
            finally:
                os.close(fd)
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            sock.setsockopt(263, PACKET_IGNORE_OUTGOING, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
            sock.bind((interface, ETH_P_ALL))
            made["sock"] = sock
        except Exception as error:
            made["error"] = error

    thread = threading.Thread(target=enter_and_open)
    thread.start()
    thread.join()
    if "error" in made:
        raise made["error"]  # type: ignore[misc]
    return made["sock"]  # type: ignore[return-value]


def frame(dst: int, payload: bytes = b"", ethertype: int = TEST_ETHERTYPE, size: int = 64) -> bytes:
    """An Ethernet frame to MAC ``dst`` from 02:00:00:00:00:01 carrying ``payload``, padded to ``size``."""
    data = dst.to_bytes(6, "big") + bytes.fromhex("020000000001") + ethertype.to_bytes(2, "big") + payload
    return data + bytes(max(0, size - len(data)))


def receive(sock: socket.socket, count: int, timeout: float, ethertype: int = TEST_ETHERTYPE) -> list[bytes]:
    """Up to ``count`` frames of ``ethertype`` within ``timeout`` seconds."""
    frames: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(frames) < count:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([sock], [], [], left)[0]:
            break
        data = sock.recv(65535)
        if int.from_bytes(data[12:14], "big") == ethertype:
            frames.append(data)
    return frames


def drain(sock: socket.socket) -> None:
    while select.select([sock], [], [], 0)[0]:
        sock.recv(65535)


@pytest.mark.root
def test_lab_links_carry_frames_between_namespace_and_root() -> None:
    lab = Lab("n")
    try:
        switch_end, namespace = lab.host_link("s1", "a")
        host = host_socket(namespace)
        root = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        root.bind((switch_end, ETH_P_ALL))
        host.send(frame(0xAB, b"hello"))
        (got,) = receive(root, 1, 2.0)
        assert got[:6] == bytes.fromhex("0000000000ab") and got[14:19] == b"hello"
        root.close()
        host.close()
    finally:
        lab.close()
    assert not os.path.exists(f"/var/run/netns/{lab.prefix}a")
