"""A name -> id index of a P4Info: tables, their match fields, actions, their parameters, counters.

The controller addresses everything by the names p4c writes into the P4Info
(``MyIngress.route``, ``hdr.tw.dst_pe``, ``MyIngress.set_route``, ``port``);
ids and bit widths come from the P4Info in use, so the same code drives a card
compiled by p4c (bmv2) or by the embedded target's front end.

>>> from p4.config.v1 import p4info_pb2
>>> info = p4info_pb2.P4Info()
>>> table = info.tables.add(); table.preamble.id = 7; table.preamble.name = "MyIngress.t"
>>> field = table.match_fields.add(); field.id = 1; field.name = "hdr.x"; field.bitwidth = 9
>>> index = P4InfoIndex(info)
>>> index.table_id("MyIngress.t"), index.match_field("MyIngress.t", "hdr.x").bitwidth
(7, 9)
"""

from __future__ import annotations

from dataclasses import dataclass

from p4.config.v1 import p4info_pb2


class P4InfoLookupError(KeyError):
    """A name the P4Info does not have (the program is not the one the controller expects)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown P4Info name"


@dataclass(frozen=True)
class FieldInfo:
    """A match field or action parameter: its id, name and width in bits."""

    id: int
    name: str
    bitwidth: int


@dataclass(frozen=True)
class TableInfo:
    """A table: id, name, match fields in P4Info order, and the ids of its actions."""

    id: int
    name: str
    match_fields: tuple[FieldInfo, ...]
    action_ids: frozenset[int]


@dataclass(frozen=True)
class ActionInfo:
    """An action: id, name and parameters in P4Info order."""

    id: int
    name: str
    params: tuple[FieldInfo, ...]


@dataclass(frozen=True)
class CounterInfo:
    """An indexed counter: id, name and number of cells."""

    id: int
    name: str
    size: int


class P4InfoIndex:
    """Look-ups by name and by id over one P4Info message."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self.tables: dict[str, TableInfo] = {}
        self.actions: dict[str, ActionInfo] = {}
        self.counters: dict[str, CounterInfo] = {}
        for table in p4info.tables:
            fields = tuple(FieldInfo(f.id, f.name, f.bitwidth) for f in table.match_fields)
            refs = frozenset(ref.id for ref in table.action_refs)
            self.tables[table.preamble.name] = TableInfo(table.preamble.id, table.preamble.name, fields, refs)
        for action in p4info.actions:
            params = tuple(FieldInfo(p.id, p.name, p.bitwidth) for p in action.params)
            self.actions[action.preamble.name] = ActionInfo(action.preamble.id, action.preamble.name, params)
        for counter in p4info.counters:
            self.counters[counter.preamble.name] = CounterInfo(
                counter.preamble.id, counter.preamble.name, counter.size
            )
        self.table_by_id = {table.id: table for table in self.tables.values()}
        self.action_by_id = {action.id: action for action in self.actions.values()}
        self.counter_by_id = {counter.id: counter for counter in self.counters.values()}

    # -- by name ------------------------------------------------------------------

    def table(self, name: str) -> TableInfo:
        try:
            return self.tables[name]
        except KeyError:
            raise P4InfoLookupError(f"the P4Info has no table {name!r}") from None

    def table_id(self, name: str) -> int:
        return self.table(name).id

    def match_field(self, table: str, field: str) -> FieldInfo:
        for info in self.table(table).match_fields:
            if info.name == field:
                return info
        raise P4InfoLookupError(f"table {table!r} has no match field {field!r}")

    def action(self, name: str) -> ActionInfo:
        try:
            return self.actions[name]
        except KeyError:
            raise P4InfoLookupError(f"the P4Info has no action {name!r}") from None

    def action_id(self, name: str) -> int:
        return self.action(name).id

    def param(self, action: str, name: str) -> FieldInfo:
        for info in self.action(action).params:
            if info.name == name:
                return info
        raise P4InfoLookupError(f"action {action!r} has no parameter {name!r}")

    def counter(self, name: str) -> CounterInfo:
        try:
            return self.counters[name]
        except KeyError:
            raise P4InfoLookupError(f"the P4Info has no counter {name!r}") from None

    def counter_id(self, name: str) -> int:
        return self.counter(name).id

    # -- checks -------------------------------------------------------------------

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
            table = self.table(name)
            have = tuple(field.name for field in table.match_fields)
            if have != fields:
                raise P4InfoLookupError(f"table {name!r} matches on {list(have)}, expected {list(fields)}")
            for action in table_actions:
                if self.action(action).id not in table.action_ids:
                    raise P4InfoLookupError(f"table {name!r} does not offer action {action!r}")
        for name, params in actions.items():
            have = tuple(param.name for param in self.action(name).params)
            if have != params:
                raise P4InfoLookupError(f"action {name!r} takes {list(have)}, expected {list(params)}")
        for name in counters:
            self.counter(name)


def p4info_difference(ours: p4info_pb2.P4Info, theirs: p4info_pb2.P4Info) -> str | None:
    """The first difference in tables, actions or counters (names, ids, fields, widths); None if none."""
    a, b = P4InfoIndex(ours), P4InfoIndex(theirs)
    for kind, mine, other in (
        ("table", a.tables, b.tables),
        ("action", a.actions, b.actions),
        ("counter", a.counters, b.counters),
    ):
        for name in sorted(set(mine) | set(other)):
            if name not in other:
                return f"the card's program has no {kind} {name}"
            if name not in mine:
                return f"the card's program has a {kind} {name} the controller's P4Info does not know"
            if mine[name] != other[name]:
                return f"{kind} {name} differs: controller {mine[name]}, card {other[name]}"
    return None
