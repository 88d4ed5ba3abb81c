"""The switch's side channel: queue counters and per-port rates, JSON over TCP on loopback.

P4Info has no object for the traffic manager, so bmv2 exposes it over Thrift
(``simple_switch_CLI set_queue_rate``). This target listens instead, on
``127.0.0.1:<--thrift-port>``, for one JSON object per line and answers one JSON
object per line:

    {"cmd": "stats"}
        -> {"ok": true, "device_id": 0, "ports": [{"port": 1, "interface": "c1-eth1",
            "rx_frames": .., "tx_frames": .., "tx_errors": .., "rate_pps": null, "depth": 64,
            "backlog": 0, "priority_out_of_range_drops": 0,
            "queues": [{"priority": 0, "length": 0, "enqueued": .., "dequeued": .., "tail_drops": ..}, ...]},
            ...], "counters": {"malformed": .., "parser_errors": .., "packet_errors": .., "ingress_drops": ..,
            "egress_drops": .., "no_pipeline_drops": .., "unknown_port_drops": .., "flushed_on_reconfig": ..}}
        with --lossless also, per port, "pfc": [{"priority": p, "pause_frames_sent": ..,
            "resume_frames_sent": ..,
            "pause_frames_received": .., "resume_frames_received": .., "paused_s": .., "paused": bool,
            "held": .., "pausing_peer": bool, "headroom_drops": ..}, ...] (sent and held: as ingress port;
            received and paused: as egress port), and "lossless": {"xoff_frames": .., "xon_frames": ..,
            "headroom_frames": .., "link_bps_unlimited_ports": ..}
    {"cmd": "set_queue_rate", "rate_pps": 1000, "port": 2}   # port omitted: all ports; rate null/0: unlimited
    {"cmd": "set_queue_depth", "depth": 64, "port": 2}       # packets per priority queue
        -> {"ok": true}
    errors -> {"ok": false, "error": "..."}

``request(port, message)`` is the client side.
"""

from __future__ import annotations

import json
import logging
import socket
import socketserver
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger("twinnet.switch.control")

Handler = Callable[[dict[str, Any]], dict[str, Any]]


class _LineHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        for line in self.rfile:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
                if not isinstance(message, dict):
                    raise ValueError("a request is a JSON object")
                answer = self.server.dispatch(message)  # type: ignore[attr-defined]
            except Exception as error:  # answer every malformed request, keep serving
                answer = {"ok": False, "error": f"{type(error).__name__}: {error}"}
            self.wfile.write(json.dumps(answer).encode() + b"\n")
            self.wfile.flush()


class _Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True

    def __init__(self, address: tuple[str, int], dispatch: Handler) -> None:
        self.dispatch = dispatch
        super().__init__(address, _LineHandler)


class ControlServer:
    """Serves the side channel in a background thread."""

    def __init__(self, port: int, dispatch: Handler, host: str = "127.0.0.1") -> None:
        self._server = _Server((host, port), dispatch)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.2}, name="control", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def request(
    port: int, message: dict[str, Any], host: str = "127.0.0.1", timeout: float = 5.0
) -> dict[str, Any]:
    """Send one request to a switch's side channel and return its answer."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(json.dumps(message).encode() + b"\n")
        reader = sock.makefile("rb")
        line = reader.readline()
    if not line:
        raise ConnectionError(f"switch side channel on port {port} closed without an answer")
    return json.loads(line)
