"""A stand-in switch process for the builder's tests only (never part of the product).

Run as a program it takes simple_switch_grpc's command line, opens an AF_PACKET
socket on every ``-i PORT@IFACE`` (so a missing interface fails it, as it would
fail a real switch), listens on the gRPC address (TCP or Unix socket) and the Thrift
port, and waits for SIGTERM.
It forwards nothing: the builder's tests check the network's wiring and hosts,
not the card program. :class:`StandinSwitch` is the Mininet switch class that
starts it.
"""

from __future__ import annotations

import signal
import socket
import sys
import threading
from pathlib import Path

from emulation.switches import P4CardSwitch, PreparedProgram


class StandinSwitch(P4CardSwitch):
    target_name = "standin"
    estimated_rss_mb = 15.0

    @classmethod
    def prepare_program(cls, program: Path, out_dir: Path) -> PreparedProgram:
        return PreparedProgram(program, program, None)

    def command_line(self) -> list[str]:
        command = [sys.executable, str(Path(__file__).resolve()), "--device-id", str(self.device_id)]
        command += self.interface_arguments()
        command += ["--thrift-port", str(self.side_channel_port), str(self.program.device_config), "--"]
        command += ["--grpc-server-addr", self.grpc_address, "--priority-queues", "8"]
        return command


def main(argv: list[str]) -> int:
    split = argv.index("--")
    options, target = argv[:split], argv[split + 1 :]
    interfaces = [options[i + 1] for i, word in enumerate(options) if word == "-i"]
    side_channel_port = int(options[options.index("--thrift-port") + 1])
    grpc_address = target[target.index("--grpc-server-addr") + 1]
    sockets = []
    for spec in interfaces:
        _port, name = spec.split("@", 1)
        raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
        raw.bind((name, 0))
        sockets.append(raw)
    listen_on = [("127.0.0.1", side_channel_port)]
    if grpc_address.startswith("unix:"):
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(grpc_address[len("unix:") :])
        listener.listen(16)
        sockets.append(listener)
    else:
        host, port = grpc_address.rsplit(":", 1)
        listen_on.append((host, int(port)))
    for host, port in listen_on:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(16)
        sockets.append(listener)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"stand-in switch up: {' '.join(interfaces)}", flush=True)
    while not stop.wait(0.5):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
