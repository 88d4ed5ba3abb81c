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

from p4src import card
from p4switch.p4runtime.info import (
    EncodingError,
    MatchFieldInfo,
    P4InfoIndex,
    ParamInfo,
    decode_bytestring,
    encode_bytestring,
)


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
