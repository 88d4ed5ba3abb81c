"""One switch (card): ports, data plane, P4Runtime server and side channel, started and stopped together."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from p4.v1 import p4runtime_pb2

from p4switch.daemon.addresses import UNIX_PREFIX
from p4switch.daemon.dataplane import DataPlane
from p4switch.daemon.pfc import PfcSettings
from p4switch.daemon.ports import Port
from p4switch.daemon.program import (
    CompileFunction,
    LoadedConfig,
    PipelineSlot,
    default_compile,
)
from p4switch.daemon.queues import DEFAULT_QUEUE_DEPTH, MAX_QUEUE_DEPTH, check_rate
from p4switch.daemon.side_channel import ControlServer
from p4switch.daemon.untrusted import remember
from p4switch.p4runtime.info import encode_bytestring
from p4switch.p4runtime.server import P4RuntimeService, start_p4runtime_server

log = logging.getLogger("twinnet.switch")


@dataclass
class SwitchOptions:
    """What ``twinnet-switch`` takes on its command line."""

    device_id: int = 0
    interfaces: list[tuple[int, str]] = field(default_factory=list)
    program: str | None = None
    include_dirs: Sequence[str] = ()
    grpc_address: str = "127.0.0.1:9559"
    control_port: int | None = 9090
    #: ``unix:/path`` of the side channel; when given it replaces ``control_port`` (TCP on loopback)
    control_address: str | None = None
    priority_queues: int = 1
    queue_depth: int | None = None
    queue_rate_pps: float | None = None
    cpu_port: int | None = None
    pcap_dir: str | None = None
    lossless: PfcSettings | None = None

    def effective_queue_depth(self) -> int:
        """The queue depth given; else bmv2's 64, or in lossless mode one no ingress can overrun."""
        if self.queue_depth is not None:
            return self.queue_depth
        if self.lossless is not None:
            return self.lossless.queue_depth(len(self.interfaces))
        return DEFAULT_QUEUE_DEPTH


class PacketIoBridge:
    """Packet-in and packet-out through the CPU port, with the program's controller headers.

    A frame the pipeline sends to the CPU port starts with the ``packet_in`` header of the
    program's P4Info (its metadata fields packed in order, most significant bit first); it
    becomes a PacketIn with those fields as metadata and the rest as payload. A PacketOut's
    metadata is packed the same way into the ``packet_out`` header put before its payload.
    """

    def __init__(self, switch: Switch) -> None:
        self.switch = switch

    def _header(self, name: str) -> list[tuple[int, int]]:
        config = self.switch.slot.config
        if config is None:
            return []
        for header in config.p4info.controller_packet_metadata:
            if header.preamble.name == name:
                return [(meta.id, meta.bitwidth) for meta in header.metadata]
        return []

    def packet_in(self, frame: bytes) -> None:
        fields = self._header("packet_in")
        total_bits = sum(width for _, width in fields)
        header_bytes = (total_bits + 7) // 8
        message = p4runtime_pb2.StreamMessageResponse()
        message.packet.payload = frame[header_bytes:]
        value = int.from_bytes(frame[:header_bytes], "big") >> (header_bytes * 8 - total_bits)
        shift = total_bits
        for meta_id, width in fields:
            shift -= width
            meta = message.packet.metadata.add()
            meta.metadata_id = meta_id
            field_value = (value >> shift) & ((1 << width) - 1)
            meta.value = encode_bytestring(field_value)
        if not self.switch.service.arbitration.notify_primary(message):
            log.debug("packet-in dropped: no primary controller")

    def packet_out(self, packet: p4runtime_pb2.PacketOut) -> None:
        fields = self._header("packet_out")
        given = {meta.metadata_id: int.from_bytes(meta.value, "big") for meta in packet.metadata}
        value = 0
        total_bits = 0
        for meta_id, width in fields:
            value = (value << width) | (given.get(meta_id, 0) & ((1 << width) - 1))
            total_bits += width
        header_bytes = (total_bits + 7) // 8
        value <<= header_bytes * 8 - total_bits
        header = value.to_bytes(header_bytes, "big") if header_bytes else b""
        self.switch.dataplane.inject(header + packet.payload)


class Switch:
    """A running switch; ``start()`` then ``stop()`` (idempotent)."""

    def __init__(self, options: SwitchOptions, compile_function: CompileFunction = default_compile) -> None:
        self.options = options
        self.compile_function = compile_function
        self.slot = PipelineSlot()
        self.ports = [Port(number, interface) for number, interface in options.interfaces]
        bridge = PacketIoBridge(self) if options.cpu_port is not None else None
        self.dataplane = DataPlane(
            self.ports,
            self.slot,
            options.priority_queues,
            options.effective_queue_depth(),
            cpu_port=options.cpu_port,
            packet_in=bridge.packet_in if bridge else None,
            on_failure=self._dataplane_failed,
            pfc=options.lossless,
        )
        #: set when the forwarding thread fails: the daemon then exits (a card without a data plane is dead)
        self.failed = threading.Event()
        include_dirs = list(options.include_dirs)
        if options.program:
            include_dirs.append(os.path.dirname(os.path.abspath(options.program)))
        self.service = P4RuntimeService(
            options.device_id,
            self.slot,
            compile_function,
            include_dirs,
            packet_out=bridge.packet_out if bridge else None,
        )
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
            for port in self.ports:
                port.open(self.options.pcap_dir)
            if self.options.queue_rate_pps is not None:
                self.dataplane.set_rate(check_rate(self.options.queue_rate_pps))
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
        program = self.compile_function(path, include_dirs=tuple(self.options.include_dirs))
        with open(path, "rb") as handle:
            source = handle.read()
        if self.compile_function is default_compile:  # the same text over P4Runtime needs no recompiling
            try:
                remember(source.decode("utf-8"), program)
            except UnicodeDecodeError:
                pass
        from p4switch.p4runtime.info import P4InfoIndex

        self.slot.commit(LoadedConfig(program, P4InfoIndex(program.p4info), program.p4info, source, 0))

    def _dataplane_failed(self, reason: str) -> None:
        log.critical(
            "device %d: the data plane failed (%s); the switch stops", self.options.device_id, reason
        )
        self.failed.set()

    def handle_control(self, message: dict[str, Any]) -> dict[str, Any]:
        """Answer one side-channel request (``side_channel``); a bad argument is refused, nothing changed."""
        command = message.get("cmd")
        if command == "stats":
            return {"ok": True, "device_id": self.options.device_id, **self.dataplane.snapshot()}
        if command == "health":
            return {"ok": True, **self.dataplane.health()}
        if command not in ("set_queue_rate", "set_queue_depth"):
            return {"ok": False, "error": f"unknown cmd {command!r}"}
        port = message.get("port")
        if port is not None and (
            isinstance(port, bool) or not isinstance(port, int) or port not in self.dataplane.queues
        ):
            return {"ok": False, "error": f"no port {port!r}"}
        if command == "set_queue_rate":
            try:
                rate = check_rate(message.get("rate_pps"))
            except ValueError as error:
                return {"ok": False, "error": str(error)}
            self.dataplane.set_rate(rate, port)
            return {"ok": True}
        depth = message.get("depth")
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_QUEUE_DEPTH:
            return {
                "ok": False,
                "error": f"queue depth must be an integer 1..{MAX_QUEUE_DEPTH}, not {depth!r}",
            }
        self.dataplane.set_depth(depth, port)
        return {"ok": True}

    def grpc_listening_address(self) -> str:
        """Where P4Runtime listens: ``unix:/path``, or HOST:PORT with the port actually bound."""
        address = self.options.grpc_address
        if address.startswith(UNIX_PREFIX):
            return address
        return f"{address.rsplit(':', 1)[0]}:{self.grpc_port}"

    def remove_socket_files(self) -> None:
        """Remove the Unix socket files of the control surfaces (if any); for an exit without ``stop()``."""
        for address in (self.options.grpc_address, self.options.control_address or ""):
            if address.startswith(UNIX_PREFIX):
                try:
                    os.unlink(address[len(UNIX_PREFIX) :])
                except OSError:
                    pass

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
            for port in self.ports:
                port.close()
            self._stopped.set()
