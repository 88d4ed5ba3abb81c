"""emulation.neighbours on a real namespace (names start with ``tnb``): the kernel's own table is
the oracle, read back with ``ip -json neigh show``."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess

import pytest

from emulation.neighbours import (
    REQUESTS_PER_MESSAGE,
    NeighbourError,
    neighbour_attributes,
    write_neighbours,
)
from topologies.addressing import host_ip, host_mac

pytestmark = pytest.mark.root


def run(*command: str) -> str:
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def namespace():
    """A namespace tnb<pid> with one veth end eth0 (up); its path."""
    name = f"tnb{os.getpid() % 100000}"
    run("ip", "netns", "add", name)
    try:
        run("ip", "-n", name, "link", "add", "eth0", "type", "veth", "peer", "name", "eth1")
        run("ip", "-n", name, "link", "set", "eth0", "up")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def table(name: str) -> dict[str, tuple[str, list[str]]]:
    """The namespace's neighbour entries on eth0: IP -> (MAC, states)."""
    rows = json.loads(run("ip", "-json", "-n", name, "neigh", "show", "dev", "eth0"))
    return {row["dst"]: (row["lladdr"], row["state"]) for row in rows}


def test_every_entry_is_written_permanent_and_rewriting_changes_nothing(namespace) -> None:
    """2,500 hosts' entries (three messages of at most REQUESTS_PER_MESSAGE) are all in the table,
    each at its host's MAC and PERMANENT; writing them again replaces them with themselves."""
    pes = range(1, 2501)
    assert len(pes) > 2 * REQUESTS_PER_MESSAGE
    expected = {host_ip(pe): (host_mac(pe), ["PERMANENT"]) for pe in pes}
    entries = [neighbour_attributes(host_ip(pe), host_mac(pe)) for pe in pes]
    write_neighbours(f"/run/netns/{namespace}", "eth0", entries)
    assert table(namespace) == expected
    write_neighbours(f"/run/netns/{namespace}", "eth0", entries)
    assert table(namespace) == expected


def test_a_refused_entry_is_named_and_the_others_are_written(namespace) -> None:
    """An entry whose MAC is 3 bytes long (EINVAL from the kernel) between two good ones."""
    bad = struct.pack("=HH4sHH3s5x", 8, 1, socket.inet_aton("10.0.0.9"), 7, 2, b"\x02\x00\x00")
    good = [neighbour_attributes(host_ip(pe), host_mac(pe)) for pe in (1, 2)]
    assert len(bad) == len(good[0])
    with pytest.raises(NeighbourError, match=r"1 neighbour entries on eth0 .* refused: .*EINVAL"):
        write_neighbours(f"/run/netns/{namespace}", "eth0", [good[0], bad, good[1]])
    assert set(table(namespace)) == {host_ip(1), host_ip(2)}


def test_a_missing_namespace_or_interface_is_named_and_this_thread_stays_home(namespace) -> None:
    entry = [neighbour_attributes(host_ip(1), host_mac(1))]
    own = os.stat("/proc/thread-self/ns/net").st_ino
    with pytest.raises(NeighbourError, match="cannot reach eth0's neighbour table in /run/netns/tnb-none"):
        write_neighbours("/run/netns/tnb-none", "eth0", entry)
    with pytest.raises(NeighbourError, match="cannot reach eth9's"):
        write_neighbours(f"/run/netns/{namespace}", "eth9", entry)
    assert os.stat("/proc/thread-self/ns/net").st_ino == own
