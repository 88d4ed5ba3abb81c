"""Switch ports: AF_PACKET raw sockets bound to interfaces, and optional pcap capture.

A port reads every frame that arrives on its interface and writes whole Ethernet
frames to it. The copies of the switch's own outgoing frames are suppressed with
``PACKET_IGNORE_OUTGOING`` where the kernel has it (Linux 4.20+) and skipped by
their ``PACKET_OUTGOING`` packet type otherwise.

The kernel removes the outer 802.1Q/802.1ad tag of a received frame before a packet
socket sees it (VLAN acceleration: the tag travels beside the frame) and hands it
over in ``PACKET_AUXDATA``; ``with_vlan_tag`` puts it back, so that the program sees
the frame as it was sent. A tagged frame too short to untag (under 20 bytes) is freed
by the kernel before any socket sees it; such frames are counted as the difference
between the interface's receive counter and what the socket got (``unseen_frames``).
A frame longer than ``MAX_FRAME_BYTES`` arrives truncated (``MSG_TRUNC``) and is
counted as an oversize drop (the data plane's ``oversize_drops``), never run through the program cut short.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import BinaryIO

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
PACKET_STATISTICS = 6
PACKET_AUXDATA = 8
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
ETH_P_8021Q = 0x8100
#: struct tpacket_auxdata: status, len, snaplen, mac, net, vlan_tci, vlan_tpid
AUXDATA = struct.Struct("=IIIHHHH")
ANCILLARY_BYTES = socket.CMSG_SPACE(AUXDATA.size)
RECEIVE_BUFFER_BYTES = 4 * 1024 * 1024
SEND_BUFFER_BYTES = 4 * 1024 * 1024
#: the largest frame a port takes: an Ethernet frame of the largest MTU a veth has (65,535),
#: without the tag the kernel hands over beside it
MAX_FRAME_BYTES = 65535 + 14
#: port numbers are v1model's bit<9> egress_spec
MAX_PORT_NUMBER = 511


def with_vlan_tag(frame: bytes, auxdata: bytes) -> bytes:
    """``frame`` with the VLAN tag the kernel took off (``PACKET_AUXDATA``) put back after the MACs."""
    status, _, _, _, _, tci, tpid = AUXDATA.unpack_from(auxdata)
    if not status & TP_STATUS_VLAN_VALID:
        return frame
    if not status & TP_STATUS_VLAN_TPID_VALID:
        tpid = ETH_P_8021Q
    return frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]


def interface_rx_frames(interface: str) -> int | None:
    """The kernel's receive counter of ``interface`` (sysfs: one small file, whatever the machine's size)."""
    if "/" in interface or interface in (".", ".."):
        return None
    try:
        with open(f"/sys/class/net/{interface}/statistics/rx_packets") as handle:
            return int(handle.read())
    except (OSError, ValueError):
        return None


def open_port_socket(interface: str) -> tuple[socket.socket, bool]:
    """A non-blocking raw socket bound to ``interface``; also whether the kernel drops outgoing copies."""
    # Protocol 0: the socket receives nothing until bind() names the interface and ETH_P_ALL. Opened
    # with ETH_P_ALL it would take every interface's frames until bound, and bind() would then unhook it
    # with a wait for an RCU grace period: ~19 ms a socket, 50 s for a process with 2,560 ports.
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER_BYTES)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
        sock.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
        try:
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            ignores_outgoing = True
        except OSError:
            ignores_outgoing = False
        sock.bind((interface, ETH_P_ALL))
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock, ignores_outgoing


class PcapWriter:
    """A minimal pcap (microsecond, Ethernet link type) file writer."""

    def __init__(self, path: str) -> None:
        self._file: BinaryIO = open(path, "wb")  # noqa: SIM115 - closed by close()
        self._file.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, MAX_FRAME_BYTES, 1))

    def write(self, frame: bytes) -> None:
        now = time.time()
        seconds = int(now)
        self._file.write(struct.pack("<IIII", seconds, int((now - seconds) * 1e6), len(frame), len(frame)))
        self._file.write(frame)

    def close(self) -> None:
        self._file.close()


@dataclass
class Port:
    """One switch port: its number, interface, socket and counters."""

    number: int
    interface: str
    sock: socket.socket | None = None
    ignores_outgoing: bool = False
    rx_frames: int = 0
    tx_frames: int = 0
    tx_errors: int = 0
    pcap_in: PcapWriter | None = None
    pcap_out: PcapWriter | None = None
    socket_drops: int = 0
    interface_rx_origin: int | None = None

    def open(self, pcap_dir: str | None = None) -> None:
        """Open the socket (and pcap files ``<iface>_in.pcap`` / ``<iface>_out.pcap`` if asked)."""
        self.sock, self.ignores_outgoing = open_port_socket(self.interface)
        self.interface_rx_origin = interface_rx_frames(self.interface)
        if pcap_dir:
            os.makedirs(pcap_dir, exist_ok=True)
            self.pcap_in = PcapWriter(os.path.join(pcap_dir, f"{self.interface}_in.pcap"))
            self.pcap_out = PcapWriter(os.path.join(pcap_dir, f"{self.interface}_out.pcap"))

    def send(self, frame: bytes) -> None:
        """Write one frame; a full or failing interface counts a transmit error."""
        try:
            self.sock.send(frame)
            self.tx_frames += 1
        except OSError:
            self.tx_errors += 1
            return
        if self.pcap_out is not None:
            self.pcap_out.write(frame)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        for writer in (self.pcap_in, self.pcap_out):
            if writer is not None:
                writer.close()
        self.pcap_in = self.pcap_out = None

    def _read_socket_drops(self) -> int:
        """Frames the kernel dropped for a full socket buffer since the port opened."""
        if self.sock is not None:
            try:
                _, drops = struct.unpack("II", self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
                self.socket_drops += drops  # the kernel resets its counters on every read
            except OSError:
                pass
        return self.socket_drops

    def snapshot(self) -> dict:
        """Counters; ``unseen_frames``: received by the interface but by no socket read (see the module doc).

        Frames still waiting in the socket buffer count as unseen until they are read.
        """
        socket_drops = self._read_socket_drops()
        now = interface_rx_frames(self.interface)
        origin = self.interface_rx_origin
        interface_rx = None if now is None or origin is None else now - origin
        unseen = None if interface_rx is None else max(0, interface_rx - self.rx_frames - socket_drops)
        return {
            "port": self.number,
            "interface": self.interface,
            "rx_frames": self.rx_frames,
            "tx_frames": self.tx_frames,
            "tx_errors": self.tx_errors,
            "socket_drops": socket_drops,
            "interface_rx_frames": interface_rx,
            "unseen_frames": unseen,
        }


#: Threads that close a process's ports together (see close_ports).
CLOSE_THREADS = 64


def close_ports(ports: Sequence[Port]) -> None:
    """Close ports in parallel: each packet socket's close waits for an RCU grace period, so a
    process of 64 cards (320 ports) or 512 (2,560) spent most of its stop closing one by one."""
    if len(ports) <= 1:
        for port in ports:
            port.close()
        return
    with ThreadPoolExecutor(min(CLOSE_THREADS, len(ports)), thread_name_prefix="close-port") as pool:
        list(pool.map(lambda port: port.close(), ports))


def parse_port_spec(spec: str) -> tuple[int, str]:
    """``"3@c7-eth3"`` -> ``(3, "c7-eth3")`` (bmv2's ``-i`` form)."""
    number, sep, interface = spec.partition("@")
    if not sep or not interface or not number.isdigit():
        raise ValueError(f"interface must be PORT@IFACE, not {spec!r}")
    if int(number) > MAX_PORT_NUMBER:
        raise ValueError(f"port number must be 0..{MAX_PORT_NUMBER} (v1model's bit<9>), not {number}")
    return int(number), interface
