#!/usr/bin/env python3
"""What a frame costs when it wakes a sleeping process: a ping-pong over one veth pair.

Run as root from the repository:  sudo .venv/bin/python scripts/bench_wakeup.py [--exchanges 2000]

Set-up (interfaces ``twkpa``/``twkpb``, removed at the end): two processes, each with an
AF_PACKET socket on one end of a veth pair (the switch's I/O: epoll, recv, send). The
first sends a 100-byte frame, the second waits in ``epoll`` for it and sends it back;
the first waits for the echo, then, in the second case, sleeps 1 ms before the next
exchange, so that both processes are asleep when each frame arrives, as every card's
process is at low load. For each case: the wall time of a round trip (without the
sleep) and the CPU time (user + system) of each side per round trip.

Each side does the same Python work per round trip in both cases; what the second case
adds is the cost of waking a sleeping process, as the CPU time of the processes
involved. On a virtual machine that cost (the idle CPU's wake-up, an inter-processor
interrupt) can be many times the work itself, and it is what a network of cards pays
per card visit at low load (scripts/bench_traffic.py: visits per CPU-second at 5 to
25 probes/s per host against 100 and more).
"""

from __future__ import annotations

import argparse
import os
import select
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from p4switch.daemon.ports import open_port_socket  # noqa: E402

END_A, END_B = "twkpa", "twkpb"
FRAME = bytes(6) + bytes.fromhex("020000000001") + b"\x88\xb5" + bytes(86)


def port(interface: str):
    """A port socket on `interface` as the switch opens it (non-blocking; epoll says when to read)."""
    return open_port_socket(interface)[0]


def echo(exchanges: int) -> None:
    """The second process: wait for each frame in epoll, send it back."""
    sock = port(END_B)
    poller = select.epoll()
    poller.register(sock.fileno(), select.EPOLLIN)
    for _ in range(exchanges):
        poller.poll()
        sock.send(sock.recv(2048))


def cpu_s(times: os.times_result, children: bool) -> float:
    return times.children_user + times.children_system if children else times.user + times.system


def ping_pong(exchanges: int, gap_s: float) -> tuple[float, float, float]:
    """(wall us per round trip without the gap, CPU us per round trip of this side, of the echo side)."""
    child = os.fork()
    if child == 0:
        try:
            echo(exchanges)
        finally:
            os._exit(0)
    sock = port(END_A)
    poller = select.epoll()
    poller.register(sock.fileno(), select.EPOLLIN)
    time.sleep(0.3)  # the echo side is up and waiting
    before, started = os.times(), time.monotonic()
    for _ in range(exchanges):
        sock.send(FRAME)
        poller.poll()
        sock.recv(2048)
        if gap_s:
            time.sleep(gap_s)
    wall = time.monotonic() - started - exchanges * gap_s
    mine = cpu_s(os.times(), False) - cpu_s(before, False)
    os.waitpid(child, 0)
    theirs = cpu_s(os.times(), True) - cpu_s(before, True)
    return wall / exchanges * 1e6, mine / exchanges * 1e6, theirs / exchanges * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--exchanges", type=int, default=2000)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench_wakeup.py needs root (a veth pair, AF_PACKET)", file=sys.stderr)
        return 1
    if args.exchanges < 1:
        print("--exchanges must be at least 1", file=sys.stderr)
        return 1
    subprocess.run(["ip", "link", "del", END_A], capture_output=True)
    subprocess.run(["ip", "link", "add", END_A, "type", "veth", "peer", "name", END_B], check=True)
    try:
        for end in (END_A, END_B):
            subprocess.run(["ip", "link", "set", end, "up"], check=True)
        time.sleep(0.5)
        load = os.getloadavg()[0]
        print(f"cores: {os.cpu_count()}; load average {load:.1f}; {args.exchanges} round trips each")
        print(f"{'case':<38}{'wall us':>9}{'CPU us, sender':>16}{'CPU us, echo':>14}")
        for label, gap in (
            ("back to back (both stay awake)", 0.0),
            ("1 ms apart (both asleep at arrival)", 0.001),
        ):
            wall, mine, theirs = ping_pong(args.exchanges, gap)
            print(f"{label:<38}{wall:>9.0f}{mine:>16.0f}{theirs:>14.0f}")
    finally:
        subprocess.run(["ip", "link", "del", END_A], capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
