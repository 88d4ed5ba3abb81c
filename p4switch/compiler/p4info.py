"""P4Info of a compiled program, as p4c's bmv2 back end emits it (names, ids, widths, match types)."""

from __future__ import annotations

from p4.config.v1 import p4info_pb2, p4types_pb2

from p4switch.compiler.model import ProgramModel

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}
_UNITS = {
    "packets": p4info_pb2.CounterSpec.PACKETS,
    "bytes": p4info_pb2.CounterSpec.BYTES,
    "packets_and_bytes": p4info_pb2.CounterSpec.BOTH,
}
_METER_UNITS = {"packets": p4info_pb2.MeterSpec.PACKETS, "bytes": p4info_pb2.MeterSpec.BYTES}
_SCOPES = {
    "TABLE_AND_DEFAULT": p4info_pb2.ActionRef.TABLE_AND_DEFAULT,
    "TABLE_ONLY": p4info_pb2.ActionRef.TABLE_ONLY,
    "DEFAULT_ONLY": p4info_pb2.ActionRef.DEFAULT_ONLY,
}
_DOC_SKIP = {"name", "hidden", "tableonly", "defaultonly", "id", "brief", "description"}


def jenkins_one_at_a_time(name: str) -> int:
    """Bob Jenkins' one-at-a-time hash of a name (32 bits), which p4c uses for P4Info ids."""
    value = 0
    for byte in name.encode():
        value = (value + byte) & 0xFFFFFFFF
        value = (value + (value << 10)) & 0xFFFFFFFF
        value ^= value >> 6
    value = (value + (value << 3)) & 0xFFFFFFFF
    value ^= value >> 11
    value = (value + (value << 15)) & 0xFFFFFFFF
    return value


class IdAllocator:
    """P4Info ids: resource prefix in the top 8 bits, name hash in the low 24, probing on collision."""

    def __init__(self) -> None:
        """No ids used yet."""
        self.used: set[int] = set()

    def assign(self, prefix: int, name: str, explicit: int | None = None) -> int:
        """The id of a named resource (an @id annotation wins)."""
        if explicit is not None:
            ident = (prefix << 24) | (explicit & 0xFFFFFF) if explicit < (1 << 24) else explicit
        else:
            low = jenkins_one_at_a_time(name) & 0xFFFFFF
            ident = (prefix << 24) | low
            while ident in self.used:
                low = (low + 1) & 0xFFFFFF
                ident = (prefix << 24) | low
        self.used.add(ident)
        return ident


def aliases(names: list[str]) -> dict[str, str]:
    """Shortest unique dotted suffix of each name (p4c's alias)."""
    result = {}
    for name in names:
        parts = name.split(".")
        for count in range(1, len(parts) + 1):
            suffix = ".".join(parts[-count:])
            clashes = [n for n in names if n != name and (n == suffix or n.endswith("." + suffix))]
            if not clashes:
                result[name] = suffix
                break
        else:
            result[name] = name
    return result


def _preamble(preamble, ident: int, name: str, alias: str, annotations: dict) -> None:
    """Fill a P4Info preamble: id, name, alias and the annotations p4c keeps."""
    preamble.id = ident
    preamble.name = name
    preamble.alias = alias
    for key, values in annotations.items():
        if key in _DOC_SKIP:
            continue
        if values:
            rendered = ", ".join(f'"{v}"' if isinstance(v, str) else str(v) for v in values)
            preamble.annotations.append(f"@{key}({rendered})")
        else:
            preamble.annotations.append(f"@{key}")


def _data_type_spec(spec, description: tuple, type_info) -> None:
    """Fill a P4DataTypeSpec from a digest type description (p4switch.compiler.codegen.digests),
    adding the structs and headers it names to ``type_info``, as p4c does."""
    kind = description[0]
    if kind == "bool":
        spec.bool.SetInParent()
    elif kind in ("bit", "int"):
        getattr(spec.bitstring, kind).bitwidth = description[1]
    elif kind == "header":
        _, name, fields = description
        spec.header.name = name
        if name not in type_info.headers:
            header = type_info.headers[name]
            for fname, field in fields:
                member = header.members.add()
                member.name = fname
                width = 1 if field[0] == "bool" else field[1]
                getattr(member.type_spec, "int" if field[0] == "int" else "bit").bitwidth = width
    else:
        _, name, fields = description
        spec.struct.name = name
        if name not in type_info.structs:
            struct = p4types_pb2.P4StructTypeSpec()
            for fname, field in fields:
                member = struct.members.add()
                member.name = fname
                _data_type_spec(member.type_spec, field, type_info)
            type_info.structs[name].CopyFrom(struct)


def build_p4info(model: ProgramModel) -> p4info_pb2.P4Info:
    """The P4Info message of a program model."""
    info = p4info_pb2.P4Info()
    info.pkg_info.arch = "v1model"
    ids = IdAllocator()
    prefix = p4info_pb2.P4Ids
    tables = [t for t in model.tables.values() if not t.hidden]
    used_actions: list[str] = []
    for table in tables:
        for ref in table.actions:
            if ref.action not in used_actions:
                used_actions.append(ref.action)
    for name in model.direct_actions:
        if name not in used_actions and not model.actions[name].hidden:
            used_actions.append(name)
    action_ids = {}
    action_alias = aliases(used_actions)
    for name in used_actions:
        spec = model.actions[name]
        explicit = spec.annotations.get("id", [None])[0] if "id" in spec.annotations else None
        action_ids[name] = ids.assign(prefix.ACTION, name, explicit)
    table_alias = aliases([t.name for t in tables])
    table_ids = {}
    for table in tables:
        explicit = table.annotations.get("id", [None])[0] if "id" in table.annotations else None
        table_ids[table.name] = ids.assign(prefix.TABLE, table.name, explicit)
    direct_ids = {}
    direct_alias = aliases(list(model.direct_counters))
    for name in model.direct_counters:
        direct_ids[name] = ids.assign(prefix.DIRECT_COUNTER, name)
    for name in model.direct_meters:
        direct_ids[name] = ids.assign(prefix.DIRECT_METER, name)
    direct_meter_alias = aliases(list(model.direct_meters))
    meter_alias = aliases(list(model.meters))
    counter_alias = aliases(list(model.counters))
    register_alias = aliases(list(model.registers))

    for table in tables:
        message = info.tables.add()
        _preamble(
            message.preamble, table_ids[table.name], table.name, table_alias[table.name], table.annotations
        )
        for index, key in enumerate(table.keys, start=1):
            field = message.match_fields.add()
            field.id = index
            field.name = key.name
            field.bitwidth = key.width if key.p4info_width is None else key.p4info_width
            field.match_type = _MATCH_TYPES[key.match_kind]
        for ref in table.actions:
            action_ref = message.action_refs.add()
            action_ref.id = action_ids[ref.action]
            action_ref.scope = _SCOPES[ref.scope]
            for key in ("tableonly", "defaultonly"):
                if key in ref.annotations:
                    action_ref.annotations.append(f"@{key}")
        if table.default_is_const:
            message.const_default_action_id = action_ids[table.default_action]
        if table.direct_counter is not None:
            message.direct_resource_ids.append(direct_ids[table.direct_counter])
        if table.direct_meter is not None:
            message.direct_resource_ids.append(direct_ids[table.direct_meter])
        message.size = table.size
        if table.const_entries is not None:
            message.is_const_table = True
            message.has_initial_entries = bool(table.const_entries)

    for name in used_actions:
        spec = model.actions[name]
        message = info.actions.add()
        _preamble(message.preamble, action_ids[name], name, action_alias[name], spec.annotations)
        for index, param in enumerate(spec.params, start=1):
            p = message.params.add()
            p.id = index
            p.name = param.name
            p.bitwidth = param.width

    # counters and meters, indexed and direct: one message each, of the same shape
    for messages, specs, kind, alias, units in (
        (info.counters, model.counters, prefix.COUNTER, counter_alias, _UNITS),
        (info.meters, model.meters, prefix.METER, meter_alias, _METER_UNITS),
    ):
        for name, spec in specs.items():
            message = messages.add()
            _preamble(message.preamble, ids.assign(kind, name), name, alias[name], {})
            message.spec.unit = units[spec.unit]
            message.size = spec.size
    for messages, specs, alias, units in (
        (info.direct_counters, model.direct_counters, direct_alias, _UNITS),
        (info.direct_meters, model.direct_meters, direct_meter_alias, _METER_UNITS),
    ):
        for name, spec in specs.items():
            if spec.table is None or spec.table not in table_ids:
                continue
            message = messages.add()
            _preamble(message.preamble, direct_ids[name], name, alias[name], {})
            message.spec.unit = units[spec.unit]
            message.direct_table_id = table_ids[spec.table]

    for name, spec in model.registers.items():
        message = info.registers.add()
        _preamble(message.preamble, ids.assign(prefix.REGISTER, name), name, register_alias[name], {})
        if spec.signed:
            message.type_spec.bitstring.int.bitwidth = spec.width
        else:
            message.type_spec.bitstring.bit.bitwidth = spec.width
        message.size = spec.size
    digest_alias = aliases(list(model.digests))
    for name, spec in model.digests.items():
        message = info.digests.add()
        _preamble(message.preamble, ids.assign(prefix.DIGEST, name), name, digest_alias[name], {})
        _data_type_spec(message.type_spec, spec.type, info.type_info)
    if tables or model.uses_externs:
        info.type_info.SetInParent()  # as p4c writes it: present (empty) once a table or extern is seen
    if any(key.p4info_width == 0 for table in tables for key in table.keys):  # an error-typed key
        info.type_info.error.members.extend(sorted(model.errors, key=model.errors.__getitem__))
    return info
