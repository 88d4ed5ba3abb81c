#!/usr/bin/env python3
"""Benchmark the embedded switch (``twinnet-switch``): forwarding rate, P4Runtime write rate, memory.

Run as root from the repository:  sudo .venv/bin/python scripts/bench_switch.py [--seconds 3]

Set-up (all names start with ``tswb``, removed at the end): a generator namespace sends
64-byte frames as fast as it can (a small C program built with gcc, else Python) into
switch port 1 (a veth pair); port 2 is a veth
pair to a sink namespace that discards them. The rate is what leaves port 2 (the
interface's tx_packets counter), measured after a warm-up, and also per CPU-second of
the forwarding process (a figure that other load on the machine does not lower), for:

1. a bare Python AF_PACKET forwarder (the same I/O method as the switch: non-blocking
   raw sockets, poll, then a batch of up to 64 recv, then a send for each frame of the
   batch): the ceiling of this I/O path;
2. the switch, running the card program p4src/card.p4 on the language core, with a
   route entry for the generator's twinnet frames (1 table hit in host_in, route and
   vc_queue each, a trace entry appended in egress) -- or, while the language core
   cannot compile the card program yet, the tests' stand-in pipeline (one dict lookup),
   which then measures the switch's own overhead only; the output says which.

Then the P4Runtime write rate (batches of 100 route entries, 5,000 entries), the
switch's resident memory with 1,000 entries installed, and the protobuf implementation.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from google.protobuf.internal import api_implementation  # noqa: E402
from p4.v1 import p4runtime_pb2  # noqa: E402

from emulation.headroom import process_cpu_s  # noqa: E402
from emulation.switch_launcher import switch_command  # noqa: E402
from p4src import CARD_PROGRAM  # noqa: E402
from p4switch.p4runtime.client import P4RuntimeClient, named_table_entry, update  # noqa: E402

PREFIX = "tswb"
GENERATOR_NS, SINK_NS = f"{PREFIX}gen", f"{PREFIX}sink"
PORT1, PORT2 = f"{PREFIX}p1", f"{PREFIX}p2"
GRPC_ADDRESS = "127.0.0.1:59559"
DST_PE = 7

GENERATOR = r"""
import socket, sys, time
sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
sock.bind(("eth0", 0))
frame = bytes.fromhex(sys.argv[1])
end = time.monotonic() + float(sys.argv[2])
send = sock.send
while time.monotonic() < end:
    for _ in range(2000):
        try:
            send(frame)
        except OSError:
            pass
"""

# The flood generator in C (built with gcc when it is there): a Python sender is slower than
# the bare forwarder, which would then measure the generator instead of the ceiling.
GENERATOR_C = r"""
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
int main(int argc, char **argv) {
    const char *hex = argv[1];
    unsigned char frame[2048];
    size_t length = strlen(hex) / 2;
    for (size_t i = 0; i < length; i++) {
        char byte[3] = {hex[2 * i], hex[2 * i + 1], 0};
        frame[i] = strtol(byte, 0, 16);
    }
    double seconds = atof(argv[2]);
    int sock = socket(AF_PACKET, SOCK_RAW, 0);
    struct sockaddr_ll address = {0};
    address.sll_family = AF_PACKET;
    address.sll_ifindex = if_nametoindex("eth0");
    if (sock < 0 || bind(sock, (struct sockaddr *)&address, sizeof address) < 0) return 1;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        for (int i = 0; i < 1000; i++) send(sock, frame, length, 0);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 < seconds);
    return 0;
}
"""


BARE_FORWARDER = r"""
import select, signal, socket, sys
def open_port(name):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
    s.setsockopt(263, 23, 1)  # PACKET_IGNORE_OUTGOING
    s.bind((name, 3))
    s.setblocking(False)
    return s
rx, tx = open_port(sys.argv[1]), open_port(sys.argv[2])
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
poller = select.poll()
poller.register(rx.fileno(), select.POLLIN)
recv, send = rx.recv, tx.send
while True:
    poller.poll(1000)
    batch = []
    for _ in range(64):
        try:
            batch.append(recv(65535))
        except BlockingIOError:
            break
    for frame in batch:
        try:
            send(frame)
        except OSError:
            pass
"""

STAND_IN_SERVER = r"""
import sys
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[1] + "/tests/emulation")
from test_switch_standin import stand_in_compile
import p4switch.daemon.cli as cli
import p4switch.daemon.switch as switch_module
from p4src import CARD_PROGRAM
original = switch_module.Switch.__init__
def patched(self, options, compile_function=None):
    original(self, options, compile_function=stand_in_compile)
switch_module.Switch.__init__ = patched
sys.exit(cli.main(sys.argv[2:]))
"""


def run(*command: str) -> None:
    subprocess.run(command, check=True, capture_output=True)


def set_up() -> None:
    for namespace, switch_end in ((GENERATOR_NS, PORT1), (SINK_NS, PORT2)):
        run("ip", "netns", "add", namespace)
        run("ip", "link", "add", switch_end, "type", "veth", "peer", "name", switch_end + "h")
        run("ip", "link", "set", switch_end + "h", "netns", namespace)
        run("ip", "netns", "exec", namespace, "ip", "link", "set", switch_end + "h", "name", "eth0")
        for prefix in ((), ("ip", "netns", "exec", namespace)):
            interface = "eth0" if prefix else switch_end
            subprocess.run(
                (*prefix, "sysctl", "-q", "-w", f"net.ipv6.conf.{interface}.disable_ipv6=1"),
                capture_output=True,
            )
            run(*prefix, "ip", "link", "set", interface, "up")


def tear_down() -> None:
    for interface in (PORT1, PORT2):
        subprocess.run(("ip", "link", "del", interface), capture_output=True)
    for namespace in (GENERATOR_NS, SINK_NS):
        subprocess.run(("ip", "netns", "del", namespace), capture_output=True)


def tx_packets(interface: str) -> int:
    return int(Path(f"/sys/class/net/{interface}/statistics/tx_packets").read_text())


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process (and its threads)."""
    return process_cpu_s([pid])[pid]


def build_generator(directory: str) -> list[str] | None:
    """The C generator's command, or None without a C compiler."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        return None
    source, binary = os.path.join(directory, "generator.c"), os.path.join(directory, "generator")
    Path(source).write_text(GENERATOR_C)
    if subprocess.run([compiler, "-O2", "-o", binary, source], capture_output=True).returncode != 0:
        return None
    return [binary]


def measure_forwarding(
    frame: bytes, seconds: float, forwarder_pid: int, generator: list[str] | None
) -> tuple[float, float]:
    """Frames per second leaving port 2 while the generator floods port 1, and frames per CPU-second
    of the forwarding process (independent of how much CPU other processes leave it)."""
    command = generator or [sys.executable, "-c", GENERATOR]
    flood = subprocess.Popen(["ip", "netns", "exec", GENERATOR_NS, *command, frame.hex(), str(seconds + 2)])
    try:
        time.sleep(1.0)
        start_count, start, start_cpu = tx_packets(PORT2), time.monotonic(), cpu_seconds(forwarder_pid)
        time.sleep(seconds)
        end_count, end, end_cpu = tx_packets(PORT2), time.monotonic(), cpu_seconds(forwarder_pid)
    finally:
        flood.wait()
    frames = end_count - start_count
    return frames / (end - start), frames / max(end_cpu - start_cpu, 1e-9)


def card_program():
    """The card program compiled by the language core, or None with the reason."""
    try:
        from p4switch import compile_program

        return compile_program(str(CARD_PROGRAM)), ""
    except Exception as error:  # the core is not there yet, or cannot compile the card program
        return None, f"{type(error).__name__}: {error}"


class CardWorkload:
    """Routed twinnet frames through p4src/card.p4."""

    label = "card program p4src/card.p4 on the language core"

    def __init__(self, program, same_interpreter: bool = False) -> None:
        self.program = program
        self.p4info = program.p4info
        self.same_interpreter = same_interpreter

    def frame(self) -> bytes:
        ethernet = bytes.fromhex("02000000000202000000000188b5")
        twinnet = (
            DST_PE.to_bytes(2, "big")
            + (1).to_bytes(2, "big")
            + bytes([0x00, 0, 0, 0])
            + (0).to_bytes(2, "big")
            + (1).to_bytes(4, "big")
            + (0).to_bytes(6, "big")
        )
        data = ethernet + twinnet
        return data + bytes(64 - len(data))

    def device_config(self) -> bytes:
        return (REPO / "p4src" / "card.p4").read_bytes()  # program text: the switch refuses file: references

    def pipeline_cost(self, frames: int = 20000) -> tuple[float, float]:
        """Frames per CPU-second of the language core alone (no I/O): ingress() + egress(), and run_fused."""
        pipeline = self.program.new_pipeline()
        for entity in self.base_entries():
            entry = entity.table_entry
            table = next(t for t in self.p4info.tables if t.preamble.id == entry.table_id)
            names = {f.id: f.name for f in table.match_fields}
            match = {names[m.field_id]: int.from_bytes(m.exact.value, "big") for m in entry.match}
            action = next(a for a in self.p4info.actions if a.preamble.id == entry.action.action.action_id)
            params = tuple(int.from_bytes(p.value, "big") for p in entry.action.action.params)
            pipeline.table_insert(table.preamble.name, match, action.preamble.name, params)
        frame = self.frame()
        start = time.process_time()
        for _ in range(frames):
            result = pipeline.ingress(frame, 1, 0)
            pipeline.egress(result, result.egress_spec, 0, 0, 0, 0)
        api_rate = frames / (time.process_time() - start)
        run_fused = pipeline.fused_entry_point()

        def admit(egress_port: int, priority: int) -> bool:
            return True  # port 2 is idle: the frame goes straight through egress (no hooks called)

        start = time.process_time()
        for _ in range(frames):
            run_fused(frame, 1, 0, admit, None)
        return api_rate, frames / (time.process_time() - start)

    def base_entries(self) -> list:
        return [
            named_table_entry(
                self.p4info,
                "MyIngress.route",
                {"standard_metadata.ingress_port": 1, "hdr.tw.dst_pe": DST_PE, "hdr.tw.rclass": 0},
                "MyIngress.set_route",
                {"port": 2, "vc": 0},
            ),
            named_table_entry(
                self.p4info,
                "MyIngress.vc_queue",
                {"hdr.tw.rclass": 0, "hdr.tw.vc": 0},
                "MyIngress.set_queue",
                {"prio": 0},
            ),
        ]

    def route_entry(self, index: int):
        return named_table_entry(
            self.p4info,
            "MyIngress.route",
            {
                "standard_metadata.ingress_port": 3 + index % 500,
                "hdr.tw.dst_pe": 1000 + index // 500,
                "hdr.tw.rclass": 0,
            },
            "MyIngress.set_route",
            {"port": 2, "vc": 0},
        )

    def switch_command(self, arguments: list[str]) -> list[str]:
        if self.same_interpreter:
            return [sys.executable, "-m", "p4switch.daemon.cli", *arguments]
        return [*switch_command(), *arguments]


class StandInWorkload:
    """The tests' stand-in pipeline: exact match on (ingress port, destination MAC)."""

    label = "STAND-IN pipeline of the tests (one dict lookup): the switch's own overhead only"

    def __init__(self) -> None:
        sys.path.insert(0, str(REPO / "tests" / "emulation"))
        from test_switch_standin import stand_in_p4info

        self.p4info = stand_in_p4info()

    def frame(self) -> bytes:
        data = bytes.fromhex("00000000000702000000000188b6")
        return data + bytes(64 - len(data))

    def device_config(self) -> bytes:
        return b"/* stand-in */\n"

    def base_entries(self) -> list:
        return [
            named_table_entry(
                self.p4info,
                "MyIngress.route",
                {"standard_metadata.ingress_port": 1, "hdr.ethernet.dst_addr": DST_PE},
                "MyIngress.forward",
                {"port": 2, "prio": 0},
            )
        ]

    def route_entry(self, index: int):
        return named_table_entry(
            self.p4info,
            "MyIngress.route",
            {"standard_metadata.ingress_port": 3 + index % 500, "hdr.ethernet.dst_addr": 1000 + index // 500},
            "MyIngress.forward",
            {"port": 2, "prio": 0},
        )

    def switch_command(self, arguments: list[str]) -> list[str]:
        return [sys.executable, "-c", STAND_IN_SERVER, str(REPO), *arguments]


def start_switch(workload) -> tuple[subprocess.Popen, P4RuntimeClient]:
    arguments = [
        "--no-p4",
        "-i",
        f"1@{PORT1}",
        "-i",
        f"2@{PORT2}",
        "--no-side-channel",
        "--",
        "--grpc-server-addr",
        GRPC_ADDRESS,
        "--priority-queues",
        "8",
    ]
    process = subprocess.Popen(workload.switch_command(arguments), cwd=REPO)
    client = P4RuntimeClient(GRPC_ADDRESS, 0, (0, 1))
    deadline = time.monotonic() + 30
    while True:
        try:
            client.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=1)
            break
        except Exception:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("the switch did not come up") from None
            time.sleep(0.2)
    client.arbitrate()
    client.set_pipeline(workload.p4info, workload.device_config())
    client.write([update(p4runtime_pb2.Update.INSERT, entity) for entity in workload.base_entries()])
    return process, client


def resident_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=3.0, help="measurement time per forwarder")
    parser.add_argument(
        "--stand-in", action="store_true", help="use the stand-in pipeline even if the core works"
    )
    parser.add_argument(
        "--same-interpreter",
        action="store_true",
        help="run the switch on this interpreter instead of the switch environment (.venv/switch)",
    )
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench_switch.py needs root (veth pairs, namespaces, AF_PACKET)", file=sys.stderr)
        return 1
    program, why = (None, "asked for --stand-in") if args.stand_in else card_program()
    workload = CardWorkload(program, args.same_interpreter) if program is not None else StandInWorkload()
    print(f"pipeline: {workload.label}" + (f" [{why}]" if program is None else ""))
    switch_python = workload.switch_command([])[0]
    implementation = subprocess.run(
        [
            switch_python if switch_python.endswith("python") else str(Path(switch_python).parent / "python"),
            "-c",
            "from google.protobuf.internal import api_implementation as a; print(a.Type())",
        ],
        capture_output=True,
        text=True,
    ).stdout.strip()
    print(
        f"protobuf: switch {implementation}, benchmark client {api_implementation.Type()}; "
        f"cores: {os.cpu_count()}; load average {', '.join(f'{v:.1f}' for v in os.getloadavg())} "
        "(1, 5, 15 min; other processes lower the frames/s figures, less the per CPU-second ones)"
    )
    tear_down()
    set_up()
    build_directory = tempfile.mkdtemp(prefix="tswbench-")
    try:
        generator = build_generator(build_directory)
        print(f"generator: {'C (gcc)' if generator else 'Python (no C compiler found)'}")
        if hasattr(workload, "pipeline_cost"):
            api_rate, fused_rate = workload.pipeline_cost()
            print(
                f"{'language core alone:':26}{'':19}{api_rate:10.0f} per CPU-second "
                "(ingress() + egress() of card.p4, no I/O)"
            )
            print(f"{'':45}{fused_rate:10.0f} per CPU-second (its fused driver, as the switch runs it)")
        frame = workload.frame()
        bare = subprocess.Popen([sys.executable, "-c", BARE_FORWARDER, PORT1, PORT2])
        time.sleep(0.5)
        try:
            bare_rate, bare_per_cpu = measure_forwarding(frame, args.seconds, bare.pid, generator)
        finally:
            bare.send_signal(signal.SIGTERM)
            bare.wait()
        print(f"bare AF_PACKET forwarder: {bare_rate:10.0f} frames/s  {bare_per_cpu:10.0f} per CPU-second")

        process, client = start_switch(workload)
        try:
            switch_rate, switch_per_cpu = measure_forwarding(frame, args.seconds, process.pid, generator)
            print(
                f"{'twinnet-switch:':26}{switch_rate:10.0f} frames/s  {switch_per_cpu:10.0f} per CPU-second"
            )
            print(
                f"switch / bare:            {switch_rate / bare_rate:10.2f} (frames/s)  "
                f"{switch_per_cpu / bare_per_cpu:10.2f} (per CPU-second)   goals: > 27,000 frames/s (bmv2 "
                "optimised build), >= 1/3 of bare"
            )
            batch, total = 100, 5000
            entries = [workload.route_entry(i) for i in range(total)]
            start = time.monotonic()
            for offset in range(0, 1000, batch):
                client.write(
                    [update(p4runtime_pb2.Update.INSERT, e) for e in entries[offset : offset + batch]]
                )
            rss = resident_kib(process.pid)
            for offset in range(1000, total, batch):
                client.write(
                    [update(p4runtime_pb2.Update.INSERT, e) for e in entries[offset : offset + batch]]
                )
            elapsed = time.monotonic() - start
            print(
                f"P4Runtime writes:         {total / elapsed:10.0f} entries/s  (batches of {batch}, "
                f"{total} entries; bmv2 about 10,000/s)"
            )
            print(f"resident memory:          {rss / 1024:10.1f} MiB  with 1,000 route entries installed")
        finally:
            client.close()
            process.send_signal(signal.SIGTERM)
            code = process.wait(timeout=10)
            print(f"switch exit code on SIGTERM: {code}")
    finally:
        tear_down()
        shutil.rmtree(build_directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    socket.setdefaulttimeout(None)
    sys.exit(main())
