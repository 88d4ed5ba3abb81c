"""P4Info lookups by id and name, and P4Runtime bytestring decoding and encoding.

The P4Runtime server speaks ids and bytestrings; the language core speaks fully
qualified names and integers. This module holds the P4Info index both directions
use, and the rules for bytestrings (P4Runtime spec, "Bytestrings"): a value is
accepted in its canonical form (shortest string, ``b"\\x00"`` for zero) or padded
to exactly ``ceil(bitwidth / 8)`` bytes; anything else, or a value that does not
fit the bitwidth, is INVALID_ARGUMENT. Read responses always carry canonical form.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2

EXACT = p4info_pb2.MatchField.EXACT
LPM = p4info_pb2.MatchField.LPM
TERNARY = p4info_pb2.MatchField.TERNARY
RANGE = p4info_pb2.MatchField.RANGE
OPTIONAL = p4info_pb2.MatchField.OPTIONAL
TABLE_ONLY = p4info_pb2.ActionRef.TABLE_ONLY
DEFAULT_ONLY = p4info_pb2.ActionRef.DEFAULT_ONLY


class P4RuntimeError(Exception):
    """An error with a google.rpc code, reported per update or as the call's status."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def invalid(message: str) -> P4RuntimeError:
    return P4RuntimeError(code_pb2.INVALID_ARGUMENT, message)


def decode_bytestring(data: bytes, bitwidth: int, what: str) -> int:
    """The unsigned value of ``data`` for a field of ``bitwidth`` bits, or INVALID_ARGUMENT."""
    width_bytes = (bitwidth + 7) // 8
    if not data:
        raise invalid(f"{what}: empty bytestring")
    if len(data) > width_bytes:
        raise invalid(f"{what}: {len(data)} bytes for a {bitwidth}-bit field (at most {width_bytes})")
    value = int.from_bytes(data, "big")
    if value >> bitwidth:
        raise invalid(f"{what}: value 0x{data.hex()} does not fit in {bitwidth} bits")
    if len(data) != width_bytes and len(data) != canonical_length(value):
        raise invalid(f"{what}: bytestring 0x{data.hex()} is neither canonical nor {width_bytes} bytes long")
    return value


def canonical_length(value: int) -> int:
    return max(1, (value.bit_length() + 7) // 8)


def encode_bytestring(value: int) -> bytes:
    """The canonical P4Runtime bytestring of a non-negative integer."""
    return value.to_bytes(canonical_length(value), "big")


@dataclass
class MatchFieldInfo:
    id: int
    name: str
    bitwidth: int
    match_type: int


@dataclass
class ParamInfo:
    id: int
    name: str
    bitwidth: int


@dataclass
class ActionInfo:
    id: int
    name: str
    params: list[ParamInfo]
    params_by_id: dict[int, ParamInfo] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.params_by_id = {param.id: param for param in self.params}


@dataclass
class TableInfo:
    id: int
    name: str
    match_fields: list[MatchFieldInfo]
    action_scopes: dict[int, int]
    const_default_action_id: int
    is_const: bool
    direct_counter: str | None = None
    fields_by_id: dict[int, MatchFieldInfo] = field(default_factory=dict)
    fields_by_name: dict[str, MatchFieldInfo] = field(default_factory=dict)
    needs_priority: bool = False

    def __post_init__(self) -> None:
        self.fields_by_id = {f.id: f for f in self.match_fields}
        self.fields_by_name = {f.name: f for f in self.match_fields}
        self.needs_priority = any(f.match_type in (TERNARY, RANGE, OPTIONAL) for f in self.match_fields)


@dataclass
class ArrayInfo:
    """An indexed counter or a register."""

    id: int
    name: str
    size: int
    bitwidth: int = 0


class P4InfoIndex:
    """Tables, actions, counters, direct counters and registers of a P4Info, by id and by name."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self.actions = {
            a.preamble.id: ActionInfo(
                a.preamble.id, a.preamble.name, [ParamInfo(p.id, p.name, p.bitwidth) for p in a.params]
            )
            for a in p4info.actions
        }
        self.actions_by_name = {a.name: a for a in self.actions.values()}
        self.tables: dict[int, TableInfo] = {}
        for t in p4info.tables:
            self.tables[t.preamble.id] = TableInfo(
                id=t.preamble.id,
                name=t.preamble.name,
                match_fields=[MatchFieldInfo(m.id, m.name, m.bitwidth, m.match_type) for m in t.match_fields],
                action_scopes={ref.id: ref.scope for ref in t.action_refs},
                const_default_action_id=t.const_default_action_id,
                is_const=t.is_const_table,
            )
        self.tables_by_name = {t.name: t for t in self.tables.values()}
        self.counters = {
            c.preamble.id: ArrayInfo(c.preamble.id, c.preamble.name, c.size) for c in p4info.counters
        }
        self.direct_counters = {c.preamble.id: c.direct_table_id for c in p4info.direct_counters}
        for counter in p4info.direct_counters:
            table = self.tables.get(counter.direct_table_id)
            if table is not None:
                table.direct_counter = counter.preamble.name
        self.registers = {
            r.preamble.id: ArrayInfo(
                r.preamble.id,
                r.preamble.name,
                r.size,
                r.type_spec.bitstring.bit.bitwidth or r.type_spec.bitstring.int.bitwidth,
            )
            for r in p4info.registers
        }

    def table(self, table_id: int) -> TableInfo:
        if table_id == 0:
            raise invalid("table_id 0 is a wildcard, not allowed here")
        table = self.tables.get(table_id)
        if table is None:
            raise P4RuntimeError(code_pb2.NOT_FOUND, f"no table with id {table_id} in the P4Info")
        return table

    def counter(self, counter_id: int) -> ArrayInfo:
        counter = self.counters.get(counter_id)
        if counter is None:
            raise P4RuntimeError(code_pb2.NOT_FOUND, f"no counter with id {counter_id} in the P4Info")
        return counter

    def register(self, register_id: int) -> ArrayInfo:
        register = self.registers.get(register_id)
        if register is None:
            raise P4RuntimeError(code_pb2.NOT_FOUND, f"no register with id {register_id} in the P4Info")
        return register


def p4info_summary(p4info: p4info_pb2.P4Info) -> dict:
    """What a controller relies on in a P4Info: ids, names, widths and kinds (documentation left out)."""
    return {
        "tables": sorted(
            (
                t.preamble.id,
                t.preamble.name,
                tuple((m.id, m.name, m.bitwidth, m.match_type) for m in t.match_fields),
                tuple(sorted(ref.id for ref in t.action_refs)),
            )
            for t in p4info.tables
        ),
        "actions": sorted(
            (a.preamble.id, a.preamble.name, tuple((p.id, p.name, p.bitwidth) for p in a.params))
            for a in p4info.actions
        ),
        "counters": sorted((c.preamble.id, c.preamble.name, c.size) for c in p4info.counters),
        "direct_counters": sorted(
            (c.preamble.id, c.preamble.name, c.direct_table_id) for c in p4info.direct_counters
        ),
        "registers": sorted((r.preamble.id, r.preamble.name, r.size) for r in p4info.registers),
        "meters": sorted((m.preamble.id, m.preamble.name) for m in p4info.meters),
        "controller_packet_metadata": sorted(
            (c.preamble.id, c.preamble.name, tuple((m.id, m.name, m.bitwidth) for m in c.metadata))
            for c in p4info.controller_packet_metadata
        ),
    }


def p4info_mismatch(given: p4info_pb2.P4Info, program: p4info_pb2.P4Info) -> str | None:
    """None when ``given`` describes the same objects as the program's P4Info, else what differs."""
    a, b = p4info_summary(given), p4info_summary(program)
    for kind in a:
        if a[kind] != b[kind]:
            only_given = set(a[kind]) - set(b[kind])
            only_program = set(b[kind]) - set(a[kind])
            return (
                f"P4Info {kind} differ from the program's: given has {sorted(only_given)[:3]}, "
                f"program has {sorted(only_program)[:3]}"
            )
    return None
