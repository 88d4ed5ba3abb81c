"""The switch's side channel: queue counters and per-port rates, JSON over a Unix socket or loopback TCP.

P4Info has no object for the traffic manager, so bmv2 exposes it over Thrift
(``simple_switch_CLI set_queue_rate``). This target listens instead, on
``--side-channel unix:/path`` (private to the user who owns the socket's folder) or
``127.0.0.1:<--thrift-port>`` (any local user), for one JSON object per line and
answers one JSON object per line:

    {"cmd": "stats"}
        -> {"ok": true, "device_id": 0, "ports": [{"port": 1, "interface": "c1-eth1",
            "rx_frames": .., "tx_frames": .., "tx_errors": .., "rate_pps": null, "depth": 64,
            "backlog": 0, "priority_out_of_range_drops": 0,
            "queues": [{"priority": 0, "length": 0, "enqueued": .., "dequeued": .., "tail_drops": ..}, ...]},
            ...], "counters": {"malformed": .., "parser_errors": .., "packet_errors": .., "ingress_drops": ..,
            "egress_drops": .., "no_pipeline_drops": .., "unknown_port_drops": .., "flushed_on_reconfig": ..},
            "dataplane": {"alive": true, "failure": null, "beat_age_s": 0.01}}
        with --lossless also, per port, "pfc": [{"priority": p, "pause_frames_sent": ..,
            "resume_frames_sent": ..,
            "pause_frames_received": .., "resume_frames_received": .., "paused_s": .., "paused": bool,
            "held": .., "pausing_peer": bool, "headroom_drops": ..}, ...] (sent and held: as ingress port;
            received and paused: as egress port), and "lossless": {"xoff_frames": .., "xon_frames": ..,
            "headroom_frames": .., "link_bps_unlimited_ports": ..}
    {"cmd": "health"} -> {"ok": true, "alive": true, "failure": null, "beat_age_s": 0.01}
    {"cmd": "set_queue_rate", "rate_pps": 1000, "port": 2}   # port omitted: all ports;
                                     # rate null/0: unlimited, else 1e-3..1e9 (other values are refused)
    {"cmd": "set_queue_depth", "depth": 64, "port": 2}       # packets per priority queue
        -> {"ok": true}
    errors -> {"ok": false, "error": "..."}

``request(port, message)`` is the client side.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import socketserver
import stat
import threading
from collections.abc import Callable
from typing import Any

from p4switch.daemon.addresses import UNIX_PREFIX

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


class _UnixServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, dispatch: Handler) -> None:
        self.dispatch = dispatch
        if os.path.exists(path) and stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)  # a socket file left by a switch that was killed
        old_umask = os.umask(0o177)  # the socket file is the owner's only (its folder should be too)
        try:
            super().__init__(path, _LineHandler)
        finally:
            os.umask(old_umask)


class ControlServer:
    """Serves the side channel in a background thread, on a loopback TCP port or a Unix socket.

    ``target``: a TCP port (0 picks one) on ``host``, or ``unix:/path``.
    """

    def __init__(self, target: int | str, dispatch: Handler, host: str = "127.0.0.1") -> None:
        self.path: str | None = None
        self._server: socketserver.BaseServer
        if isinstance(target, str):
            if not target.startswith(UNIX_PREFIX):
                raise ValueError(f"side channel address must be unix:/path, not {target!r}")
            self.path = target[len(UNIX_PREFIX) :]
            self._server = _UnixServer(self.path, dispatch)
            self.port: int | None = None
        else:
            self._server = _Server((host, target), dispatch)
            self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.2}, name="control", daemon=True
        )

    @property
    def address(self) -> str:
        """Where a client connects: ``unix:/path`` or the TCP port's number as text."""
        return f"{UNIX_PREFIX}{self.path}" if self.path is not None else str(self.port)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        if self.path is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass


def request(
    target: int | str, message: dict[str, Any], host: str = "127.0.0.1", timeout: float = 5.0
) -> dict[str, Any]:
    """Send one request to a switch's side channel (TCP port on ``host``, or ``unix:/path``); its answer."""
    if isinstance(target, str) and target.startswith(UNIX_PREFIX):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(target[len(UNIX_PREFIX) :])
        except OSError:
            sock.close()
            raise
    else:
        sock = socket.create_connection((host, int(target)), timeout=timeout)
    with sock:
        sock.sendall(json.dumps(message).encode() + b"\n")
        reader = sock.makefile("rb")
        line = reader.readline()
    if not line:
        raise ConnectionError(f"switch side channel {target} closed without an answer")
    return json.loads(line)
