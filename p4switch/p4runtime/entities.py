"""Translate P4Runtime entities to the language core's named calls, and back.

``PipelineEntities`` wraps one pipeline of the language core with the P4Info index
of its program. Writes are validated against the P4Info before the core sees them
(ids, match kinds, widths, priorities, action scopes and parameters), duplicates and
missing entries are found in a key index kept beside the core (so ALREADY_EXISTS and
NOT_FOUND are exact), and every applied update returns the step that undoes it (used
by ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC batches).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4switch.p4runtime.digests import DigestEntities, Send
from p4switch.p4runtime.info import (
    DEFAULT_ONLY,
    EXACT,
    LPM,
    OPTIONAL,
    RANGE,
    TABLE_ONLY,
    TERNARY,
    P4InfoIndex,
    P4RuntimeError,
    TableInfo,
    decode_bytestring,
    encode_bytestring,
    invalid,
    requested_cells,
    written_cell,
)
from p4switch.p4runtime.meters import MeterEntities, config_of, configure, set_config
from p4switch.p4runtime.replication import ReplicationEntities
from p4switch.p4runtime.wire import CanonicalUpdate, TableShapes, exact_update
from p4switch.runtime.meters import check_config
from p4switch.runtime.tables import Table

Undo = Callable[[], None]
MatchKey = tuple
#: decoded actions an exact table's fast path keeps, by their serialised TableAction
ACTIONS_KEPT = 4096
INSERT = p4runtime_pb2.Update.INSERT
MODIFY = p4runtime_pb2.Update.MODIFY


@dataclass
class ExactTable:
    """What the fast path of an all-exact table's writes needs (see ``PipelineEntities.write_canonical``)."""

    info: TableInfo
    core: Table
    field_ids: tuple[int, ...]
    widths: tuple[int, ...]
    #: serialised TableAction -> (action name, parameter values), decoded and checked for this table
    actions: dict[bytes, tuple[str, tuple[int, ...]]] = field(default_factory=dict)


def exact_table(pipeline: Any, table: TableInfo) -> ExactTable | None:
    """The fast path's view of `table`: only for a mutable table whose fields are all exact, without a
    direct meter, held by the language core's own Table with the same fields in the same order."""
    core = getattr(pipeline, "tables", {}).get(table.name)
    if (
        not isinstance(core, Table)
        or not table.match_fields
        or table.is_const
        or core.is_const
        or table.direct_meter is not None
        or not core.all_exact
        or core.key_names != tuple(info.name for info in table.match_fields)
        or any(info.match_type != EXACT for info in table.match_fields)
    ):
        return None
    ids = tuple(info.id for info in table.match_fields)
    return ExactTable(table, core, ids, tuple(info.bitwidth for info in table.match_fields))


def core_error(error: Exception) -> P4RuntimeError:
    """A language-core exception as a P4Runtime error (its ``code`` if it names one)."""
    code = getattr(error, "code", None)
    if isinstance(code, int) and 0 < code <= 16:
        return P4RuntimeError(code, str(error))
    if type(error).__name__ == "EntryError":
        return invalid(str(error))
    return P4RuntimeError(code_pb2.INTERNAL, f"{type(error).__name__}: {error}")


class PipelineEntities:
    """P4Runtime Write and Read of table entries, counters and registers on one pipeline."""

    def __init__(self, pipeline: Any, index: P4InfoIndex, send: Send | None = None) -> None:
        self.pipeline = pipeline
        self.index = index
        #: DigestEntry, and the lists sent with ``send`` (the primary's StreamChannel)
        self.digests = (
            DigestEntities(pipeline, index.p4info, send or (lambda message: False))
            if hasattr(pipeline, "digests")
            else None
        )
        pre = getattr(pipeline, "pre", None)  # the language core's replication engine
        self.replication = ReplicationEntities(pre) if pre is not None else None
        self.meters = MeterEntities(pipeline, index)
        # table id -> match key -> (action, params) of the installed entry: MODIFY and DELETE find the
        # entry (and what undoes them) in O(1), without scanning the core's table
        self.keys: dict[int, dict[MatchKey, tuple[str, tuple]]] = {}
        for table_id, table in index.tables.items():  # entries the program itself declares count too
            self.keys[table_id] = {
                self._core_key(table, entry): (entry.action, tuple(entry.params))
                for entry in pipeline.table_entries(table.name)
            }
        #: table id -> the fast path of its writes (all-exact tables; see write_canonical)
        self.exact: dict[int, ExactTable] = {}
        for table_id, table in index.tables.items():
            fast = exact_table(pipeline, table)
            if fast is not None:
                self.exact[table_id] = fast

    def exact_shapes(self) -> TableShapes:
        """The tables with a fast path: table id -> (field ids, widths), as wire.exact_updates takes them."""
        return {table_id: (fast.field_ids, fast.widths) for table_id, fast in self.exact.items()}

    # ----- write -----------------------------------------------------------------------------
    def write(self, update: p4runtime_pb2.Update) -> Undo:
        """Apply one update; return how to undo it. Raises P4RuntimeError, leaving state unchanged."""
        entity = update.entity
        which = entity.WhichOneof("entity")
        if which == "table_entry":
            entry = entity.table_entry
            if entry.table_id in self.exact and not entry.is_default_action:
                # an all-exact table's entry: its fast path, if the update is in canonical form
                canonical = exact_update(update.SerializeToString(), self.exact_shapes())
                undo = None if canonical is None else self.write_canonical(canonical)
                if undo is not None:
                    return undo
            return self._write_table_entry(update.type, entry)
        if which == "register_entry":
            return self._write_register_entry(update.type, update.entity.register_entry)
        if which == "packet_replication_engine_entry" and self.replication is not None:
            return self.replication.write(update.type, update.entity.packet_replication_engine_entry)
        if which == "meter_entry":
            return self.meters.write(update.type, update.entity.meter_entry)
        if which == "direct_meter_entry":
            return self._write_direct_meter(update.type, update.entity.direct_meter_entry)
        if which == "digest_entry" and self.digests is not None:
            return self.digests.write(update.type, update.entity.digest_entry)
        if which is None:
            raise invalid("update carries no entity")
        raise P4RuntimeError(code_pb2.UNIMPLEMENTED, f"writing {which} is not supported by this target")

    def _write_table_entry(self, kind: int, entry: p4runtime_pb2.TableEntry) -> Undo:
        """The generic path: any table, any entry, every error named."""
        table = self.index.table(entry.table_id)
        if kind == p4runtime_pb2.Update.UNSPECIFIED:
            raise invalid("update type UNSPECIFIED")
        if entry.is_default_action:
            return self._write_default(kind, table, entry)
        if not table.match_fields:
            raise invalid(f"{table.name} has no match fields: only its default entry can be modified")
        if table.is_const:
            raise P4RuntimeError(code_pb2.PERMISSION_DENIED, f"table {table.name} is const")
        match, key = self._decode_match(table, entry)
        pipeline = self.pipeline
        keys = self.keys[table.id]
        priority = entry.priority
        if kind == p4runtime_pb2.Update.INSERT:
            if key in keys:
                raise P4RuntimeError(code_pb2.ALREADY_EXISTS, f"{table.name}: entry already exists")
            action, params = self._decode_action(table, entry, for_default=False)
            if table.size and len(keys) >= table.size:
                raise P4RuntimeError(
                    code_pb2.RESOURCE_EXHAUSTED, f"{table.name} is full ({table.size} entries)"
                )
            meter = self._entry_meter_config(table, entry)
            self._call(pipeline.table_insert, table.name, match, action, params, priority)
            keys[key] = (action, params)
            if table.direct_meter is not None:
                pipeline.direct_meter_set(table.name, match, meter, priority)

            def undo_insert() -> None:
                pipeline.table_delete(table.name, match, priority)
                keys.pop(key, None)

            return undo_insert
        old = keys.get(key)
        if old is None:
            raise P4RuntimeError(code_pb2.NOT_FOUND, f"{table.name}: no such entry")
        if kind == p4runtime_pb2.Update.MODIFY:
            action, params = self._decode_action(table, entry, for_default=False)
            meter = self._entry_meter_config(table, entry)
            old_meter = None
            if table.direct_meter is not None:
                old_meter = pipeline.direct_meter_config(table.name, match, priority)
            self._call(pipeline.table_modify, table.name, match, action, params, priority)
            keys[key] = (action, params)
            if table.direct_meter is not None:  # an unset meter_config restores the default
                pipeline.direct_meter_set(table.name, match, meter, priority)

            def undo_modify() -> None:
                pipeline.table_modify(table.name, match, old[0], old[1], priority)
                keys[key] = old
                if table.direct_meter is not None:
                    pipeline.direct_meter_set(table.name, match, old_meter, priority)

            return undo_modify
        if kind == p4runtime_pb2.Update.DELETE:
            self._call(pipeline.table_delete, table.name, match, priority)
            del keys[key]

            def undo_delete() -> None:
                pipeline.table_insert(table.name, match, old[0], old[1], priority)
                keys[key] = old

            return undo_delete
        raise invalid(f"unknown update type {kind}")

    def write_canonical(self, update: CanonicalUpdate) -> Undo | None:
        """The fast path of all-exact tables' writes: one update in canonical form, read from its bytes
        (``wire.exact_updates``: every field once, in P4Info order, exact and fitting its width, no
        priority, meter config or other field). None, with nothing changed, when its table has no fast
        path (then ``write`` decides). The checks made here (duplicate, missing entry, action, table
        size) raise what the generic path raises, in the same order."""
        kind, table_id, values, blob = update  # blob: the entry's serialised TableAction
        fast = self.exact.get(table_id)
        if fast is None:
            return None
        key = (*values, 0)
        table, core = fast.info, fast.core
        keys = self.keys[table.id]
        if kind == INSERT:
            if key in keys:
                raise P4RuntimeError(code_pb2.ALREADY_EXISTS, f"{table.name}: entry already exists")
            action, params = self._exact_action(fast, blob)
            if table.size and len(keys) >= table.size:
                raise P4RuntimeError(
                    code_pb2.RESOURCE_EXHAUSTED, f"{table.name} is full ({table.size} entries)"
                )
            try:
                core.insert_exact(values, action, params)
            except Exception as error:  # as _call reports it (the checks above leave nothing to fail)
                raise core_error(error) from error
            keys[key] = (action, params)

            def undo_insert() -> None:
                core.delete_exact(values)
                keys.pop(key, None)

            return undo_insert
        old = keys.get(key)
        if old is None:
            raise P4RuntimeError(code_pb2.NOT_FOUND, f"{table.name}: no such entry")
        if kind == MODIFY:
            action, params = self._exact_action(fast, blob)
            self._call(core.modify_exact, values, action, params)
            keys[key] = (action, params)

            def undo_modify() -> None:
                core.modify_exact(values, old[0], old[1])
                keys[key] = old

            return undo_modify
        self._call(core.delete_exact, values)
        del keys[key]

        def undo_delete() -> None:
            core.insert_exact(values, old[0], old[1])
            keys[key] = old

        return undo_delete

    def _exact_action(self, fast: ExactTable, blob: bytes) -> tuple[str, tuple[int, ...]]:
        """The action and parameters of the serialised TableAction `blob`, decoded once per distinct
        blob (as _decode_action)."""
        found = fast.actions.get(blob)
        if found is None:
            entry = p4runtime_pb2.TableEntry(action=p4runtime_pb2.TableAction.FromString(blob))
            found = self._decode_action(fast.info, entry, for_default=False)
            if len(fast.actions) < ACTIONS_KEPT:
                fast.actions[blob] = found
        return found

    def _write_default(self, kind: int, table: TableInfo, entry: p4runtime_pb2.TableEntry) -> Undo:
        if kind != p4runtime_pb2.Update.MODIFY:
            raise invalid(f"{table.name}: the default entry can only be modified, not inserted or deleted")
        if entry.match or entry.priority:
            raise invalid(f"{table.name}: a default entry has no match and no priority")
        if table.const_default_action_id:
            raise P4RuntimeError(code_pb2.PERMISSION_DENIED, f"{table.name}: the default action is const")
        pipeline = self.pipeline
        old_action, old_params = pipeline.table_default(table.name)
        if entry.HasField("action"):
            action, params = self._decode_action(table, entry, for_default=True)
            self._call(pipeline.table_set_default, table.name, action, params)
        else:
            self._call(pipeline.table_reset_default, table.name)

        def undo_default() -> None:
            pipeline.table_set_default(table.name, old_action, old_params)

        return undo_default

    def _entry_meter_config(self, table: TableInfo, entry: p4runtime_pb2.TableEntry) -> Any:
        """The checked ``meter_config`` of a table entry write (None when unset: every packet GREEN)."""
        if table.direct_meter is None:
            if entry.HasField("meter_config"):
                raise invalid(f"{table.name} has no direct meter: meter_config must be unset")
            return None
        config = (
            config_of(p4runtime_pb2.DirectMeterEntry(config=entry.meter_config))
            if entry.HasField("meter_config")
            else None
        )
        configure(check_config, config)
        return config

    def _write_direct_meter(self, kind: int, message: p4runtime_pb2.DirectMeterEntry) -> Undo:
        if kind != p4runtime_pb2.Update.MODIFY:
            raise invalid("direct meter entries can only be modified")
        entry = message.table_entry
        table = self.index.table(entry.table_id)
        if table.direct_meter is None:
            raise invalid(f"{table.name} has no direct meter")
        match, key = self._decode_match(table, entry)
        if key not in self.keys[table.id]:
            raise P4RuntimeError(code_pb2.NOT_FOUND, f"{table.name}: no such entry")
        pipeline = self.pipeline
        old = pipeline.direct_meter_config(table.name, match, entry.priority)
        configure(
            lambda config: pipeline.direct_meter_set(table.name, match, config, entry.priority),
            config_of(message),
        )
        return lambda: pipeline.direct_meter_set(table.name, match, old, entry.priority)

    def _write_register_entry(self, kind: int, entry: p4runtime_pb2.RegisterEntry) -> Undo:
        register = self.index.register(entry.register_id)
        index = written_cell(kind, entry, register, "register")
        if entry.data.WhichOneof("data") != "bitstring":
            raise invalid(f"{register.name}: data must be a bitstring")
        value = decode_bytestring(entry.data.bitstring, register.bitwidth, f"{register.name}[{index}]")
        pipeline = self.pipeline
        old = pipeline.register_read(register.name, index)
        self._call(pipeline.register_write, register.name, index, value)
        return lambda: pipeline.register_write(register.name, index, old)

    @staticmethod
    def _call(function: Callable, *args: Any) -> None:
        try:
            function(*args)
        except P4RuntimeError:
            raise
        except Exception as error:  # the core reports entry problems with its own exceptions
            raise core_error(error) from error

    def _decode_match(self, table: TableInfo, entry: p4runtime_pb2.TableEntry) -> tuple[dict, MatchKey]:
        """The core's match dict and the normalised key (field values in P4Info order, None for wildcards)."""
        values: dict[int, Any] = {}
        for field_match in entry.match:
            info = table.fields_by_id.get(field_match.field_id)
            if info is None:
                raise invalid(f"{table.name}: no match field with id {field_match.field_id}")
            if info.id in values:
                raise invalid(f"{table.name}: match field {info.name} given twice")
            what = f"{table.name} field {info.name}"
            kind = field_match.WhichOneof("field_match_type")
            width = info.bitwidth
            if info.match_type == EXACT and kind == "exact":
                values[info.id] = decode_bytestring(field_match.exact.value, width, what)
            elif info.match_type == LPM and kind == "lpm":
                value = decode_bytestring(field_match.lpm.value, width, what)
                prefix = field_match.lpm.prefix_len
                if not 0 < prefix <= width:
                    raise invalid(f"{what}: prefix length {prefix} out of 1..{width} (a /0 must be omitted)")
                if value & ((1 << (width - prefix)) - 1):
                    raise invalid(f"{what}: value has bits set beyond the /{prefix} prefix")
                values[info.id] = (value, prefix)
            elif info.match_type == TERNARY and kind == "ternary":
                value = decode_bytestring(field_match.ternary.value, width, what)
                mask = decode_bytestring(field_match.ternary.mask, width, what + " mask")
                if mask == 0:
                    raise invalid(f"{what}: an all-zero mask must be omitted")
                if value & ~mask:
                    raise invalid(f"{what}: value has bits set outside the mask")
                values[info.id] = (value, mask)
            elif info.match_type == RANGE and kind == "range":
                low = decode_bytestring(field_match.range.low, width, what + " low")
                high = decode_bytestring(field_match.range.high, width, what + " high")
                if low > high:
                    raise invalid(f"{what}: range low {low} > high {high}")
                if low == 0 and high == (1 << width) - 1:
                    raise invalid(f"{what}: a full range must be omitted")
                values[info.id] = (low, high)
            elif info.match_type == OPTIONAL and kind == "optional":
                values[info.id] = decode_bytestring(field_match.optional.value, width, what)
            else:
                raise invalid(f"{what}: match kind {kind} given for a field of kind {info.match_type}")
        match: dict[str, Any] = {}
        key = []
        for info in table.match_fields:
            value = values.get(info.id)
            if value is None and info.match_type == EXACT:
                raise invalid(f"{table.name}: exact field {info.name} is missing")
            key.append(value)
            if value is not None:
                match[info.name] = value
        if table.needs_priority and entry.priority <= 0:
            raise invalid(f"{table.name}: entries of this table need a priority > 0")
        if not table.needs_priority and entry.priority != 0:
            raise invalid(f"{table.name}: entries of this table take no priority")
        key.append(entry.priority)
        return match, tuple(key)

    def _decode_action(
        self, table: TableInfo, entry: p4runtime_pb2.TableEntry, for_default: bool
    ) -> tuple[str, tuple[int, ...]]:
        which = entry.action.WhichOneof("type")
        if which is None:
            raise invalid(f"{table.name}: the entry has no action")
        if which != "action":
            raise P4RuntimeError(
                code_pb2.UNIMPLEMENTED, f"{table.name}: {which} is not supported by this target"
            )
        action = entry.action.action
        info = self.index.actions.get(action.action_id)
        if info is None:
            raise invalid(f"{table.name}: no action with id {action.action_id}")
        scope = table.action_scopes.get(info.id)
        if scope is None:
            raise invalid(f"{table.name}: action {info.name} is not an action of this table")
        if for_default and scope == TABLE_ONLY:
            raise invalid(f"{table.name}: action {info.name} cannot be the default action")
        if not for_default and scope == DEFAULT_ONLY:
            raise invalid(f"{table.name}: action {info.name} can only be the default action")
        values: dict[str, int] = {}
        for param in action.params:
            param_info = info.params_by_id.get(param.param_id)
            if param_info is None:
                raise invalid(f"{info.name}: no parameter with id {param.param_id}")
            if param_info.name in values:
                raise invalid(f"{info.name}: parameter {param_info.name} given twice")
            values[param_info.name] = decode_bytestring(
                param.value, param_info.bitwidth, f"{info.name} parameter {param_info.name}"
            )
        if len(values) != len(info.params):
            missing = [p.name for p in info.params if p.name not in values]
            raise invalid(f"{info.name}: missing parameters {missing}")
        return info.name, tuple(values[p.name] for p in info.params)

    def _core_key(self, table: TableInfo, core_entry: Any) -> MatchKey:
        match = core_entry.match
        key = []
        for info in table.match_fields:
            value = match.get(info.name)
            key.append(tuple(value) if isinstance(value, (tuple, list)) else value)
        key.append(core_entry.priority)
        return tuple(key)

    # ----- read ------------------------------------------------------------------------------
    def read(self, entity: p4runtime_pb2.Entity) -> Iterator[p4runtime_pb2.Entity]:
        """Entities matching one (possibly wildcard) entity of a ReadRequest."""
        which = entity.WhichOneof("entity")
        if which == "table_entry":
            yield from self._read_table_entries(entity.table_entry)
        elif which == "counter_entry":
            yield from self._read_counters(entity.counter_entry)
        elif which == "direct_counter_entry":
            request = entity.direct_counter_entry.table_entry
            for table_entity in self._read_table_entries(request, with_counters=True, counted_only=True):
                result = p4runtime_pb2.Entity()
                result.direct_counter_entry.table_entry.CopyFrom(table_entity.table_entry)
                result.direct_counter_entry.table_entry.ClearField("counter_data")
                result.direct_counter_entry.data.CopyFrom(table_entity.table_entry.counter_data)
                yield result
        elif which == "register_entry":
            yield from self._read_registers(entity.register_entry)
        elif which == "packet_replication_engine_entry" and self.replication is not None:
            yield from self.replication.read(entity.packet_replication_engine_entry)
        elif which == "meter_entry":
            yield from self.meters.read(entity.meter_entry)
        elif which == "digest_entry" and self.digests is not None:
            yield from self.digests.read(entity.digest_entry)
        elif which == "direct_meter_entry":
            request = entity.direct_meter_entry.table_entry
            for table_entity in self._read_table_entries(request, metered_only=True):
                result = p4runtime_pb2.Entity()
                entry = table_entity.table_entry
                result.direct_meter_entry.table_entry.CopyFrom(entry)
                table = self.index.table(entry.table_id)
                match, _ = self._decode_match(table, entry)
                config = self.pipeline.direct_meter_config(table.name, match, entry.priority)
                set_config(result.direct_meter_entry, config)
                yield result
        else:
            raise P4RuntimeError(code_pb2.UNIMPLEMENTED, f"reading {which} is not supported by this target")

    def _read_table_entries(
        self,
        request: p4runtime_pb2.TableEntry,
        with_counters: bool = False,
        counted_only: bool = False,
        metered_only: bool = False,
    ) -> Iterator[p4runtime_pb2.Entity]:
        if request.table_id == 0:
            tables = list(self.index.tables.values())
        else:
            tables = [self.index.table(request.table_id)]
        with_counters = with_counters or request.HasField("counter_data")
        wanted_key = None
        if request.match and request.table_id:
            _, wanted_key = self._decode_match(tables[0], request)
        for table in tables:
            if counted_only and table.direct_counter is None:
                continue
            if metered_only and (table.direct_meter is None or request.is_default_action):
                continue
            if request.is_default_action:
                yield self._default_entity(table)
                continue
            for core_entry in self.pipeline.table_entries(table.name):
                if wanted_key is not None and self._core_key(table, core_entry) != wanted_key:
                    continue
                yield self._entry_entity(table, core_entry, with_counters)

    def _default_entity(self, table: TableInfo) -> p4runtime_pb2.Entity:
        entity = p4runtime_pb2.Entity()
        entry = entity.table_entry
        entry.table_id = table.id
        entry.is_default_action = True
        action_name, params = self.pipeline.table_default(table.name)
        self._encode_action(entry.action.action, action_name, params)
        return entity

    def _entry_entity(self, table: TableInfo, core_entry: Any, with_counters: bool) -> p4runtime_pb2.Entity:
        entity = p4runtime_pb2.Entity()
        entry = entity.table_entry
        entry.table_id = table.id
        entry.priority = core_entry.priority
        for info in table.match_fields:
            value = core_entry.match.get(info.name)
            if value is None:
                continue
            field_match = entry.match.add()
            field_match.field_id = info.id
            if info.match_type == EXACT:
                field_match.exact.value = encode_bytestring(value)
            elif info.match_type == LPM:
                field_match.lpm.value = encode_bytestring(value[0])
                field_match.lpm.prefix_len = value[1]
            elif info.match_type == TERNARY:
                field_match.ternary.value = encode_bytestring(value[0])
                field_match.ternary.mask = encode_bytestring(value[1])
            elif info.match_type == RANGE:
                field_match.range.low = encode_bytestring(value[0])
                field_match.range.high = encode_bytestring(value[1])
            elif info.match_type == OPTIONAL:
                field_match.optional.value = encode_bytestring(value)
        self._encode_action(entry.action.action, core_entry.action, core_entry.params)
        if with_counters and table.direct_counter is not None:
            packets, byte_count = self.pipeline.direct_counter_read(
                table.name, core_entry.match, core_entry.priority
            )
            entry.counter_data.packet_count = packets
            entry.counter_data.byte_count = byte_count
        return entity

    def _encode_action(
        self, message: p4runtime_pb2.Action, action_name: str, params: tuple[int, ...]
    ) -> None:
        """Encode an action; ``params`` are the values in the action's parameter order (the core's form)."""
        info = self.index.actions_by_name[action_name]
        message.action_id = info.id
        for param_info, value in zip(info.params, params, strict=True):
            param = message.params.add()
            param.param_id = param_info.id
            param.value = encode_bytestring(value)

    def _read_counters(self, request: p4runtime_pb2.CounterEntry) -> Iterator[p4runtime_pb2.Entity]:
        counters = (
            list(self.index.counters.values())
            if request.counter_id == 0
            else [self.index.counter(request.counter_id)]
        )
        for counter in counters:
            for index in requested_cells(request, counter):
                packets, byte_count = self.pipeline.counter_read(counter.name, index)
                entity = p4runtime_pb2.Entity()
                entity.counter_entry.counter_id = counter.id
                entity.counter_entry.index.index = index
                entity.counter_entry.data.packet_count = packets
                entity.counter_entry.data.byte_count = byte_count
                yield entity

    def _read_registers(self, request: p4runtime_pb2.RegisterEntry) -> Iterator[p4runtime_pb2.Entity]:
        registers = (
            list(self.index.registers.values())
            if request.register_id == 0
            else [self.index.register(request.register_id)]
        )
        for register in registers:
            for index in requested_cells(request, register):
                entity = p4runtime_pb2.Entity()
                entity.register_entry.register_id = register.id
                entity.register_entry.index.index = index
                entity.register_entry.data.bitstring = encode_bytestring(
                    self.pipeline.register_read(register.name, index)
                )
                yield entity
