"""One switch (card): ports, data plane, P4Runtime server and side channel, started and stopped together."""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from typing import Any

from p4switch.daemon.addresses import bound_address, remove_socket_files
from p4switch.daemon.card import Card, PacketIoBridge, SwitchOptions, load_program
from p4switch.daemon.program import CompileFunction, default_compile
from p4switch.daemon.side_channel import ControlServer
from p4switch.p4runtime.server import start_p4runtime_server

__all__ = ["PacketIoBridge", "Switch", "SwitchOptions"]

log = logging.getLogger("twinnet.switch")


class Switch:
    """A running switch; ``start()`` then ``stop()`` (idempotent)."""

    def __init__(self, options: SwitchOptions, compile_function: CompileFunction = default_compile) -> None:
        self.options = options
        self.compile_function = compile_function
        self.card = Card(options, compile_function, on_failure=self._dataplane_failed)
        self.slot = self.card.slot
        self.ports = self.card.ports
        self.dataplane = self.card.dataplane
        self.service = self.card.service
        self.handle_control = self.card.handle_control
        #: set when the forwarding thread fails: the daemon then exits (a card without a data plane is dead)
        self.failed = threading.Event()
        self.grpc_server: Any = None
        self.grpc_port = 0
        self.control: ControlServer | None = None
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        self._started = False

    def start(self) -> None:
        """Load the command-line program (if any), open the ports, start serving; raises on failure."""
        try:
            if self.options.program:
                self._load_program(self.options.program)
            self.card.open_ports()
            self.dataplane.start()
            old_umask = os.umask(0o177)  # a Unix socket file is its owner's only (and its folder should be)
            try:
                self.grpc_server, self.grpc_port = start_p4runtime_server(
                    self.options.grpc_address, self.service
                )
            finally:
                os.umask(old_umask)
            if self.options.control_address is not None:
                self.control = ControlServer(self.options.control_address, self.handle_control)
                self.control.start()
            elif self.options.control_port is not None:
                self.control = ControlServer(self.options.control_port, self.handle_control)
                self.control.start()
            self._started = True
        except BaseException:
            self.stop()
            raise

    def _load_program(self, path: str) -> None:
        config = load_program(path, self.options.include_dirs, self.compile_function)
        self.slot.commit(dataclasses.replace(config))

    def _dataplane_failed(self, reason: str) -> None:
        log.critical(
            "device %d: the data plane failed (%s); the switch stops", self.options.device_id, reason
        )
        self.failed.set()

    def grpc_listening_address(self) -> str:
        """Where P4Runtime listens: ``unix:/path``, or HOST:PORT with the port actually bound."""
        return bound_address(self.options.grpc_address, self.grpc_port)

    def remove_socket_files(self) -> None:
        """Remove the Unix socket files of the control surfaces (if any); for an exit without ``stop()``."""
        remove_socket_files((self.options.grpc_address, self.options.control_address))

    @property
    def failure(self) -> str | None:
        """Why the data plane stopped, if it failed."""
        return self.dataplane.failure

    def wait(self, timeout: float | None = None) -> bool:
        """Block until ``stop()``; True if stopped."""
        return self._stopped.wait(timeout)

    def stop(self) -> None:
        """Stop serving, join the data plane thread and close every socket."""
        with self._stop_lock:
            if self._stopped.is_set():
                return
            self.service.stop()  # a long Write batch ends at its next 5 ms slice
            if self.grpc_server is not None:
                # a failed data plane gets no grace: the card is dead, the sooner seen the better
                self.grpc_server.stop(grace=0 if self.failed.is_set() else 0.5).wait(5)
                self.grpc_server = None
            if self.control is not None:
                self.control.stop()
                self.control = None
            self.dataplane.stop()
            self.card.close_ports()
            self._stopped.set()
