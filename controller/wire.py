"""Table-entry Updates and WriteRequests encoded straight into protobuf wire bytes, for installs at scale.

The protobuf runtime here is the pure-Python one; building and serialising one
message object per entry costs the controller most of an install's time (a
3DT 4x4x4 has 33 000 entries). The messages a route install sends are simple
(``Update{type, entity{table_entry{table_id, match{field_id, exact{value}}...,
action{action{action_id, params{param_id, value}...}}}}}``), so this module
writes their bytes directly: field numbers from the p4runtime descriptors, ids
and widths from the P4Info, values as canonical bytestrings, fields in number
order. The result is byte for byte what ``SerializeToString(deterministic=True)``
gives for the same message built with :func:`controller.translate.table_entry`
(tests/unit/test_controller_wire.py checks it), so the card sees the same request.
"""

from __future__ import annotations

from collections.abc import Sequence

from p4.v1 import p4runtime_pb2

from controller.p4info_index import P4InfoIndex
from controller.translate import DELETE, EncodingError, EntrySpec, canonical_bytes

_LEN, _VARINT = 2, 0


def _number(message, field: str) -> int:
    return message.DESCRIPTOR.fields_by_name[field].number


def varint(value: int) -> bytes:
    """Protobuf base-128 varint of a non-negative integer."""
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _key(number: int, wire_type: int) -> bytes:
    return varint((number << 3) | wire_type)


def _length_delimited(number: int, payload: bytes) -> bytes:
    return _key(number, _LEN) + varint(len(payload)) + payload


def _varint_field(number: int, value: int) -> bytes:
    return _key(number, _VARINT) + varint(value) if value else b""  # proto3 leaves zero out


P = p4runtime_pb2
_UPDATE_TYPE, _UPDATE_ENTITY = _number(P.Update, "type"), _number(P.Update, "entity")
_ENTITY_TABLE_ENTRY = _number(P.Entity, "table_entry")
_TE_TABLE_ID, _TE_MATCH, _TE_ACTION = (
    _number(P.TableEntry, name) for name in ("table_id", "match", "action")
)
_FM_FIELD_ID, _FM_EXACT = _number(P.FieldMatch, "field_id"), _number(P.FieldMatch, "exact")
_EXACT_VALUE = _number(P.FieldMatch.Exact, "value")
_TA_ACTION = _number(P.TableAction, "action")
_ACTION_ID, _ACTION_PARAMS = _number(P.Action, "action_id"), _number(P.Action, "params")
_PARAM_ID, _PARAM_VALUE = _number(P.Action.Param, "param_id"), _number(P.Action.Param, "value")
_WR_DEVICE_ID, _WR_ELECTION_ID = _number(P.WriteRequest, "device_id"), _number(P.WriteRequest, "election_id")
_WR_UPDATES, _WR_ATOMICITY = _number(P.WriteRequest, "updates"), _number(P.WriteRequest, "atomicity")
_U128_HIGH, _U128_LOW = _number(P.Uint128, "high"), _number(P.Uint128, "low")


class WireEncoder:
    """Encodes EntrySpecs of one P4Info as serialized Update messages (ids and widths looked up once)."""

    def __init__(self, index: P4InfoIndex) -> None:
        self.index = index
        self._tables: dict[str, tuple[bytes, tuple[tuple[bytes, int, str], ...]]] = {}
        self._actions: dict[str, tuple[bytes, tuple[tuple[bytes, int, str], ...]]] = {}

    def _table(self, name: str) -> tuple[bytes, tuple[tuple[bytes, int, str], ...]]:
        if name not in self._tables:
            table = self.index.table(name)
            fields = tuple(
                (_varint_field(_FM_FIELD_ID, f.id), f.bitwidth, f"{name} {f.name}")
                for f in table.match_fields
            )
            self._tables[name] = (_varint_field(_TE_TABLE_ID, table.id), fields)
        return self._tables[name]

    def _action(self, name: str) -> tuple[bytes, tuple[tuple[bytes, int, str], ...]]:
        if name not in self._actions:
            action = self.index.action(name)
            params = tuple(
                (_varint_field(_PARAM_ID, p.id), p.bitwidth, f"{name} {p.name}") for p in action.params
            )
            self._actions[name] = (_varint_field(_ACTION_ID, action.id), params)
        return self._actions[name]

    def table_entry(self, spec: EntrySpec, with_action: bool = True) -> bytes:
        """The serialized TableEntry of `spec` (without its action for a DELETE)."""
        table_id, fields = self._table(spec.table)
        if len(fields) != len(spec.match):
            raise EncodingError(
                f"{spec.table} matches on {len(fields)} fields, the entry gives {len(spec.match)}"
            )
        parts = [table_id]
        for (field_id, width, what), value in zip(fields, spec.match, strict=True):
            exact = _length_delimited(_EXACT_VALUE, canonical_bytes(value, width, what))
            parts.append(_length_delimited(_TE_MATCH, field_id + _length_delimited(_FM_EXACT, exact)))
        if with_action:
            action_id, params = self._action(spec.action)
            if len(params) != len(spec.params):
                raise EncodingError(
                    f"action {spec.action} takes {len(params)} parameters, got {len(spec.params)}"
                )
            action = [action_id]
            for (param_id, width, what), value in zip(params, spec.params, strict=True):
                param = param_id + _length_delimited(_PARAM_VALUE, canonical_bytes(value, width, what))
                action.append(_length_delimited(_ACTION_PARAMS, param))
            parts.append(_length_delimited(_TE_ACTION, _length_delimited(_TA_ACTION, b"".join(action))))
        return b"".join(parts)

    def update(self, kind: int, spec: EntrySpec) -> bytes:
        """The serialized Update (INSERT, MODIFY or DELETE) of `spec`."""
        entry = self.table_entry(spec, with_action=kind != DELETE)
        entity = _length_delimited(_ENTITY_TABLE_ENTRY, entry)
        return _varint_field(_UPDATE_TYPE, kind) + _length_delimited(_UPDATE_ENTITY, entity)


def write_request(
    device_id: int, election_id: tuple[int, int], updates: Sequence[bytes], atomicity: int = 0
) -> bytes:
    """A serialized WriteRequest holding the serialized `updates`."""
    election = _varint_field(_U128_HIGH, election_id[0]) + _varint_field(_U128_LOW, election_id[1])
    parts = [_varint_field(_WR_DEVICE_ID, device_id), _length_delimited(_WR_ELECTION_ID, election)]
    parts += [_length_delimited(_WR_UPDATES, update) for update in updates]
    parts.append(_varint_field(_WR_ATOMICITY, atomicity))
    return b"".join(parts)


def update_type(update: bytes) -> int:
    """The type (INSERT, MODIFY, DELETE) of a serialized Update made by WireEncoder.update."""
    return update[1] if update[:1] == _key(_UPDATE_TYPE, _VARINT) else 0


# -- the way back: table entries out of serialized ReadResponses ------------------------------


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """The (field number, value) pairs of a serialized message: ints for varints, bytes for the rest."""
    found: list[tuple[int, int | bytes]] = []
    position, end = 0, len(data)
    while position < end:
        key, position = _read_varint(data, position)
        number, wire_type = key >> 3, key & 7
        if wire_type == _VARINT:
            value, position = _read_varint(data, position)
            found.append((number, value))
        elif wire_type == _LEN:
            length, position = _read_varint(data, position)
            found.append((number, data[position : position + length]))
            position += length
        elif wire_type in (1, 5):  # fixed64, fixed32
            size = 8 if wire_type == 1 else 4
            found.append((number, data[position : position + size]))
            position += size
        else:
            raise ValueError(f"unsupported protobuf wire type {wire_type}")
    return found


def _read_varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7


_RR_ENTITIES = _number(P.ReadResponse, "entities")
_TE_DEFAULT = _number(P.TableEntry, "is_default_action")


def table_entries(response: bytes, index: P4InfoIndex) -> list[tuple[bool, EntrySpec]]:
    """(is default entry, EntrySpec) of each table entry of a serialized ReadResponse (cf. spec_of)."""
    result = []
    for number, entity in fields(response):
        if number != _RR_ENTITIES:
            continue
        for kind, entry in fields(entity):
            if kind == _ENTITY_TABLE_ENTRY:
                decoded = _table_entry(entry, index)
                if decoded is not None:
                    result.append(decoded)
    return result


def _table_entry(data: bytes, index: P4InfoIndex) -> tuple[bool, EntrySpec] | None:
    table_id, default, match, action_id, params = 0, False, {}, 0, {}
    for number, value in fields(data):
        if number == _TE_TABLE_ID:
            table_id = value
        elif number == _TE_DEFAULT:
            default = bool(value)
        elif number == _TE_MATCH:
            field_id, exact = 0, b""
            for inner, inner_value in fields(value):
                if inner == _FM_FIELD_ID:
                    field_id = inner_value
                elif inner == _FM_EXACT:
                    exact = dict(fields(inner_value)).get(_EXACT_VALUE, b"")
            match[field_id] = int.from_bytes(exact, "big")
        elif number == _TE_ACTION:
            for inner, action in fields(value):
                if inner != _TA_ACTION:
                    continue
                for field, field_value in fields(action):
                    if field == _ACTION_ID:
                        action_id = field_value
                    elif field == _ACTION_PARAMS:
                        param = dict(fields(field_value))
                        params[param.get(_PARAM_ID, 0)] = int.from_bytes(param.get(_PARAM_VALUE, b""), "big")
    table = index.table_by_id.get(table_id)
    if table is None:  # a table the controller does not know: not its business
        return None
    values = tuple(match.get(info.id, 0) for info in table.match_fields) if not default else ()
    action = index.action_by_id.get(action_id)
    if action is None:
        return default, EntrySpec(table.name, values, f"<action id {action_id}>", ())
    return default, EntrySpec(
        table.name, values, action.name, tuple(params.get(p.id, 0) for p in action.params)
    )
