"""A tiny stand-in for the language core's program and pipeline, for the switch's own tests only.

It implements the calls of docs/target-api.md that the switch uses (action parameters
as a tuple in declaration order, as the core takes them), for one fixed
program: table ``MyIngress.route`` (exact ``standard_metadata.ingress_port`` 9 bits,
exact ``hdr.ethernet.dst_addr`` 48 bits; actions ``MyIngress.forward(port, prio)``,
``MyIngress.drop``, default ``MyIngress.drop``) with a direct counter, an indexed
counter ``MyIngress.rx_port`` (16 cells, by ingress port) and a register
``MyIngress.last_length`` (4 cells of 32 bits). Frames with EtherType 0xDEAD make
ingress raise, to stand for a crash inside one packet; frames with EtherType 0x88B5
and fewer than 20 bytes after the Ethernet header end with ``parser_error`` 2
(PacketTooShort) and, as in v1model, go on through the table. The tests of this module check
the stand-in against the API's semantics that the switch relies on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from p4.config.v1 import p4info_pb2

TABLE_ID = 33554433
ACTION_FORWARD_ID = 16777217
ACTION_DROP_ID = 16777218
DIRECT_COUNTER_ID = 318767105
COUNTER_ID = 302011393
REGISTER_ID = 369098753
CRASH_ETHERTYPE = 0xDEAD
HEADER_ETHERTYPE = 0x88B5
HEADER_BYTES = 20
SOURCE = "/* stand-in program: the switch tests replace the compiler */\n"


class StandInEntryError(ValueError):
    """Named like the core's EntryError, so the switch maps it the same way."""


StandInEntryError.__name__ = "EntryError"


@dataclass
class Entry:
    match: dict
    action: str
    params: tuple
    priority: int


@dataclass
class IngressResult:
    dropped: bool
    egress_spec: int
    priority: int
    packet_length: int
    frame: bytes
    parser_error: int = 0


def stand_in_p4info() -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    table = info.tables.add()
    table.preamble.id, table.preamble.name, table.preamble.alias = TABLE_ID, "MyIngress.route", "route"
    for field_id, name, width in ((1, "standard_metadata.ingress_port", 9), (2, "hdr.ethernet.dst_addr", 48)):
        field = table.match_fields.add()
        field.id, field.name, field.bitwidth, field.match_type = (
            field_id,
            name,
            width,
            p4info_pb2.MatchField.EXACT,
        )
    table.action_refs.add().id = ACTION_FORWARD_ID
    table.action_refs.add().id = ACTION_DROP_ID
    table.direct_resource_ids.append(DIRECT_COUNTER_ID)
    table.size = 1024
    forward = info.actions.add()
    forward.preamble.id, forward.preamble.name = ACTION_FORWARD_ID, "MyIngress.forward"
    for param_id, name, width in ((1, "port", 9), (2, "prio", 3)):
        param = forward.params.add()
        param.id, param.name, param.bitwidth = param_id, name, width
    drop = info.actions.add()
    drop.preamble.id, drop.preamble.name = ACTION_DROP_ID, "MyIngress.drop"
    direct = info.direct_counters.add()
    direct.preamble.id, direct.preamble.name = DIRECT_COUNTER_ID, "MyIngress.route_counter"
    direct.direct_table_id = TABLE_ID
    counter = info.counters.add()
    counter.preamble.id, counter.preamble.name, counter.size = COUNTER_ID, "MyIngress.rx_port", 16
    register = info.registers.add()
    register.preamble.id, register.preamble.name, register.size = REGISTER_ID, "MyIngress.last_length", 4
    register.type_spec.bitstring.bit.bitwidth = 32
    return info


class StandInPipeline:
    """Fresh state per pipeline; exact-match lookups in a dict."""

    def __init__(self) -> None:
        self.entries: dict[tuple, Entry] = {}
        self.direct: dict[tuple, list[int]] = {}
        self.default = ("MyIngress.drop", ())
        self.rx_port = [[0, 0] for _ in range(16)]
        self.last_length = [0] * 4
        self.egress_calls: list[tuple[int, int, int]] = []

    @staticmethod
    def _key(match: dict) -> tuple:
        return (match["standard_metadata.ingress_port"], match["hdr.ethernet.dst_addr"])

    def table_insert(self, table, match, action, params, priority=0) -> None:
        key = self._key(match)
        if key in self.entries:
            raise StandInEntryError("duplicate")
        self.entries[key] = Entry(dict(match), action, tuple(params), priority)
        self.direct[key] = [0, 0]

    def table_modify(self, table, match, action, params, priority=0) -> None:
        key = self._key(match)
        if key not in self.entries:
            raise StandInEntryError("missing")
        self.entries[key] = Entry(dict(match), action, tuple(params), priority)

    def table_delete(self, table, match, priority=0) -> None:
        key = self._key(match)
        if key not in self.entries:
            raise StandInEntryError("missing")
        del self.entries[key]
        del self.direct[key]

    def table_set_default(self, table, action, params) -> None:
        self.default = (action, tuple(params))

    def table_reset_default(self, table) -> None:
        self.default = ("MyIngress.drop", ())

    def table_entries(self, table) -> list[Entry]:
        return list(self.entries.values())

    def table_default(self, table):
        return self.default

    def counter_read(self, name, index):
        return tuple(self.rx_port[index])

    def direct_counter_read(self, table, match, priority=0):
        return tuple(self.direct[self._key(match)])

    def counter_reset(self, name) -> None:
        self.rx_port = [[0, 0] for _ in range(16)]

    def register_read(self, name, index) -> int:
        return self.last_length[index]

    def register_write(self, name, index, value) -> None:
        self.last_length[index] = value

    def ingress(self, packet: bytes, ingress_port: int, timestamp_us: int = 0) -> IngressResult:
        if int.from_bytes(packet[12:14], "big") == CRASH_ETHERTYPE:
            raise RuntimeError("stand-in crash")
        self.rx_port[ingress_port % 16][0] += 1
        self.rx_port[ingress_port % 16][1] += len(packet)
        self.last_length[ingress_port % 4] = len(packet)
        parser_error = 0
        if int.from_bytes(packet[12:14], "big") == HEADER_ETHERTYPE and len(packet) < 14 + HEADER_BYTES:
            parser_error = 2
        key = (ingress_port, int.from_bytes(packet[0:6], "big"))
        entry = self.entries.get(key)
        action, params = (entry.action, entry.params) if entry else self.default
        if entry is not None:
            self.direct[key][0] += 1
            self.direct[key][1] += len(packet)
        if action == "MyIngress.forward":
            port, prio = params
            return IngressResult(False, port, prio, len(packet), packet, parser_error)
        return IngressResult(True, 511, 0, len(packet), packet, parser_error)

    def egress(
        self,
        result: IngressResult,
        egress_port: int,
        enq_qdepth: int = 0,
        deq_qdepth: int = 0,
        deq_timedelta: int = 0,
        timestamp_us: int = 0,
    ) -> bytes:
        self.egress_calls.append((egress_port, enq_qdepth, deq_qdepth))
        return result.frame

    def process(self, packet: bytes, ingress_port: int, timestamp_us: int = 0) -> list[tuple[int, bytes]]:
        result = self.ingress(packet, ingress_port, timestamp_us)
        return [] if result.dropped else [(result.egress_spec, self.egress(result, result.egress_spec))]


class StandInProgram:
    def __init__(self, path: str) -> None:
        self.path = path
        self.p4info = stand_in_p4info()
        self.source_hash = "stand-in"
        self.pipelines: list[StandInPipeline] = []

    def new_pipeline(self) -> StandInPipeline:
        pipeline = StandInPipeline()
        self.pipelines.append(pipeline)
        return pipeline


def stand_in_compile(path: str, include_dirs: Any = (), **_: Any) -> StandInProgram:
    """Replaces ``compile_program``: every source is the stand-in program, except one saying BROKEN."""
    with open(path, encoding="utf-8") as handle:
        if "BROKEN" in handle.read():
            raise SyntaxError(f"{path}:1:1: error: stand-in compile error")
    return StandInProgram(path)


def test_stand_in_forwards_by_entry_and_drops_by_default() -> None:
    import pytest  # imported here: the benchmark loads this module where pytest is not installed

    pipeline = StandInPipeline()
    frame = bytes.fromhex("0000000000aa") + bytes(6) + b"\x08\x00" + bytes(50)
    assert pipeline.process(frame, 1) == []
    pipeline.table_insert(
        "MyIngress.route",
        {"standard_metadata.ingress_port": 1, "hdr.ethernet.dst_addr": 0xAA},
        "MyIngress.forward",
        (2, 5),
    )
    assert pipeline.process(frame, 1) == [(2, frame)]
    assert pipeline.ingress(frame, 1).priority == 5
    with pytest.raises(ValueError):
        pipeline.table_insert(
            "MyIngress.route",
            {"standard_metadata.ingress_port": 1, "hdr.ethernet.dst_addr": 0xAA},
            "MyIngress.drop",
            (),
        )
