"""The hosts' packet sockets are closed together, every one of them."""

from __future__ import annotations

import socket

from emulation.traffic import close_sockets


def test_every_socket_is_closed() -> None:
    pairs = [socket.socketpair() for _ in range(40)]
    sockets = [s for pair in pairs for s in pair]
    close_sockets(sockets)
    assert all(s.fileno() == -1 for s in sockets)
    close_sockets([])  # nothing to close is not an error
