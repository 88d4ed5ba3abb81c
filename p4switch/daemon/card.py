"""One card: its pipeline slot, ports, data plane, P4Runtime service and side-channel answers.

A single-card switch (switch.py) gives a card its own forwarding loop, gRPC server and
side channel; a multi-card process (host.py) shares one of each among all its cards.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from p4.v1 import p4runtime_pb2

from p4switch.daemon.dataplane import DataPlane
from p4switch.daemon.pfc import PfcSettings
from p4switch.daemon.ports import Port, close_ports
from p4switch.daemon.program import CompileFunction, LoadedConfig, PipelineSlot, default_compile
from p4switch.daemon.queues import DEFAULT_QUEUE_DEPTH, MAX_QUEUE_DEPTH, check_rate
from p4switch.daemon.untrusted import remember
from p4switch.p4runtime.info import P4InfoIndex, encode_bytestring
from p4switch.p4runtime.server import P4RuntimeService

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

    def __init__(self, switch: Card) -> None:
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


class Card:
    """The per-card state of a switch: pipeline slot, ports, data plane, P4Runtime service."""

    def __init__(
        self,
        options: SwitchOptions,
        compile_function: CompileFunction = default_compile,
        on_failure: Any = None,
    ) -> None:
        self.options = options
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
            on_failure=on_failure,
            pfc=options.lossless,
        )
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

    def open_ports(self) -> None:
        """Open the ports' sockets and set the initial rate (raises OSError for a missing interface)."""
        for port in self.ports:
            port.open(self.options.pcap_dir)
        if self.options.queue_rate_pps is not None:
            self.dataplane.set_rate(check_rate(self.options.queue_rate_pps))

    def close_ports(self) -> None:
        close_ports(self.ports)

    def handle_control(self, message: dict[str, Any]) -> dict[str, Any]:
        """Answer one side-channel request (``side_channel``); a bad argument is refused, nothing changed."""
        command = message.get("cmd")
        dataplane = self.dataplane
        if command == "stats":
            return {"ok": True, "device_id": self.options.device_id, **dataplane.snapshot()}
        if command == "health":
            return {"ok": True, **dataplane.health()}
        if command not in ("set_queue_rate", "set_queue_depth"):
            return {"ok": False, "error": f"unknown cmd {command!r}"}
        port = message.get("port")
        if port is not None and (
            isinstance(port, bool) or not isinstance(port, int) or port not in dataplane.queues
        ):
            return {"ok": False, "error": f"no port {port!r}"}
        if command == "set_queue_rate":
            try:
                rate = check_rate(message.get("rate_pps"))
            except ValueError as error:
                return {"ok": False, "error": str(error)}
            dataplane.set_rate(rate, port)
            return {"ok": True}
        depth = message.get("depth")
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_QUEUE_DEPTH:
            return {
                "ok": False,
                "error": f"queue depth must be an integer 1..{MAX_QUEUE_DEPTH}, not {depth!r}",
            }
        dataplane.set_depth(depth, port)
        return {"ok": True}


def load_program(
    path: str, include_dirs: Sequence[str], compile_function: CompileFunction = default_compile
) -> LoadedConfig:
    """Compile the command line's program once: the config every card of the process starts with.

    The P4Info, its index and the source text are shared by the cards (nothing of it is
    changed in place: a card's reconfiguration replaces its config).
    """
    program = compile_function(path, include_dirs=tuple(include_dirs))
    with open(path, "rb") as handle:
        source = handle.read()
    if compile_function is default_compile:  # the same text over P4Runtime needs no recompiling
        try:
            remember(source.decode("utf-8"), program)
        except UnicodeDecodeError:
            pass
    return LoadedConfig(program, P4InfoIndex(program.p4info), program.p4info, source, 0)
