"""A switch process hosting many cards, as one Open vSwitch daemon serves many bridges.

Every card has its own pipeline state, ports, priority queues, rates, PFC state,
counters, P4Runtime device id and (optionally) side channel; the process shares the
compiled program (compiled once), one gRPC server (each request routed by device id,
p4switch.p4runtime.dispatch), one forwarding loop thread over every port of every card
(p4switch.daemon.loop) and one thread serving every side channel (ControlHub).

A card killed over its side channel (``{"cmd": "kill"}``) fails as a crashed card would:
its ports closed, its queued frames discarded, its device removed from the gRPC server
(NOT_FOUND from then on, its streams ended), its side channel closed after the answer.
The process side channel (``--process-control``) answers ``{"cmd": "health"}`` for all
cards at once. When the loop fails, every card of the process is dead: the process exits.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import threading
from dataclasses import dataclass, field
from typing import Any

from p4switch.daemon.addresses import bound_address, remove_socket_files
from p4switch.daemon.card import Card, SwitchOptions, load_program
from p4switch.daemon.host_config import CardConfig, check_cards
from p4switch.daemon.loop import ForwardingLoop
from p4switch.daemon.ports import close_ports
from p4switch.daemon.program import CompileFunction, default_compile
from p4switch.daemon.side_channel import ControlHub, Listener
from p4switch.p4runtime.dispatch import DispatchingService
from p4switch.p4runtime.server import start_p4runtime_server

log = logging.getLogger("twinnet.switch")

#: gRPC workers besides those the cards' open StreamChannels hold (two per card allowed for)
BASE_GRPC_WORKERS = 8


@dataclass
class HostOptions:
    """A multi-card process: the options all cards share (``base``), the cards, the process side channel."""

    base: SwitchOptions
    cards: list[CardConfig] = field(default_factory=list)
    process_control: str | None = None


class SwitchHost:
    """The cards of one process; ``start()`` then ``stop()`` (idempotent)."""

    def __init__(self, options: HostOptions, compile_function: CompileFunction = default_compile) -> None:
        check_cards(options.cards)
        self.options = options
        self.compile_function = compile_function
        #: set when the forwarding loop fails: the process then exits with all its cards
        self.failed = threading.Event()
        self.loop = ForwardingLoop(on_failure=self._loop_failed)
        self.cards: dict[int, Card] = {}
        for config in options.cards:
            card_options = dataclasses.replace(
                options.base,
                device_id=config.device_id,
                interfaces=list(config.interfaces),
                control_address=config.control_address,
                control_port=None,
            )
            self.cards[config.device_id] = Card(card_options, compile_function)
        self.dispatcher = DispatchingService()
        self.hub = ControlHub()
        self.listeners: dict[int, Listener] = {}
        self.process_listener: Listener | None = None
        self.grpc_server: Any = None
        self.grpc_port = 0
        self._kill_lock = threading.Lock()
        self._stop_lock = threading.Lock()
        self._stopped = threading.Event()

    def start(self) -> None:
        """Compile the program once, open every card's ports, start the loop, gRPC and side channels."""
        try:
            if self.options.base.program:
                config = load_program(
                    self.options.base.program, self.options.base.include_dirs, self.compile_function
                )
                for card in self.cards.values():
                    card.slot.commit(dataclasses.replace(config))  # its own cookie; program and P4Info shared
            for card in self.cards.values():
                card.open_ports()
                self.loop.add(card.dataplane)
                self.dispatcher.add(card.service)
            self.loop.start()
            old_umask = os.umask(0o177)  # Unix socket files are their owner's only
            try:
                self.grpc_server, self.grpc_port = start_p4runtime_server(
                    self.options.base.grpc_address,
                    self.dispatcher,
                    workers=BASE_GRPC_WORKERS + 2 * len(self.cards),
                )
            finally:
                os.umask(old_umask)
            for device_id, card in self.cards.items():
                if card.options.control_address is not None:
                    handler = functools.partial(self.handle_card_control, device_id)
                    self.listeners[device_id] = self.hub.add(card.options.control_address, handler)
            if self.options.process_control is not None:
                self.process_listener = self.hub.add(
                    self.options.process_control, self.handle_process_control
                )
            self.hub.start()
        except BaseException:
            self.stop()
            raise

    def _loop_failed(self, reason: str) -> None:
        log.critical(
            "the forwarding loop failed (%s); the process stops with its %d cards", reason, len(self.cards)
        )
        self.failed.set()

    # ----- side channels -----------------------------------------------------------------------
    def handle_card_control(self, device_id: int, message: dict[str, Any]) -> dict[str, Any]:
        """A card's side channel: the single-card protocol, plus ``{"cmd": "kill"}``."""
        if message.get("cmd") == "kill":
            self.kill(device_id)
            listener = self.listeners.get(device_id)
            if listener is not None:
                self.hub.close_after_answer(listener)
            return {"ok": True}
        return self.cards[device_id].handle_control(message)

    def kill(self, device_id: int) -> None:
        """Fail one card at once: ports closed, queues discarded, its P4Runtime device removed."""
        card = self.cards[device_id]
        with self._kill_lock:
            if card.dataplane.stopped_reason is not None:
                return
            card.dataplane.stopped_reason = "killed"
        self.dispatcher.remove(device_id)
        self.loop.remove(card.dataplane)
        log.warning("device %d killed over its side channel", device_id)

    def health(self) -> dict[str, Any]:
        """The loop's liveness and every card's."""
        return {
            "ok": True,
            "alive": self.loop.alive(),
            "failure": self.loop.failure,
            "beat_age_s": self.loop.beat_age(),
            "cards": {
                str(device_id): {"alive": card.dataplane.alive(), "failure": card.dataplane.failure}
                for device_id, card in self.cards.items()
            },
        }

    def handle_process_control(self, message: dict[str, Any]) -> dict[str, Any]:
        command = message.get("cmd")
        if command == "health":
            return self.health()
        return {"ok": False, "error": f"unknown cmd {command!r} (the process side channel answers health)"}

    # ----- end ---------------------------------------------------------------------------------
    def grpc_listening_address(self) -> str:
        """Where P4Runtime listens: ``unix:/path``, or HOST:PORT with the port actually bound."""
        return bound_address(self.options.base.grpc_address, self.grpc_port)

    def remove_socket_files(self) -> None:
        """Remove the Unix socket files of gRPC and every side channel; for an exit without ``stop()``."""
        addresses = [self.options.base.grpc_address, self.options.process_control]
        remove_socket_files(addresses + [card.options.control_address for card in self.cards.values()])

    @property
    def failure(self) -> str | None:
        """Why the forwarding loop stopped, if it failed."""
        return self.loop.failure

    def stop(self) -> None:
        """Stop serving, join the loop, close every socket."""
        with self._stop_lock:
            if self._stopped.is_set():
                return
            for card in self.cards.values():
                card.service.stop()
            if self.grpc_server is not None:
                self.grpc_server.stop(grace=0 if self.failed.is_set() else 0.5).wait(5)
                self.grpc_server = None
            self.hub.stop()
            self.loop.stop()
            close_ports([port for card in self.cards.values() for port in card.ports])
            self._stopped.set()
