#!/usr/bin/env python3
"""Benchmark many cards in one ``twinnet-switch`` process (``--cards``) against one card alone.

Run as root from the repository:  sudo .venv/bin/python scripts/bench_switch_group.py [--cards 8,64]

Set-up (names start with ``tsg``, removed at the end): a generator namespace floods
64-byte twinnet frames (the C generator of bench_switch.py) into card 1's port 1; card
i's port 2 is a veth pair to card i+1's port 1; the last card's port 2 leads to a sink
namespace. Every card runs p4src/card.p4 with the same entries: port 1 faces a host
(``host_in`` hit: the card claims the frame, so its hop count and trace start again and
the chain can be longer than the trace), ``route`` (port 1, PE 7, class 0) -> port 2,
``vc_queue`` (bench_switch.py's entries), and egress appends a trace entry: each card does a first hop's work.

Figures, measured in the same run:

(a) one card alone, ``twinnet-switch`` without --cards (bench_switch.py's set-up with
    these entries): frames per CPU-second of the switch process;
(b) N cards in one process chained as above: **card visits per CPU-second** of the
    switch process, where a card visit is one frame sent by a card on its port 2
    (the sum over the cards of their port-2 interfaces' tx_packets over the
    measurement window), divided by the process's user + system CPU time over the
    same window; also the frames per second that reach the sink;
(c) P4Runtime Write throughput into the largest process: 2,100 route entries per card
    (a 3DT 8x8x8 DORT card's share of 2.1M), batches of 1,000, several devices written
    in parallel (one client thread per device, ``--writers`` at a time);
(d) memory with those tables installed: the process's PSS (/proc/PID/smaps_rollup) per
    card, and the marginal PSS per card against a one-card process of the same kind.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_switch import CardWorkload, build_generator, cpu_seconds  # noqa: E402
from p4.v1 import p4runtime_pb2  # noqa: E402

from emulation.switch_launcher import switch_command  # noqa: E402
from p4src import CARD_PROGRAM  # noqa: E402
from p4switch import compile_program  # noqa: E402
from p4switch.daemon.host_config import CardConfig, write_cards_file  # noqa: E402
from p4switch.p4runtime.client import P4RuntimeClient, named_table_entry, update  # noqa: E402

PREFIX = "tsg"
GENERATOR_NS, SINK_NS = f"{PREFIX}gen", f"{PREFIX}sink"
ROUTES_PER_CARD = 2100
WRITE_BATCH = 1000
WARM_UP_PER_CARD_SECONDS = 0.12


def run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True)


def quiet_up(interface: str, namespace: str | None = None) -> None:
    prefix = ("ip", "netns", "exec", namespace) if namespace else ()
    subprocess.run(
        (*prefix, "sysctl", "-q", "-w", f"net.ipv6.conf.{interface}.disable_ipv6=1"), capture_output=True
    )
    run(*prefix, "ip", "link", "set", interface, "up")


class Chain:
    """generator -- card 1 -- card 2 -- ... -- card N -- sink, over veth pairs."""

    def __init__(self, cards: int) -> None:
        self.cards = cards
        self.links: list[str] = []  # root-namespace veths to delete
        self.ports: list[list[tuple[int, str]]] = []
        for namespace, end in ((GENERATOR_NS, f"{PREFIX}in"), (SINK_NS, f"{PREFIX}out")):
            run("ip", "netns", "add", namespace)
            run("ip", "link", "add", end, "type", "veth", "peer", "name", end + "h")
            self.links.append(end)
            run("ip", "link", "set", end + "h", "netns", namespace)
            run("ip", "netns", "exec", namespace, "ip", "link", "set", end + "h", "name", "eth0")
            quiet_up("eth0", namespace)
            quiet_up(end)
        self.ports = [[(1, f"{PREFIX}in")]]
        for index in range(1, cards):
            left, right = f"{PREFIX}{index}a", f"{PREFIX}{index}b"
            run("ip", "link", "add", left, "type", "veth", "peer", "name", right)
            self.links.append(left)
            quiet_up(left)
            quiet_up(right)
            self.ports[-1].append((2, left))
            self.ports.append([(1, right)])
        self.ports[-1].append((2, f"{PREFIX}out"))

    def egress_interfaces(self) -> list[str]:
        return [dict(ports)[2] for ports in self.ports]

    def close(self) -> None:
        for link in self.links:
            subprocess.run(("ip", "link", "del", link), capture_output=True)
        for namespace in (GENERATOR_NS, SINK_NS):
            subprocess.run(("ip", "netns", "del", namespace), capture_output=True)


def tear_down_leftovers() -> None:
    listing = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    for line in listing.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        if name.startswith(PREFIX):
            subprocess.run(("ip", "link", "del", name), capture_output=True)
    for namespace in (GENERATOR_NS, SINK_NS):
        subprocess.run(("ip", "netns", "del", namespace), capture_output=True)


def tx_packets(interface: str) -> int:
    return int(Path(f"/sys/class/net/{interface}/statistics/tx_packets").read_text())


def pss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1])
    return 0


class Entries:
    """The card program's entries for the chain (bench_switch.py's, and port 1 facing a host), and
    the route entries of the install benchmark."""

    def __init__(self) -> None:
        self.workload = CardWorkload(compile_program(str(CARD_PROGRAM)))
        self.p4info = self.workload.p4info

    def chain(self) -> list:
        host_in = named_table_entry(
            self.p4info,
            "MyIngress.host_in",
            {"standard_metadata.ingress_port": 1},
            "MyIngress.from_host",
            {"pe": 1, "rclass": 0},
        )
        return [host_in, *self.workload.base_entries()]

    def routes(self) -> list:
        """ROUTES_PER_CARD route entries (bench_switch.py's, apart from the chain's)."""
        return [
            update(p4runtime_pb2.Update.INSERT, self.workload.route_entry(index))
            for index in range(ROUTES_PER_CARD)
        ]


class Process:
    """A ``twinnet-switch`` process: one card (``cards_file`` None) or ``--cards``."""

    def __init__(self, folder: str, name: str, ports: list[list[tuple[int, str]]], single: bool) -> None:
        self.address = f"unix:{folder}/{name}.grpc"
        self.devices = list(range(1, len(ports) + 1))
        if single:
            (card_ports,) = ports
            arguments = ["--device-id", "1", "--no-side-channel"]
            for number, interface in card_ports:
                arguments += ["-i", f"{number}@{interface}"]
        else:
            cards_file = os.path.join(folder, f"{name}.json")
            write_cards_file(
                cards_file, [CardConfig(d, p, None) for d, p in zip(self.devices, ports, strict=True)]
            )
            arguments = ["--cards", cards_file, "--process-control", f"unix:{folder}/{name}.ctl"]
        command = [
            *switch_command(),
            *arguments,
            str(CARD_PROGRAM),
            "--",
            "--grpc-server-addr",
            self.address,
            "--priority-queues",
            "8",
        ]
        self.process = subprocess.Popen(command, cwd=REPO, stderr=subprocess.DEVNULL)
        self.clients: dict[int, P4RuntimeClient] = {}
        deadline = time.monotonic() + 120
        while not os.path.exists(self.address[len("unix:") :]):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"switch process {name} did not come up")
            time.sleep(0.1)
        for device in self.devices:
            client = P4RuntimeClient(self.address, device, (0, 1))
            client.arbitrate(timeout=30)
            self.clients[device] = client

    @property
    def pid(self) -> int:
        return self.process.pid

    def close(self) -> None:
        for client in self.clients.values():
            client.close()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def measure_visits(
    process: Process, chain: Chain, generator: list[str], seconds: float, frame: bytes
) -> tuple[float, float]:
    """(card visits per CPU-second of the process, frames/s at the sink) while the generator floods."""
    egress = chain.egress_interfaces()
    flood = subprocess.Popen(["ip", "netns", "exec", GENERATOR_NS, *generator, frame.hex(), str(seconds + 2)])
    try:
        # warm-up: a frame crosses one card per loop iteration (a batch of every card): the chain fills
        time.sleep(max(1.0, WARM_UP_PER_CARD_SECONDS * len(egress)))
        start_tx = [tx_packets(name) for name in egress]
        start, start_cpu = time.monotonic(), cpu_seconds(process.pid)
        time.sleep(seconds)
        end_tx = [tx_packets(name) for name in egress]
        end, end_cpu = time.monotonic(), cpu_seconds(process.pid)
    finally:
        flood.wait()
    visits = sum(b - a for a, b in zip(start_tx, end_tx, strict=True))
    delivered = end_tx[-1] - start_tx[-1]
    return visits / max(end_cpu - start_cpu, 1e-9), delivered / (end - start)


def install_chain(process: Process, entries: Entries) -> None:
    chain_updates = [update(p4runtime_pb2.Update.INSERT, entity) for entity in entries.chain()]
    for client in process.clients.values():
        client.write(chain_updates)


def install_routes(process: Process, entries: Entries, writers: int) -> tuple[int, float]:
    """ROUTES_PER_CARD route entries into every card, ``writers`` devices at a time; (entries, seconds)."""
    routes = entries.routes()
    devices = list(process.clients)
    lock = threading.Lock()
    errors: list[BaseException] = []

    def writer() -> None:
        while True:
            with lock:
                if not devices:
                    return
                client = process.clients[devices.pop()]
            try:
                for offset in range(0, len(routes), WRITE_BATCH):
                    client.write(routes[offset : offset + WRITE_BATCH])
            except BaseException as error:  # reported after the threads end
                errors.append(error)
                return

    threads = [threading.Thread(target=writer) for _ in range(writers)]
    start = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - start
    if errors:
        raise errors[0]
    return len(routes) * len(process.clients), elapsed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cards", default="8,64", help="chain lengths of the multi-card runs (default 8,64)")
    parser.add_argument("--seconds", type=float, default=3.0, help="measurement time per forwarding run")
    parser.add_argument("--writers", type=int, default=4, help="devices written in parallel in (c)")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench_switch_group.py needs root (veth pairs, namespaces, AF_PACKET)", file=sys.stderr)
        return 1
    sizes = [int(size) for size in args.cards.split(",")]
    entries = Entries()
    print(f"cores: {os.cpu_count()}; load average {', '.join(f'{v:.1f}' for v in os.getloadavg())}")
    folder = tempfile.mkdtemp(prefix="tsgbench-")
    rows: list[tuple[str, str, str]] = []
    tear_down_leftovers()
    try:
        generator = build_generator(folder)
        if generator is None:
            print("needs a C compiler (gcc) for the flood generator", file=sys.stderr)
            return 1
        chain = Chain(1)
        try:
            for label, single in (("1 card, single-card mode", True), ("1 card, --cards", False)):
                process = Process(folder, "one" if single else "one-group", chain.ports, single)
                try:
                    install_chain(process, entries)
                    per_cpu, delivered = measure_visits(
                        process, chain, generator, args.seconds, entries.workload.frame()
                    )
                    rows.append(
                        (f"(a) {label}", f"{per_cpu:,.0f} visits/CPU-s", f"{delivered:,.0f} frames/s out")
                    )
                    if not single:
                        base_routes, _ = install_routes(process, entries, 1)
                        one_card_pss = pss_kib(process.pid)
                finally:
                    process.close()
            reference = float(rows[0][1].split()[0].replace(",", ""))
        finally:
            chain.close()
        largest: Process | None = None
        for size in sizes:
            chain = Chain(size)
            try:
                process = Process(folder, f"group{size}", chain.ports, False)
                try:
                    install_chain(process, entries)
                    per_cpu, delivered = measure_visits(
                        process, chain, generator, args.seconds, entries.workload.frame()
                    )
                    rows.append(
                        (
                            f"(b) {size} cards chained, one process",
                            f"{per_cpu:,.0f} visits/CPU-s",
                            f"{per_cpu / reference:.2f} x (a); {delivered:,.0f} frames/s out",
                        )
                    )
                    if size == max(sizes):
                        written, elapsed = install_routes(process, entries, args.writers)
                        rows.append(
                            (
                                f"(c) P4Runtime Write, {size}-card process",
                                f"{written / elapsed:,.0f} entries/s",
                                f"{written:,} entries, batches of {WRITE_BATCH}, "
                                f"{args.writers} devices at a time, {elapsed:.1f} s",
                            )
                        )
                        time.sleep(1.0)
                        pss = pss_kib(process.pid)
                        rows.append(
                            (
                                f"(d) PSS per card, {size}-card process",
                                f"{pss / size / 1024:.2f} MiB",
                                f"process {pss / 1024:.1f} MiB, {ROUTES_PER_CARD} routes per card; "
                                f"marginal {(pss - one_card_pss) / (size - 1) / 1024:.2f} MiB/card "
                                f"against one card ({one_card_pss / 1024:.1f} MiB)",
                            )
                        )
                        largest = process
                finally:
                    process.close()
            finally:
                chain.close()
        del largest, base_routes
    finally:
        tear_down_leftovers()
        shutil.rmtree(folder, ignore_errors=True)
    width = max(len(row[0]) for row in rows)
    print(f"{'measure':{width}}  {'figure':>24}  notes")
    for name, figure, notes in rows:
        print(f"{name:{width}}  {figure:>24}  {notes}")
    print("goals: (b) >= 0.5 x (a) (issue 15, counted per card visit), (d) <= 8 MB per card")
    return 0


if __name__ == "__main__":
    sys.exit(main())
