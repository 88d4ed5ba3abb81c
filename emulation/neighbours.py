"""The hosts' permanent neighbour (ARP) entries, written over rtnetlink in batches.

Every host has a permanent entry for every other host (docs/contracts.md: no ARP crosses the
cards), so a network of n hosts has n(n-1) of them: 1,047,552 at 1,024 hosts. Through ``ip -batch``
each entry is a request and a wait for its answer (21 ms a host at 1,024 hosts); here the
``RTM_NEWNEIGH`` requests of a host go to the kernel in a few large messages, and only the last of
each asks for an acknowledgement (the kernel reports a failing request without being asked), 6 ms a
host. The netlink socket is opened inside the host's namespace (emulation.netns), so the run process
writes every host's table itself.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
from collections.abc import Sequence

from emulation.netns import entered
from topologies.errors import TwinnetError

RTM_NEWNEIGH = 28
NLMSG_ERROR = 2
NLM_F_REQUEST, NLM_F_ACK, NLM_F_REPLACE, NLM_F_CREATE = 0x1, 0x4, 0x100, 0x400
NUD_PERMANENT = 0x80
NDA_DST, NDA_LLADDR = 1, 2
#: nlmsghdr (length, type, flags, sequence, port id) and ndmsg (family, 3 pad bytes, interface
#: index, state, flags, type)
_HEADER = struct.Struct("=IHHII")
_NDMSG = struct.Struct("=BBHiHBB")
#: an IPv4 NDA_DST attribute and a MAC NDA_LLADDR one, each padded to 4 bytes
_ATTRIBUTES = struct.Struct("=HH4sHH6s2x")
#: seconds to wait for the kernel's answer to a message (it answers in milliseconds)
ANSWER_TIMEOUT_S = 30.0
#: requests per message sent: 1,024 of 48 bytes stay well within a netlink socket's send buffer
REQUESTS_PER_MESSAGE = 1024


class NeighbourError(TwinnetError, RuntimeError):
    """A host's neighbour entries could not be written."""


def neighbour_attributes(ip: str, mac: str) -> bytes:
    """The attributes of one entry: ``ip`` (dotted IPv4) at ``mac`` (colon-separated)."""
    return _ATTRIBUTES.pack(
        8, NDA_DST, socket.inet_aton(ip), 10, NDA_LLADDR, bytes.fromhex(mac.replace(":", ""))
    )


def neighbour_requests(interface_index: int, attributes: Sequence[bytes], sequence: int) -> bytes:
    """One netlink message of RTM_NEWNEIGH requests (create or replace, permanent) on the interface:
    one per entry of `attributes`; the last asks for an acknowledgement with number `sequence`."""
    body = _NDMSG.pack(socket.AF_INET, 0, 0, interface_index, NUD_PERMANENT, 0, 0)
    length = _HEADER.size + len(body) + _ATTRIBUTES.size
    flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE
    quiet = _HEADER.pack(length, RTM_NEWNEIGH, flags, 0, 0) + body
    last = _HEADER.pack(length, RTM_NEWNEIGH, flags | NLM_F_ACK, sequence, 0) + body
    return b"".join([*(quiet + entry for entry in attributes[:-1]), last + attributes[-1]])


def _wait_for_acknowledgement(sock: socket.socket, sequence: int) -> list[int]:
    """The errors (errno values) the kernel reported until it acknowledged request `sequence`."""
    errors = []
    while True:
        data = sock.recv(1 << 16)
        offset = 0
        while offset + _HEADER.size <= len(data):
            length, kind, _flags, number, _port = _HEADER.unpack_from(data, offset)
            if kind == NLMSG_ERROR:
                (code,) = struct.unpack_from("=i", data, offset + _HEADER.size)
                if code:
                    errors.append(-code)
                if number == sequence:
                    return errors
            offset += max(length + 3 & ~3, _HEADER.size)


def write_neighbours(netns: str, interface: str, attributes: Sequence[bytes]) -> None:
    """Permanent neighbour entries (``neighbour_attributes``) on `interface` of namespace `netns` (a
    path); NeighbourError naming the host's namespace and the first error the kernel reported."""
    if not attributes:
        return
    sock = None
    try:
        with entered(netns):
            sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
            index = socket.if_nametoindex(interface)
    except OSError as error:
        if sock is not None:
            sock.close()
        raise NeighbourError(f"cannot reach {interface}'s neighbour table in {netns}: {error}") from error
    with sock:
        try:
            sock.settimeout(ANSWER_TIMEOUT_S)
            sock.bind((0, 0))
            for sequence, start in enumerate(range(0, len(attributes), REQUESTS_PER_MESSAGE), 1):
                sock.sendall(
                    neighbour_requests(index, attributes[start : start + REQUESTS_PER_MESSAGE], sequence)
                )
                errors = _wait_for_acknowledgement(sock, sequence)
                if errors:
                    raise NeighbourError(
                        f"{len(errors)} neighbour entries on {interface} in {netns} refused: "
                        f"{os.strerror(errors[0])} ({errno.errorcode.get(errors[0], errors[0])})"
                    )
        except OSError as error:
            raise NeighbourError(f"writing {interface}'s neighbour entries in {netns}: {error}") from error
