"""The control-plane model of a compiled program: tables, actions, counters, registers (P4Info names)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ActionParamSpec:
    """One control-plane parameter of an action."""

    name: str
    width: int


@dataclass
class ActionSpec:
    """An action: P4Info name, generated function, control-plane parameters."""

    name: str
    function: str
    params: list[ActionParamSpec]
    aid: int
    annotations: dict = field(default_factory=dict)
    hidden: bool = False


@dataclass
class KeySpec:
    """One key field of a table."""

    name: str
    match_kind: str  # exact | lpm | ternary | range | optional
    width: int
    annotations: dict = field(default_factory=dict)
    p4info_width: int | None = None  # when P4Info says otherwise (p4c gives an error key no bitwidth)


@dataclass
class ActionRefSpec:
    """An action a table may run, with its scope (table and default, table only, default only)."""

    action: str
    scope: str = "TABLE_AND_DEFAULT"
    annotations: dict = field(default_factory=dict)


@dataclass
class ConstEntrySpec:
    """An entry of `const entries`, in the control-plane match format."""

    match: dict
    action: str
    params: tuple[int, ...]
    priority: int


@dataclass
class TableSpec:
    """A table: keys, actions, default action, const entries, size, direct counter."""

    name: str
    global_name: str
    keys: list[KeySpec]
    actions: list[ActionRefSpec]
    default_action: str
    default_params: tuple[int, ...]
    default_is_const: bool
    size: int
    const_entries: list[ConstEntrySpec] | None = None
    direct_counter: str | None = None
    direct_meter: str | None = None
    annotations: dict = field(default_factory=dict)
    hidden: bool = False
    bound_functions: dict[str, str] = field(default_factory=dict)  # action -> its wrapper with bound args


@dataclass
class CounterSpec:
    """An indexed counter or a direct counter (then `table` names its table)."""

    name: str
    global_name: str
    size: int
    unit: str  # packets | bytes | packets_and_bytes
    table: str | None = None


@dataclass
class RegisterSpec:
    """A register array."""

    name: str
    global_name: str
    size: int
    width: int
    signed: bool = False


@dataclass
class DigestSpec:
    """A digest: named after its data type (a struct or header), as p4c names it in P4Info."""

    name: str
    type: tuple  # p4switch.compiler.codegen.digests.describe of the type


@dataclass
class ProgramModel:
    """Everything the control plane sees of a program, and the generated entry points of its blocks."""

    actions: dict[str, ActionSpec] = field(default_factory=dict)
    tables: dict[str, TableSpec] = field(default_factory=dict)
    counters: dict[str, CounterSpec] = field(default_factory=dict)
    direct_counters: dict[str, CounterSpec] = field(default_factory=dict)
    registers: dict[str, RegisterSpec] = field(default_factory=dict)
    meters: dict[str, CounterSpec] = field(default_factory=dict)  # unit: packets | bytes
    direct_meters: dict[str, CounterSpec] = field(default_factory=dict)
    entry_points: dict[str, str] = field(default_factory=dict)  # V1Switch role -> generated function
    header_class: str = ""
    metadata_class: str = ""
    standard_metadata_class: str = ""
    errors: dict[str, int] = field(default_factory=dict)
    drop_port: int = 511
    direct_actions: list[str] = field(default_factory=list)  # called by a control body (in P4Info)
    uses_externs: bool = False  # an extern is used (P4Info has type_info)
    uses_special_ops: bool = False  # clone, resubmit, recirculate or truncate is called
    digests: dict[str, DigestSpec] = field(default_factory=dict)  # digest(...) calls, by type name
    field_lists: dict[int, list[str]] = field(default_factory=dict)  # @field_list index -> metadata paths
