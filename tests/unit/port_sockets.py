"""A data-plane port's socket for tests without interfaces or root.

One end of a datagram socket pair: the data plane reads and writes it with the calls it makes on
a packet socket (``recvmmsg`` and ``sendmmsg`` in p4switch/daemon/packet_io.py, ``recvmsg`` and
``send`` on its general path), and a datagram keeps a frame's bounds as a packet socket does (a
frame longer than the reader's buffer comes cut, with MSG_TRUNC). The test feeds frames into the
other end and reads what the data plane sent from it.
"""

from __future__ import annotations

import select
import socket

from p4switch.daemon.ports import ETH_P_ALL


class PairSocket:
    """The port's end of a socket pair, as a Port holds its packet socket; `feed` and `sent` are the
    test's end."""

    def __init__(self) -> None:
        self.port_end, self.test_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        for end in (self.port_end, self.test_end):
            end.setblocking(False)
        self._sent: list[bytes] = []

    # ----- the port's side (what the data plane calls) ------------------------------------------
    def fileno(self) -> int:
        return self.port_end.fileno()

    def recvmsg(self, size: int, ancillary_size: int = 0) -> tuple[bytes, list, int, tuple]:
        """The next frame, with a packet socket's address of an incoming frame (no VLAN tag taken off)."""
        frame, _, flags, _ = self.port_end.recvmsg(size, ancillary_size)
        return frame, [], flags, ("fake", ETH_P_ALL, 0, 1, b"")

    def send(self, frame: bytes) -> int:
        return self.port_end.send(frame)

    def getsockopt(self, level: int, option: int, size: int) -> bytes:
        """PACKET_STATISTICS: no frame dropped for a full buffer."""
        return bytes(size)

    def close(self) -> None:
        self.port_end.close()
        self.test_end.close()

    # ----- the test's side ----------------------------------------------------------------------
    def feed(self, frame: bytes) -> None:
        """Queue `frame` for the port (BlockingIOError while the pair holds as much as it can)."""
        self.test_end.send(frame)

    def waiting(self) -> bool:
        """Whether a frame waits for the port."""
        return bool(select.select([self.port_end], [], [], 0)[0])

    @property
    def sent(self) -> list[bytes]:
        """Every frame the port has sent, in order."""
        while True:
            try:
                self._sent.append(self.test_end.recv(1 << 20))
            except BlockingIOError:
                return self._sent
