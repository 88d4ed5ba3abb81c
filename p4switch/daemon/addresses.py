"""Listening addresses of the switch's control surfaces: ``unix:PATH`` or loopback ``HOST:PORT``.

A Unix domain socket in a directory only its owner can enter is private to the user
who started the switch (the default of the emulation); a TCP address is reachable by
every local user, so it is allowed on loopback only (simple_switch_grpc's form, kept
for tools that need it). ``check_address`` refuses anything else in one line.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterable

UNIX_PREFIX = "unix:"
LOOPBACK_NAMES = ("localhost",)
#: sun_path holds 108 bytes with its terminating NUL
MAX_UNIX_PATH_BYTES = 107


def check_address(address: str) -> str:
    """``address`` if it is ``unix:/absolute/path`` or a loopback ``HOST:PORT`` (port 0..65535).

    Anything else is a ValueError naming the problem.
    """
    if address.startswith(UNIX_PREFIX):
        path = address[len(UNIX_PREFIX) :]
        if not path.startswith("/"):
            raise ValueError(f"a Unix socket address is unix:/absolute/path, not {address!r}")
        if len(path.encode()) > MAX_UNIX_PATH_BYTES:
            raise ValueError(f"Unix socket path longer than {MAX_UNIX_PATH_BYTES} bytes: {path!r}")
        return address
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"expected HOST:PORT or unix:/path, not {address!r}")
    if not 0 <= int(port) <= 65535:
        raise ValueError(f"port must be 0..65535, not {port}")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if bare not in LOOPBACK_NAMES:
        try:
            loopback = ipaddress.ip_address(bare).is_loopback
        except ValueError:
            loopback = False
        if not loopback:
            raise ValueError(
                f"TCP listens on loopback only (127.0.0.1, ::1, localhost), not {host!r}; "
                "other local users can reach it: prefer unix:/path"
            )
    return address


def bound_address(address: str, port: int) -> str:
    """Where a server given ``address`` listens: ``unix:/path`` as given, else HOST:``port`` (as bound)."""
    if address.startswith(UNIX_PREFIX):
        return address
    return f"{address.rsplit(':', 1)[0]}:{port}"


def remove_socket_files(addresses: Iterable[str | None]) -> None:
    """Remove the files of the ``unix:/path`` addresses among ``addresses`` (for an exit without a stop)."""
    for address in addresses:
        if address and address.startswith(UNIX_PREFIX):
            try:
                os.unlink(address[len(UNIX_PREFIX) :])
            except OSError:
                pass
