"""Table entries as plain values and as P4Runtime protos, both ways.

An :class:`EntrySpec` is one table entry by P4Info names and integer values:
``EntrySpec("MyIngress.route", (3, 37, 1), "MyIngress.set_route", (5, 1))``.
The controller's model of a card is a set of them (controller.twins), the
translation to P4Runtime is :func:`table_entry` and the way back (to compare what a
card holds with the model) is :func:`spec_of`. Values become P4Runtime's canonical
bytestrings (the shortest big-endian string, ``b"\\x00"`` for zero); a value that
does not fit its field's bit width is refused here, before it reaches a card.

A route entry of the routing tables (controller.routing.table.RouteEntry) maps
one to one: match (ingress port, destination PE, routing class), action
``set_route(egress port, VC)`` (:func:`route_spec`).
"""

from __future__ import annotations

from typing import NamedTuple

from p4.v1 import p4runtime_pb2

from p4src import card
from p4switch.p4runtime.info import (
    EncodingError,
    MatchFieldInfo,
    P4InfoIndex,
    ParamInfo,
    decode_bytestring,
    encode_bytestring,
)


class EntrySpec(NamedTuple):
    """One table entry: table, exact match values (P4Info order), action and its parameter values.

    A named tuple: immutable, hashable and ordered field by field; a 3DT 8x8x8 plan holds 2.1M of
    them, which a tuple makes in under half the time of a frozen dataclass.
    """

    table: str
    match: tuple[int, ...]
    action: str
    params: tuple[int, ...]

    @property
    def key(self) -> tuple[str, tuple[int, ...]]:
        """What identifies the entry in its table (table and match)."""
        return self.table, self.match

    def describe(self) -> str:
        """Human-readable form, e.g. ``MyIngress.route(3, 37, 1) -> MyIngress.set_route(5, 1)``."""
        match = ", ".join(str(value) for value in self.match)
        params = ", ".join(str(value) for value in self.params)
        return f"{self.table}({match}) -> {self.action}({params})"


def _encode(info: MatchFieldInfo | ParamInfo, value: int, owner: str) -> bytes:
    try:
        return encode_bytestring(value, info.bitwidth)
    except EncodingError:  # named only when it fails: most values fit
        raise EncodingError(f"{owner} {info.name} = {value} does not fit in {info.bitwidth} bits") from None


def route_spec(ingress_port: int, dst_pe: int, routing_class: int, egress_port: int, vc: int) -> EntrySpec:
    """The route-table entry of one routing-table entry (the one-to-one translation)."""
    return EntrySpec(card.ROUTE, (ingress_port, dst_pe, routing_class), card.SET_ROUTE, (egress_port, vc))


def table_entry(
    index: P4InfoIndex,
    spec: EntrySpec,
    into: p4runtime_pb2.TableEntry | None = None,
    with_action: bool = True,
) -> p4runtime_pb2.TableEntry:
    """The P4Runtime TableEntry of `spec` (exact matches, a direct action), filled into `into` if given.

    Without its action (`with_action` false) it is the entry's key, as a DELETE carries it.
    """
    table = index.table_named(spec.table)
    if len(spec.match) != len(table.match_fields):
        raise EncodingError(
            f"{spec.table} matches on {len(table.match_fields)} fields, "
            f"the entry gives {len(spec.match)}: {spec.describe()}"
        )
    entry = p4runtime_pb2.TableEntry() if into is None else into
    entry.table_id = table.id
    for info, value in zip(table.match_fields, spec.match, strict=True):
        field = entry.match.add(field_id=info.id)
        field.exact.value = _encode(info, value, spec.table)
    if with_action:
        _fill_action(index, entry.action.action, spec.action, spec.params)
    return entry


def default_entry(
    index: P4InfoIndex, table: str, action: str, params: tuple[int, ...]
) -> p4runtime_pb2.TableEntry:
    """The TableEntry that sets `table`'s default action (write it with MODIFY)."""
    entry = p4runtime_pb2.TableEntry(table_id=index.table_id(table), is_default_action=True)
    _fill_action(index, entry.action.action, action, params)
    return entry


def _fill_action(
    index: P4InfoIndex, message: p4runtime_pb2.Action, action: str, params: tuple[int, ...]
) -> None:
    info = index.action_named(action)
    if len(params) != len(info.params):
        raise EncodingError(f"action {action} takes {len(info.params)} parameters, got {len(params)}")
    message.action_id = info.id
    for param, value in zip(info.params, params, strict=True):
        message.params.add(param_id=param.id, value=_encode(param, value, action))


def spec_of(index: P4InfoIndex, entry: p4runtime_pb2.TableEntry) -> EntrySpec:
    """The EntrySpec of a TableEntry read from a card (match values in P4Info order; none for a default)."""
    table = index.table(entry.table_id)
    fields = table.fields_by_id
    given = {
        field.field_id: decode_bytestring(field.exact.value, fields[field.field_id].bitwidth, table.name)
        for field in entry.match
        if field.field_id in fields
    }
    match = () if entry.is_default_action else tuple(given.get(info.id, 0) for info in table.match_fields)
    action = index.actions.get(entry.action.action.action_id)
    if action is None:
        return EntrySpec(table.name, match, f"<action id {entry.action.action.action_id}>", ())
    params = action.params_by_id
    values = {
        param.param_id: decode_bytestring(param.value, params[param.param_id].bitwidth, action.name)
        for param in entry.action.action.params
        if param.param_id in params
    }
    return EntrySpec(table.name, match, action.name, tuple(values.get(p.id, 0) for p in action.params))


def update(kind: int, entry: p4runtime_pb2.TableEntry) -> p4runtime_pb2.Update:
    """An Update (INSERT, MODIFY or DELETE) of one table entry."""
    message = p4runtime_pb2.Update(type=kind)
    message.entity.table_entry.CopyFrom(entry)
    return message


def spec_update(index: P4InfoIndex, kind: int, spec: EntrySpec) -> p4runtime_pb2.Update:
    """The Update of `spec` built in place (a DELETE carries the match only)."""
    message = p4runtime_pb2.Update(type=kind)
    table_entry(index, spec, into=message.entity.table_entry, with_action=kind != DELETE)
    return message


INSERT = p4runtime_pb2.Update.INSERT
MODIFY = p4runtime_pb2.Update.MODIFY
DELETE = p4runtime_pb2.Update.DELETE
UPDATE_NAMES = {INSERT: "insert", MODIFY: "modify", DELETE: "delete"}


def varint(value: int) -> bytes:
    """The protobuf base-128 varint of a non-negative integer."""
    if value < 0x80:
        return _SMALL_VARINTS[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL_VARINTS = [bytes([n]) for n in range(0x80)]


def _field(tag: int, payload: bytes) -> bytes:
    """A length-delimited field: its tag byte, the payload's length, the payload."""
    return bytes([tag]) + varint(len(payload)) + payload


def _uint_field(tag: int, value: int) -> bytes:
    """A varint field (left out when zero, as proto3 writes it)."""
    return bytes([tag]) + varint(value) if value else b""


# Tag bytes (field number << 3 | wire type; 0 varint, 2 length-delimited) of the messages an Update of
# a table entry nests: Update{type 1, entity 2}, Entity{table_entry 2}, TableEntry{table_id 1, match 2,
# action 3}, FieldMatch{field_id 1, exact 2}, FieldMatch.Exact{value 1}, TableAction{action 1},
# Action{action_id 1, params 4}, Action.Param{param_id 2, value 3}, WriteRequest{updates 4}.
_TYPE, _ENTITY, _TABLE_ENTRY = 0x08, 0x12, 0x12
_TABLE_ID, _MATCH, _ACTION = 0x08, 0x12, 0x1A
_FIELD_ID, _EXACT, _EXACT_VALUE = 0x08, 0x12, 0x0A
_TABLE_ACTION, _ACTION_ID, _PARAMS, _PARAM_ID, _PARAM_VALUE = 0x0A, 0x08, 0x22, 0x10, 0x1A
WRITE_REQUEST_UPDATE_TAG = b"\x22"


class _TableTemplate:
    """One table's fixed bytes and its fields' encoded matches, kept by value as they are first met."""

    def __init__(self, index: P4InfoIndex, name: str) -> None:
        self.info = index.table_named(name)
        self.prefix = _uint_field(_TABLE_ID, self.info.id)
        self.fields: list[dict[int, bytes]] = [{} for _ in self.info.match_fields]

    def field(self, position: int, value: int) -> bytes:
        """The TableEntry.match field of `value` for the field at `position` (EncodingError if too wide)."""
        info = self.info.match_fields[position]
        exact = _field(_EXACT_VALUE, _encode(info, value, self.info.name))
        chunk = _field(_MATCH, _uint_field(_FIELD_ID, info.id) + _field(_EXACT, exact))
        cache = self.fields[position]
        if len(cache) < UpdateEncoder.VALUES_KEPT:
            cache[value] = chunk
        return chunk


class UpdateEncoder:
    """Serialised P4Runtime Updates of EntrySpecs, built from bytes kept per table, field value and action.

    ``encode(kind, spec)`` is byte for byte ``spec_update(index, kind, spec).SerializeToString()``
    (the same fields in the same order, so any P4Runtime server parses it as that Update) at a
    fraction of the cost: a route entry's match values and its action repeat across thousands of
    entries, so each is encoded once. Errors are those of :func:`spec_update`, in the same order.
    """

    #: encoded values kept per match field, and encoded actions kept in all
    VALUES_KEPT = 1 << 16

    def __init__(self, index: P4InfoIndex) -> None:
        self.index = index
        self._tables: dict[str, _TableTemplate] = {}
        self._actions: dict[tuple[str, tuple[int, ...]], bytes] = {}
        self._kinds = {kind: _uint_field(_TYPE, kind) for kind in UPDATE_NAMES}

    def encode(self, kind: int, spec: EntrySpec) -> bytes:
        """The serialised Update (INSERT, MODIFY or DELETE; a DELETE carries the match only) of `spec`."""
        template = self._tables.get(spec.table)
        if template is None:
            template = self._tables[spec.table] = _TableTemplate(self.index, spec.table)
        fields = template.fields
        if len(spec.match) != len(fields):
            raise EncodingError(
                f"{spec.table} matches on {len(fields)} fields, "
                f"the entry gives {len(spec.match)}: {spec.describe()}"
            )
        parts = [template.prefix]
        for position, value in enumerate(spec.match):
            chunk = fields[position].get(value)
            parts.append(chunk if chunk is not None else template.field(position, value))
        if kind != DELETE:
            action = self._actions.get((spec.action, spec.params))
            parts.append(action if action is not None else self._action(spec.action, spec.params))
        entry = b"".join(parts)
        entity = _field(_TABLE_ENTRY, entry)
        prefix = self._kinds.get(kind)
        if prefix is None:
            prefix = _uint_field(_TYPE, kind)
        return prefix + _field(_ENTITY, entity)

    def _action(self, action: str, params: tuple[int, ...]) -> bytes:
        """The TableEntry.action field of `action(params)` (checked as _fill_action checks it)."""
        info = self.index.action_named(action)
        if len(params) != len(info.params):
            raise EncodingError(f"action {action} takes {len(info.params)} parameters, got {len(params)}")
        body = _uint_field(_ACTION_ID, info.id)
        for param, value in zip(info.params, params, strict=True):
            body += _field(
                _PARAMS,
                _uint_field(_PARAM_ID, param.id) + _field(_PARAM_VALUE, _encode(param, value, action)),
            )
        chunk = _field(_ACTION, _field(_TABLE_ACTION, body))
        if len(self._actions) < self.VALUES_KEPT:
            self._actions[action, params] = chunk
        return chunk
