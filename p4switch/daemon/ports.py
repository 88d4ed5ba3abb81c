"""Switch ports: AF_PACKET raw sockets bound to interfaces, and optional pcap capture.

A port reads every frame that arrives on its interface and writes whole Ethernet
frames to it. The copies of the switch's own outgoing frames are suppressed with
``PACKET_IGNORE_OUTGOING`` where the kernel has it (Linux 4.20+) and skipped by
their ``PACKET_OUTGOING`` packet type otherwise.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from dataclasses import dataclass
from typing import BinaryIO

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
RECEIVE_BUFFER_BYTES = 4 * 1024 * 1024
SEND_BUFFER_BYTES = 4 * 1024 * 1024
MAX_FRAME_BYTES = 65535


def open_port_socket(interface: str) -> tuple[socket.socket, bool]:
    """A non-blocking raw socket bound to ``interface``; also whether the kernel drops outgoing copies."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER_BYTES)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER_BYTES)
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

    def open(self, pcap_dir: str | None = None) -> None:
        """Open the socket (and pcap files ``<iface>_in.pcap`` / ``<iface>_out.pcap`` if asked)."""
        self.sock, self.ignores_outgoing = open_port_socket(self.interface)
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

    def snapshot(self) -> dict:
        return {
            "port": self.number,
            "interface": self.interface,
            "rx_frames": self.rx_frames,
            "tx_frames": self.tx_frames,
            "tx_errors": self.tx_errors,
        }


def parse_port_spec(spec: str) -> tuple[int, str]:
    """``"3@c7-eth3"`` -> ``(3, "c7-eth3")`` (bmv2's ``-i`` form)."""
    number, sep, interface = spec.partition("@")
    if not sep or not interface or not number.isdigit():
        raise ValueError(f"interface must be PORT@IFACE, not {spec!r}")
    return int(number), interface
