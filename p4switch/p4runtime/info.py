"""P4Info lookups by id and by name, and P4Runtime bytestrings both ways: one module for server and client.

The P4Runtime server speaks ids and bytestrings; the language core and the controller
speak fully qualified names and integers. This module holds the P4Info index both use
(:class:`P4InfoIndex`: by id for the server, by name for a controller) and the rules for
bytestrings (P4Runtime spec v1.3, section 8.4 "Bytestrings"): a value is written in its
canonical form (shortest big-endian string, ``b"\\x00"`` for zero); a server accepts
any non-empty string whose value fits the bitwidth, so extra leading zero bytes are
fine (``b"\\x00\\x00\\x04"`` for a bit<16> 4, as bmv2 accepts) and a value that does
not fit is INVALID_ARGUMENT. Read responses always carry the canonical form.

It needs protobuf and the P4Runtime modules only, so a controller may import it.

>>> info = p4info_pb2.P4Info()
>>> table = info.tables.add(); table.preamble.id = 7; table.preamble.name = "MyIngress.t"
>>> field = table.match_fields.add(); field.id = 1; field.name = "hdr.x"; field.bitwidth = 9
>>> index = P4InfoIndex(info)
>>> index.table_id("MyIngress.t"), index.match_field("MyIngress.t", "hdr.x").bitwidth
(7, 9)
>>> encode_bytestring(256, 9), decode_bytestring(b"\\x00\\x01\\x00", 9, "x")
(b'\\x01\\x00', 256)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.errors import P4SwitchError

EXACT = p4info_pb2.MatchField.EXACT
LPM = p4info_pb2.MatchField.LPM
TERNARY = p4info_pb2.MatchField.TERNARY
RANGE = p4info_pb2.MatchField.RANGE
OPTIONAL = p4info_pb2.MatchField.OPTIONAL
TABLE_ONLY = p4info_pb2.ActionRef.TABLE_ONLY
DEFAULT_ONLY = p4info_pb2.ActionRef.DEFAULT_ONLY


class P4RuntimeError(P4SwitchError):
    """An error with a google.rpc code, reported per update or as the call's status."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class EncodingError(P4RuntimeError, ValueError):
    """A value that does not fit its field or parameter, or a malformed bytestring (INVALID_ARGUMENT)."""

    def __init__(self, message: str) -> None:
        super().__init__(code_pb2.INVALID_ARGUMENT, message)


class P4InfoLookupError(P4SwitchError, KeyError):
    """A name the P4Info does not have (the program is not the one the client expects)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown P4Info name"


def invalid(message: str) -> P4RuntimeError:
    return P4RuntimeError(code_pb2.INVALID_ARGUMENT, message)


def decode_bytestring(data: bytes, bitwidth: int, what: str) -> int:
    """The unsigned value of ``data`` for a field of ``bitwidth`` bits, or EncodingError (INVALID_ARGUMENT).

    Any length is accepted as long as the value fits: leading zero bytes are padding.
    """
    if not data:
        raise EncodingError(f"{what}: empty bytestring")
    value = int.from_bytes(data, "big")
    if value >> bitwidth:
        raise EncodingError(f"{what}: value 0x{data.hex()} does not fit in {bitwidth} bits")
    return value


def canonical_length(value: int) -> int:
    return max(1, (value.bit_length() + 7) // 8)


def encode_bytestring(value: int, bitwidth: int | None = None, what: str = "value") -> bytes:
    """The canonical bytestring of a non-negative integer; EncodingError if it does not fit ``bitwidth``."""
    if value < 0 or (bitwidth is not None and value >> bitwidth):
        raise EncodingError(f"{what} = {value} does not fit in {bitwidth} bits")
    return value.to_bytes(canonical_length(value), "big")


@dataclass
class MatchFieldInfo:
    """A table's match field: id, name, width in bits and match kind."""

    id: int
    name: str
    bitwidth: int
    match_type: int


@dataclass
class ParamInfo:
    """An action parameter: id, name and width in bits."""

    id: int
    name: str
    bitwidth: int


@dataclass
class ActionInfo:
    """An action: id, name and parameters in P4Info order."""

    id: int
    name: str
    params: list[ParamInfo]
    params_by_id: dict[int, ParamInfo] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.params_by_id = {param.id: param for param in self.params}


@dataclass
class TableInfo:
    """A table: id, name, match fields in P4Info order, its actions' scopes, const-ness and size."""

    id: int
    name: str
    match_fields: list[MatchFieldInfo]
    action_scopes: dict[int, int]
    const_default_action_id: int
    is_const: bool
    size: int = 0
    direct_counter: str | None = None
    direct_meter: str | None = None
    fields_by_id: dict[int, MatchFieldInfo] = field(default_factory=dict)
    fields_by_name: dict[str, MatchFieldInfo] = field(default_factory=dict)
    needs_priority: bool = False

    def __post_init__(self) -> None:
        self.fields_by_id = {f.id: f for f in self.match_fields}
        self.fields_by_name = {f.name: f for f in self.match_fields}
        self.needs_priority = any(f.match_type in (TERNARY, RANGE, OPTIONAL) for f in self.match_fields)

    @property
    def action_ids(self) -> frozenset[int]:
        """The ids of the actions the table offers (as entry or default action)."""
        return frozenset(self.action_scopes)


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
                size=t.size,
            )
        self.tables_by_name = {t.name: t for t in self.tables.values()}
        self.counters = {
            c.preamble.id: ArrayInfo(c.preamble.id, c.preamble.name, c.size) for c in p4info.counters
        }
        self.counters_by_name = {c.name: c for c in self.counters.values()}
        self.direct_counters = {c.preamble.id: c.direct_table_id for c in p4info.direct_counters}
        for counter in p4info.direct_counters:
            table = self.tables.get(counter.direct_table_id)
            if table is not None:
                table.direct_counter = counter.preamble.name
        self.meters = {
            m.preamble.id: ArrayInfo(m.preamble.id, m.preamble.name, m.size) for m in p4info.meters
        }
        for meter in p4info.direct_meters:
            table = self.tables.get(meter.direct_table_id)
            if table is not None:
                table.direct_meter = meter.preamble.name
        self.registers = {
            r.preamble.id: ArrayInfo(
                r.preamble.id,
                r.preamble.name,
                r.size,
                r.type_spec.bitstring.bit.bitwidth or r.type_spec.bitstring.int.bitwidth,
            )
            for r in p4info.registers
        }

    # -- by id (the server: unknown ids are P4Runtime errors) ----------------------------------
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

    def meter(self, meter_id: int) -> ArrayInfo:
        meter = self.meters.get(meter_id)
        if meter is None:
            raise P4RuntimeError(code_pb2.NOT_FOUND, f"no meter with id {meter_id} in the P4Info")
        return meter

    def register(self, register_id: int) -> ArrayInfo:
        register = self.registers.get(register_id)
        if register is None:
            raise P4RuntimeError(code_pb2.NOT_FOUND, f"no register with id {register_id} in the P4Info")
        return register

    # -- by name (a controller: unknown names are P4InfoLookupError) ----------------------------
    def table_named(self, name: str) -> TableInfo:
        try:
            return self.tables_by_name[name]
        except KeyError:
            raise P4InfoLookupError(f"the P4Info has no table {name!r}") from None

    def table_id(self, name: str) -> int:
        return self.table_named(name).id

    def match_field(self, table: str, name: str) -> MatchFieldInfo:
        found = self.table_named(table).fields_by_name.get(name)
        if found is None:
            raise P4InfoLookupError(f"table {table!r} has no match field {name!r}")
        return found

    def action_named(self, name: str) -> ActionInfo:
        try:
            return self.actions_by_name[name]
        except KeyError:
            raise P4InfoLookupError(f"the P4Info has no action {name!r}") from None

    def action_id(self, name: str) -> int:
        return self.action_named(name).id

    def param(self, action: str, name: str) -> ParamInfo:
        for info in self.action_named(action).params:
            if info.name == name:
                return info
        raise P4InfoLookupError(f"action {action!r} has no parameter {name!r}")

    def counter_named(self, name: str) -> ArrayInfo:
        try:
            return self.counters_by_name[name]
        except KeyError:
            raise P4InfoLookupError(f"the P4Info has no counter {name!r}") from None

    def counter_id(self, name: str) -> int:
        return self.counter_named(name).id

    def require(
        self,
        tables: dict[str, tuple[tuple[str, ...], tuple[str, ...]]],
        actions: dict[str, tuple[str, ...]],
        counters: tuple[str, ...],
    ) -> None:
        """Raise P4InfoLookupError naming the first missing table, field, action, parameter or counter.

        ``tables``: name -> (match field names in order, action names it must offer);
        ``actions``: name -> parameter names in order.
        """
        for name, (fields, table_actions) in tables.items():
            table = self.table_named(name)
            have = tuple(info.name for info in table.match_fields)
            if have != fields:
                raise P4InfoLookupError(f"table {name!r} matches on {list(have)}, expected {list(fields)}")
            for action in table_actions:
                if self.action_named(action).id not in table.action_scopes:
                    raise P4InfoLookupError(f"table {name!r} does not offer action {action!r}")
        for name, params in actions.items():
            have = tuple(param.name for param in self.action_named(name).params)
            if have != params:
                raise P4InfoLookupError(f"action {name!r} takes {list(have)}, expected {list(params)}")
        for name in counters:
            self.counter_named(name)


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


def p4info_mismatch(
    given: p4info_pb2.P4Info, program: p4info_pb2.P4Info, labels: tuple[str, str] = ("given", "program")
) -> str | None:
    """None when ``given`` describes the same objects as the program's P4Info, else what differs.

    ``labels`` name the two sides in the message (the server's "given" and "program"; a
    controller's "controller" and "card").
    """
    if given.SerializeToString(deterministic=True) == program.SerializeToString(deterministic=True):
        return None  # the same P4Info (each card of a process is sent the same): nothing to compare
    a, b = p4info_summary(given), p4info_summary(program)
    for kind in a:
        if a[kind] != b[kind]:
            only_given = set(a[kind]) - set(b[kind])
            only_program = set(b[kind]) - set(a[kind])
            return (
                f"P4Info {kind} differ from the {labels[1]}'s: {labels[0]} has {sorted(only_given)[:3]}, "
                f"{labels[1]} has {sorted(only_program)[:3]}"
            )
    return None


def requested_cells(request: Any, indexed: Any) -> range:
    """The cells a counter or register read asks for: its one index (OUT_OF_RANGE if past the
    array's ``size``), or every cell when the request names none."""
    if not request.HasField("index"):
        return range(indexed.size)
    index = request.index.index
    if not 0 <= index < indexed.size:
        message = f"{indexed.name}: index {index} out of 0..{indexed.size - 1}"
        raise P4RuntimeError(code_pb2.OUT_OF_RANGE, message)
    return range(index, index + 1)


def written_cell(kind: int, entry: Any, indexed: Any, what: str) -> int:
    """The cell a register or meter write names: only MODIFY (else INVALID_ARGUMENT), an index
    required (INVALID_ARGUMENT) and below the array's ``size`` (OUT_OF_RANGE)."""
    if kind != p4runtime_pb2.Update.MODIFY:
        raise invalid(f"{what} entries can only be modified")
    if not entry.HasField("index"):
        raise invalid(f"{indexed.name}: writing needs an index")
    index = entry.index.index
    if not 0 <= index < indexed.size:
        raise P4RuntimeError(
            code_pb2.OUT_OF_RANGE, f"{indexed.name}: index {index} out of 0..{indexed.size - 1}"
        )
    return index
