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
    {"cmd": "kill"} -> {"ok": true}   # a card of a --cards process only: the card fails at once
                                     # (ports closed, queues discarded, P4Runtime device removed),
                                     # then this side channel closes
    errors -> {"ok": false, "error": "..."}

The process side channel of a --cards process (``--process-control unix:PATH``):

    {"cmd": "health"} -> {"ok": true, "alive": true, "failure": null, "beat_age_s": 0.01,
                          "cards": {"3": {"alive": true, "failure": null},
                                    "4": {"alive": false, "failure": "killed"}, ...}}

All side channels of a process are served by one thread (``ControlHub``, ``selectors``).

``request(port, message)`` is the client side.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import socket
import stat
import threading
from collections.abc import Callable
from typing import Any

from p4switch.daemon.addresses import UNIX_PREFIX

log = logging.getLogger("twinnet.switch.control")

Handler = Callable[[dict[str, Any]], dict[str, Any]]
#: the longest request line read (a request is a small JSON object); a longer one closes the connection
MAX_REQUEST_BYTES = 64 * 1024
#: how often the serving thread looks at its stop flag while idle
POLL_SECONDS = 0.2


def answer_line(line: bytes, dispatch: Handler) -> bytes:
    """The answer line (JSON + newline) to one request line; every malformed request gets an error."""
    try:
        message = json.loads(line)
        if not isinstance(message, dict):
            raise ValueError("a request is a JSON object")
        answer = dispatch(message)
    except Exception as error:  # answer every malformed request, keep serving
        answer = {"ok": False, "error": f"{type(error).__name__}: {error}"}
    return json.dumps(answer).encode() + b"\n"


def listening_socket(target: int | str, host: str = "127.0.0.1") -> socket.socket:
    """A listening socket: ``unix:/path`` (owner-only; a stale one replaced) or a TCP port on ``host``."""
    if isinstance(target, str):
        if not target.startswith(UNIX_PREFIX):
            raise ValueError(f"side channel address must be unix:/path, not {target!r}")
        path = target[len(UNIX_PREFIX) :]
        if os.path.exists(path) and stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)  # a socket file left by a switch that was killed
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)  # the socket file is the owner's only (its folder should be too)
        try:
            sock.bind(path)
        except OSError:
            sock.close()
            raise
        finally:
            os.umask(old_umask)
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, target))
        except OSError:
            sock.close()
            raise
    sock.listen(16)
    sock.setblocking(False)
    return sock


class Listener:
    """One side channel (a card's, or the process's): its listening socket, handler and connections."""

    def __init__(self, target: int | str, dispatch: Handler, host: str = "127.0.0.1") -> None:
        self.dispatch = dispatch
        self.path = target[len(UNIX_PREFIX) :] if isinstance(target, str) else None
        self.sock = listening_socket(target, host)
        self.port: int | None = None if self.path is not None else self.sock.getsockname()[1]
        self.connections: set[_Connection] = set()
        self.closing = False

    @property
    def address(self) -> str:
        """Where a client connects: ``unix:/path`` or the TCP port's number as text."""
        return f"{UNIX_PREFIX}{self.path}" if self.path is not None else str(self.port)


class _Connection:
    __slots__ = ("sock", "listener", "inbox", "outbox")

    def __init__(self, sock: socket.socket, listener: Listener) -> None:
        self.sock = sock
        self.listener = listener
        self.inbox = b""
        self.outbox = b""


class ControlHub:
    """Serves any number of side channels from one thread (selectors): one JSON request per line.

    A handler runs in this thread; it may ask for its own side channel to be closed after
    its answer (``close_after_answer``), as a killed card does.
    """

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._listeners: list[Listener] = []
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def add(self, target: int | str, dispatch: Handler, host: str = "127.0.0.1") -> Listener:
        """Listen on ``target`` (``unix:/path`` or a TCP port, 0 picks one) for ``dispatch``."""
        listener = Listener(target, dispatch, host)
        with self._lock:
            self._listeners.append(listener)
            self._selector.register(listener.sock, selectors.EVENT_READ, listener)
        return listener

    def close_after_answer(self, listener: Listener) -> None:
        """Accept nothing more on ``listener`` and close its connections once their answers are out."""
        listener.closing = True

    def start(self) -> None:
        self._thread = threading.Thread(target=self._serve, name="control", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        with self._lock:
            for listener in list(self._listeners):
                self._close_listener(listener)
            self._selector.close()

    def _serve(self) -> None:
        while not self._stopping.is_set():
            for key, events in self._selector.select(POLL_SECONDS):
                try:
                    if isinstance(key.data, Listener):
                        self._accept(key.data)
                    elif events & selectors.EVENT_READ:
                        self._read(key.data)
                    else:
                        self._flush(key.data)
                except Exception:  # one broken connection must not stop the side channels
                    log.exception("side channel connection failed")
                    if isinstance(key.data, _Connection):
                        self._close(key.data)
            with self._lock:
                for listener in [item for item in self._listeners if item.closing]:
                    self._close_listener(listener)

    def _accept(self, listener: Listener) -> None:
        try:
            sock, _ = listener.sock.accept()
        except (BlockingIOError, InterruptedError):
            return
        sock.setblocking(False)
        connection = _Connection(sock, listener)
        listener.connections.add(connection)
        self._selector.register(sock, selectors.EVENT_READ, connection)

    def _read(self, connection: _Connection) -> None:
        try:
            data = connection.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._close(connection)
            return
        connection.inbox += data
        while b"\n" in connection.inbox:
            line, _, connection.inbox = connection.inbox.partition(b"\n")
            if line.strip():
                connection.outbox += answer_line(line, connection.listener.dispatch)
        if len(connection.inbox) > MAX_REQUEST_BYTES:
            self._close(connection)
            return
        if connection.listener.closing:  # the handler closed its side channel: gone before the answer is read
            with self._lock:
                self._close_listener(connection.listener)
            return
        self._flush(connection)

    def _flush(self, connection: _Connection) -> None:
        if connection.outbox:
            try:
                sent = connection.sock.send(connection.outbox)
                connection.outbox = connection.outbox[sent:]
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:
                self._close(connection)
                return
        if connection.sock.fileno() < 0:
            return
        wanted = selectors.EVENT_READ | (selectors.EVENT_WRITE if connection.outbox else 0)
        if self._selector.get_key(connection.sock).events != wanted:
            self._selector.modify(connection.sock, wanted, connection)

    def _close(self, connection: _Connection) -> None:
        try:
            self._selector.unregister(connection.sock)
        except (KeyError, ValueError):
            pass
        connection.sock.close()
        connection.listener.connections.discard(connection)

    def _close_listener(self, listener: Listener) -> None:
        """Close a listener, then its connections (what they have not yet sent is tried once more)."""
        try:
            self._selector.unregister(listener.sock)
        except (KeyError, ValueError):
            pass
        listener.sock.close()
        if listener.path is not None:
            try:
                os.unlink(listener.path)
            except OSError:
                pass
        for connection in list(listener.connections):
            if connection.outbox:
                try:
                    connection.sock.setblocking(True)
                    connection.sock.settimeout(1.0)
                    connection.sock.sendall(connection.outbox)
                except OSError:
                    pass
            self._close(connection)
        if listener in self._listeners:
            self._listeners.remove(listener)


class ControlServer:
    """One side channel served by a thread of its own, on a loopback TCP port or a Unix socket.

    ``target``: a TCP port (0 picks one) on ``host``, or ``unix:/path``.
    """

    def __init__(self, target: int | str, dispatch: Handler, host: str = "127.0.0.1") -> None:
        self._hub = ControlHub()
        self._listener = self._hub.add(target, dispatch, host)
        self.path = self._listener.path
        self.port = self._listener.port

    @property
    def address(self) -> str:
        """Where a client connects: ``unix:/path`` or the TCP port's number as text."""
        return self._listener.address

    def start(self) -> None:
        self._hub.start()

    def stop(self) -> None:
        self._hub.stop()


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
