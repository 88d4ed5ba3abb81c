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

from dataclasses import dataclass

from p4.v1 import p4runtime_pb2

from controller.p4info_index import FieldInfo, P4InfoIndex
from p4src import card
from topologies.errors import TwinnetError


class EncodingError(TwinnetError, ValueError):
    """A value that does not fit the field or parameter it is meant for."""


@dataclass(frozen=True, order=True)
class EntrySpec:
    """One table entry: table, exact match values (P4Info order), action and its parameter values."""

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


def canonical_bytes(value: int, bitwidth: int, what: str = "value") -> bytes:
    """P4Runtime's canonical bytestring of `value` for a field of `bitwidth` bits."""
    if value < 0 or value >> bitwidth:
        raise EncodingError(f"{what} = {value} does not fit in {bitwidth} bits")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def decode_bytes(data: bytes) -> int:
    """The integer of a P4Runtime bytestring (canonical or padded)."""
    return int.from_bytes(data, "big")


def _encode(info: FieldInfo, value: int, owner: str) -> bytes:
    return canonical_bytes(value, info.bitwidth, f"{owner} {info.name}")


def route_spec(ingress_port: int, dst_pe: int, routing_class: int, egress_port: int, vc: int) -> EntrySpec:
    """The route-table entry of one routing-table entry (the one-to-one translation)."""
    return EntrySpec(card.ROUTE, (ingress_port, dst_pe, routing_class), card.SET_ROUTE, (egress_port, vc))


def table_entry(
    index: P4InfoIndex, spec: EntrySpec, into: p4runtime_pb2.TableEntry | None = None
) -> p4runtime_pb2.TableEntry:
    """The P4Runtime TableEntry of `spec` (exact matches, a direct action), filled into `into` if given."""
    table = index.table(spec.table)
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
    info = index.action(action)
    if len(params) != len(info.params):
        raise EncodingError(f"action {action} takes {len(info.params)} parameters, got {len(params)}")
    message.action_id = info.id
    for param, value in zip(info.params, params, strict=True):
        message.params.add(param_id=param.id, value=_encode(param, value, action))


def spec_of(index: P4InfoIndex, entry: p4runtime_pb2.TableEntry) -> EntrySpec:
    """The EntrySpec of a TableEntry read from a card (match fields in P4Info order, by id)."""
    table = index.table_by_id[entry.table_id]
    given = {field.field_id: decode_bytes(field.exact.value) for field in entry.match}
    match = tuple(given.get(info.id, 0) for info in table.match_fields)
    action = index.action_by_id.get(entry.action.action.action_id)
    if action is None:
        return EntrySpec(table.name, match, f"<action id {entry.action.action.action_id}>", ())
    values = {param.param_id: decode_bytes(param.value) for param in entry.action.action.params}
    return EntrySpec(table.name, match, action.name, tuple(values.get(p.id, 0) for p in action.params))


def update(kind: int, entry: p4runtime_pb2.TableEntry) -> p4runtime_pb2.Update:
    """An Update (INSERT, MODIFY or DELETE) of one table entry."""
    message = p4runtime_pb2.Update(type=kind)
    message.entity.table_entry.CopyFrom(entry)
    return message


def spec_update(index: P4InfoIndex, kind: int, spec: EntrySpec) -> p4runtime_pb2.Update:
    """The Update of `spec` built in place (a DELETE carries the match only)."""
    message = p4runtime_pb2.Update(type=kind)
    entry = table_entry(index, spec, into=message.entity.table_entry)
    if kind == DELETE:
        entry.ClearField("action")
    return message


INSERT = p4runtime_pb2.Update.INSERT
MODIFY = p4runtime_pb2.Update.MODIFY
DELETE = p4runtime_pb2.Update.DELETE
UPDATE_NAMES = {INSERT: "insert", MODIFY: "modify", DELETE: "delete"}
