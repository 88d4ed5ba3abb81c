"""The rules of the fusion pass (p4switch/compiler/fusion/), one by one, on small hand-written modules.

tests/unit/test_target_fused_driver.py holds the pass to the reference semantics on whole
generated programs; a rule that no test program happens to exercise (a callee's local
shadowing the caller's, a header stack popped by more than its size, an alias bound in
an ``if``) is not covered there. Here each rule gets a module written in the style of
the generated code (p4switch/compiler/codegen/): struct classes ``S_*`` with class-level
defaults and an ``__init__`` creating members and header stacks, block functions
``prs_*``/``ctl_*``/``act_*``, tables' ``e = T_x... ; e.call(L)``, and a
``run_fused(packet, port, ts, admit, hooks)`` driver.

Every module is executed as written and after ``fuse``, each time in a fresh namespace
with the same inputs; the two must return the same values (objects compared field by
field, header stacks element by element), raise the same exception type, and make the
same calls of ``admit`` and of the hooks (a queued state compared field by field). Each
test also looks at the fused source (its ``ast``) to check that the rule did apply: a
rewrite that silently declined would otherwise pass as "identical results".
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from p4switch.compiler.compile import fused_or_plain
from p4switch.compiler.fusion import FusionError, fuse
from p4switch.compiler.model import ActionRefSpec, ActionSpec, ProgramModel, TableSpec
from p4switch.runtime.support import (
    ExitPipeline,
    HeaderStack,
    PacketIn,
    ParserError,
    header_from_bytes,
    make_blank,
    stored_headers,
)
from p4switch.runtime.tables import RuntimeEntry

#: What the generated module gets from p4switch.runtime.support (the generated module imports them).
RUNTIME: dict[str, Any] = {
    "PacketIn": PacketIn,
    "HeaderStack": HeaderStack,
    "make_blank": make_blank,
    "stored_headers": stored_headers,
    "header_from_bytes": header_from_bytes,
    "ParserError": ParserError,
    "Struct": __import__("struct").Struct,
    "ExitPipeline": ExitPipeline,
}

#: Struct and header classes as codegen writes them: class-level defaults, copy/assign
#: methods (ignored by the pass), members and a header stack created in ``__init__``, the
#: shared blank element of each header class, and a nested struct (``f_in``).
CLASSES = '''
class S_standard_metadata_t:
    """P4 struct standard_metadata_t."""
    f_ingress_port = 0
    f_egress_spec = 0
    f_egress_port = 0
    f_priority = 0
    f_parser_error = 0
    def copy(self):
        o = S_standard_metadata_t.__new__(S_standard_metadata_t); o.__dict__.update(self.__dict__)
        return o

class S_eth_t:
    """P4 header eth_t."""
    _v = False
    f_dst = 0
    f_type = 0
    def copy(self):
        o = S_eth_t.__new__(S_eth_t); o.__dict__.update(self.__dict__)
        return o
    def assign(self, other):
        d = self.__dict__; d.clear(); d.update(other.__dict__)
B_S_eth_t = make_blank(S_eth_t)

class S_tag_t:
    """P4 header tag_t (the element of a header stack)."""
    _v = False
    f_x = 0
    f_y = 0
    def copy(self):
        o = S_tag_t.__new__(S_tag_t); o.__dict__.update(self.__dict__)
        return o
B_S_tag_t = make_blank(S_tag_t)

class S_inner_t:
    """P4 struct inner_t (a struct member of the headers)."""
    def __init__(self):
        self.f_eth = S_eth_t()

class S_headers_t:
    """P4 struct headers_t."""
    def __init__(self):
        self.f_eth = S_eth_t()
        self.f_ip = S_eth_t()
        self.f_in = S_inner_t()
        self.f_tags = HeaderStack(S_tag_t, B_S_tag_t, 4)

class S_metadata_t:
    """P4 struct metadata_t."""
    f_a = 0
    f_b = 0
    f_c = 0
    f_d = 0
'''

Setup = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class Inputs:
    """The arguments of one ``run_fused`` call (``admit`` as the verdict it always gives)."""

    packet: bytes = b"\x05\x06\x07\x08"
    port: int = 0
    ts: int = 1000
    admit: bool = True


class RecordingHooks:
    """The hooks ``run_fused`` reports to (FusedHooks in p4switch/runtime/pipeline.py), recording calls."""

    def __init__(self, calls: list[tuple[Any, ...]]) -> None:
        """Record into ``calls``."""
        self.calls = calls

    def parser_error(self, code: int) -> None:
        """Record the parser error code."""
        self.calls.append(("parser_error", code))

    def ingress_drop(self) -> str:
        """Record an ingress drop."""
        self.calls.append(("ingress_drop",))
        return "ingress_drop"

    def queue(self, egress_port: int, priority: int, state: tuple[Any, ...], ts: int) -> str:
        """Record the queueing with the state as it is now (compared field by field later)."""
        self.calls.append(("queue", egress_port, priority, state_of(state), ts))
        return "queued"

    def egress_drop(self) -> str:
        """Record an egress drop."""
        self.calls.append(("egress_drop",))
        return "egress_drop"


def state_of(value: Any) -> Any:
    """A value with every object replaced by its fields, comparable across namespaces.

    A header stack becomes its elements and ``nxt``, a blank element (the shared
    read-only one of its class, a different object in each namespace) its class name,
    a generated struct or header its class name and all its ``f_*`` and ``_v`` fields
    (class defaults included). Identity between objects is not kept: tests that care
    return ``a is b`` themselves.
    """
    if isinstance(value, HeaderStack):
        return ("HeaderStack", state_of(value.items), value.nxt)
    if isinstance(value, list | tuple):
        return type(value)(state_of(item) for item in value)
    if isinstance(value, PacketIn):
        return ("PacketIn", value.data, value.off, value.n)
    cls = type(value)
    if cls.__name__.startswith("Blank"):
        return ("blank", cls.__name__)
    if cls.__name__.startswith(("S_", "LV_")):
        names = sorted(name for name in dir(value) if name == "_v" or name.startswith("f_"))
        return (cls.__name__, tuple((name, state_of(getattr(value, name, "unset"))) for name in names))
    return value


def load(source: str, setup: Setup | None = None) -> dict[str, Any]:
    """A fresh namespace with the module executed in it, then ``setup`` (tables) applied."""
    namespace = dict(RUNTIME)
    exec(compile(source, "<test module>", "exec"), namespace)
    if setup is not None:
        setup(namespace)
    return namespace


def run(source: str, inputs: Inputs, setup: Setup | None = None) -> list[tuple[Any, ...]]:
    """``run_fused`` of a fresh load of the module: admit and hook calls, then the outcome."""
    namespace = load(source, setup)
    calls: list[tuple[Any, ...]] = []

    def admit(egress_port: int, priority: int) -> bool:
        calls.append(("admit", egress_port, priority))
        return inputs.admit

    try:
        result = namespace["run_fused"](inputs.packet, inputs.port, inputs.ts, admit, RecordingHooks(calls))
    except Exception as error:  # compared by type with the other side's
        calls.append(("raised", type(error).__name__))
    else:
        calls.append(("returned", state_of(result)))
    return calls


def assert_same_behaviour(
    source: str, fused: str, inputs: Iterable[Inputs], setup: Setup | None = None
) -> list[list[tuple[Any, ...]]]:
    """The module as written and fused do the same on every input; returns the records (as written)."""
    records = []
    for one in inputs:
        plain, rewritten = run(source, one, setup), run(fused, one, setup)
        assert rewritten == plain, f"{one}: fused {rewritten} != as written {plain}\n{driver_text(fused)}"
        records.append(plain)
    return records


def ports(*numbers: int, **fields: Any) -> list[Inputs]:
    """Inputs differing by ingress port."""
    return [Inputs(port=number, **fields) for number in numbers]


# ------------------------------------------------------------------ looking at the fused source


def driver(source: str) -> ast.FunctionDef:
    """The ``run_fused`` function of a module."""
    return next(
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef) and node.name == "run_fused"
    )


def driver_text(source: str) -> str:
    """The source of ``run_fused`` (shown when a comparison fails)."""
    return ast.unparse(driver(source))


def called_functions(function: ast.FunctionDef) -> set[str]:
    """Names of the functions called by name in a function."""
    return {
        node.func.id
        for node in ast.walk(function)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }


def called_methods(function: ast.FunctionDef) -> set[str]:
    """Names of the methods (``x.m(...)``) called in a function."""
    return {
        node.func.attr
        for node in ast.walk(function)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }


def receivers_of(function: ast.FunctionDef, method: str) -> set[str]:
    """The objects (as source) whose ``method`` a function calls: ``U.pack(...)`` -> ``"U"``."""
    return {
        ast.unparse(node.func.value)
        for node in ast.walk(function)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == method
    }


def stored_locals(function: ast.FunctionDef) -> set[str]:
    """Names a function assigns."""
    return {
        node.id
        for node in ast.walk(function)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    }


def used_names(function: ast.FunctionDef) -> set[str]:
    """Every name a function reads or writes."""
    return {node.id for node in ast.walk(function) if isinstance(node, ast.Name)}


def is_spill(node: ast.AST) -> bool:
    """``return hooks.queue(...)``."""
    return (
        isinstance(node, ast.Return)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr == "queue"
    )


def spill_blocks(function: ast.FunctionDef) -> list[list[ast.stmt]]:
    """The statement lists ending in ``return hooks.queue(...)`` (where objects are rebuilt)."""
    return [
        block
        for node in ast.walk(function)
        for block in (getattr(node, "body", None), getattr(node, "orelse", None))
        if isinstance(block, list) and block and is_spill(block[-1])
    ]


def attribute_uses_outside_spill(function: ast.FunctionDef, roots: set[str]) -> list[str]:
    """``root.attr`` expressions of the given names anywhere but in a rebuild before ``hooks.queue``."""
    inside = {id(node) for block in spill_blocks(function) for stmt in block for node in ast.walk(stmt)}
    return [
        ast.unparse(node)
        for node in ast.walk(function)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in roots
        and id(node) not in inside
    ]


def program_model(table_actions: dict[str, list[str]]) -> ProgramModel:
    """A ProgramModel with these tables (global name -> action functions, the last the default).

    The P4 name of each action is its function's name; compiler.fused_or_plain derives
    the same ``table_actions`` from it (table actions and default, without repeats).
    """
    model = ProgramModel()
    for aid, function in enumerate(
        dict.fromkeys(name for names in table_actions.values() for name in names), start=1
    ):
        model.actions[function] = ActionSpec(name=function, function=function, params=[], aid=aid)
    for global_name, functions in table_actions.items():
        model.tables[global_name] = TableSpec(
            name=global_name,
            global_name=global_name,
            keys=[],
            actions=[ActionRefSpec(action=name) for name in functions],
            default_action=functions[-1],
            default_params=(),
            default_is_const=False,
            size=16,
        )
    return model


# ------------------------------------------------------------------ 1. inlining: names


CLASHING_NAMES = (
    CLASSES
    + """
def act_MyIngress__bump(a_n, L):
    p_meta, p_standard_metadata, _sm, LV = L
    x = a_n + 1
    e = x * 10
    p_meta.f_a = e

def act_MyIngress__rebind(a_n, L):
    p_meta, p_standard_metadata, _sm, LV = L
    a_n = a_n + 5
    p_meta.f_b = a_n

def ctl_MyIngress(_sm, p_meta, p_standard_metadata):
    LV = None
    L = (p_meta, p_standard_metadata, _sm, LV)
    x = p_standard_metadata.f_ingress_port * 2
    e = 7
    act_MyIngress__bump(x, L)
    act_MyIngress__rebind(x, L)
    p_meta.f_c = x + e

def run_fused(packet, port, ts, admit, hooks):
    meta = S_metadata_t(); sm = S_standard_metadata_t()
    sm.f_ingress_port = port
    x = port + 100
    e = port + 200
    ctl_MyIngress(sm, meta, sm)
    return x, e, meta.f_a, meta.f_b, meta.f_c
"""
)


def test_inlined_locals_that_clash_with_the_callers_keep_both_values() -> None:
    """A control and an action both bind ``x`` and ``e``, as the driver does, which reads its own after.

    Inlining renames the callee's locals (x_2, e_2, ...) so that neither the control's
    nor the driver's values are overwritten; an action that rebinds its parameter gets a
    copy of the argument, so the control's ``x`` it was called with is unchanged.
    """
    fused = fuse(CLASHING_NAMES, {})
    records = assert_same_behaviour(CLASHING_NAMES, fused, ports(0, 3))
    assert records[1][-1] == ("returned", (103, 203, 70, 11, 13))
    function = driver(fused)
    assert not {name for name in called_functions(function) if name.startswith(("ctl_", "act_"))}
    assert {"x", "e", "x_2", "e_2", "x_3", "e_3"} <= stored_locals(function)


SHADOWED_GLOBAL = """
scale = 10

def ctl_MyIngress(_sm, p_out):
    p_out.append(scale)

def run_fused(packet, port, ts, admit, hooks):
    scale = port
    out = []
    ctl_MyIngress(None, out)
    return out, scale
"""


def test_a_global_read_by_the_callee_is_not_shadowed_by_a_driver_local() -> None:
    """The callee reads the module's ``scale`` (10); the driver has a local ``scale``: inlined, still 10."""
    assert_same_behaviour(SHADOWED_GLOBAL, fuse(SHADOWED_GLOBAL, {}), ports(1))


REBOUND_CONTEXT = (
    CLASSES
    + """
def act_MyIngress__mark(L):
    p_meta, _sm, LV = L
    p_meta.f_a = 1

def ctl_MyIngress(_sm, p_meta):
    LV = None
    L = (p_meta, _sm, LV)
    p_meta = S_metadata_t()
    act_MyIngress__mark(L)

def run_fused(packet, port, ts, admit, hooks):
    meta = S_metadata_t()
    ctl_MyIngress(None, meta)
    return meta.f_a
"""
)


def test_a_context_tuple_whose_element_is_rebound_is_refused() -> None:
    """An action reads the tuple's elements as the names they were built from: a rebound name would differ.

    The control rebinds ``p_meta`` after building ``L``: the action must write the
    driver's ``meta``, not the new object; the pass refuses rather than resolve ``L``.
    """
    with pytest.raises(FusionError, match="bound more than once"):
        fuse(REBOUND_CONTEXT, {})


# ------------------------------------------------------------------ 2. inlining: return


EARLY_RETURNS = (
    CLASSES
    + """
def act_MyIngress__early(L):
    p_meta, p_standard_metadata, _sm, LV = L
    p_meta.f_b = p_meta.f_b + 1
    if p_standard_metadata.f_ingress_port > 1:
        return
    p_meta.f_b = p_meta.f_b + 10

def ctl_MyIngress(_sm, p_meta, p_standard_metadata):
    LV = None
    L = (p_meta, p_standard_metadata, _sm, LV)
    p_meta.f_a = 1
    act_MyIngress__early(L)
    p_meta.f_c = p_meta.f_c + 1
    if p_standard_metadata.f_ingress_port > 0:
        p_meta.f_a = 2
        return
    p_meta.f_a = 3
    p_meta.f_d = 4

def run_fused(packet, port, ts, admit, hooks):
    meta = S_metadata_t(); sm = S_standard_metadata_t()
    sm.f_ingress_port = port
    for _round in range(2):
        ctl_MyIngress(sm, meta, sm)
    meta.f_d = meta.f_d + 100
    return meta.f_a, meta.f_b, meta.f_c, meta.f_d
"""
)


def test_a_return_in_an_inlined_callee_ends_only_the_callee() -> None:
    """``return`` inside an ``if`` of a control, and of an action inlined in it, called in a loop.

    The statements after the return in the callee must not run when it returns; those
    after the call (in the control after the action, in the driver's loop and after
    the loop) must. Each inlined body with a return is a one-pass ``while True`` loop
    ending in ``break``; no ``return`` is left but the driver's own.
    """
    fused = fuse(EARLY_RETURNS, {})
    records = assert_same_behaviour(EARLY_RETURNS, fused, ports(0, 1, 2))
    assert [record[-1][1] for record in records] == [(3, 22, 2, 104), (2, 22, 2, 100), (2, 2, 2, 100)]
    function = driver(fused)
    assert not {name for name in called_functions(function) if name.startswith(("ctl_", "act_"))}
    returns = [node for node in ast.walk(function) if isinstance(node, ast.Return)]
    assert len(returns) == 1
    one_pass_loops = [
        node
        for node in ast.walk(function)
        if isinstance(node, ast.While)
        and isinstance(node.test, ast.Constant)
        and node.test.value is True
        and isinstance(node.body[-1], ast.Break)
    ]
    assert len(one_pass_loops) == 2


# ------------------------------------------------------------------ 3. tables: e.call(L)


TABLES = (
    CLASSES
    + """
def act_NoAction(L):
    pass

def act_MyIngress__set(a_port, a_prio, L):
    p_meta, p_standard_metadata, _sm, LV = L
    p_standard_metadata.f_egress_spec = a_port
    p_standard_metadata.f_priority = a_prio

def act_MyIngress__add(a_step, L):
    p_meta, p_standard_metadata, _sm, LV = L
    p_meta.f_a = p_meta.f_a + a_step

def ctl_MyIngress(_sm, p_meta, p_standard_metadata):
    LV = None
    L = (p_meta, p_standard_metadata, _sm, LV)
    p_meta.f_a = 100
    e = T_MyIngress__t.by_key.get((p_standard_metadata.f_ingress_port,)) or T_MyIngress__t.default
    e.call(L)
    if e.hit:
        p_meta.f_b = 1
    e = T_MyIngress__u.by_key.get((p_meta.f_a,)) or T_MyIngress__u.default
    e.call(L)

def run_fused(packet, port, ts, admit, hooks):
    meta = S_metadata_t(); sm = S_standard_metadata_t()
    sm.f_ingress_port = port
    ctl_MyIngress(sm, meta, sm)
    return meta.f_a, meta.f_b, sm.f_egress_spec, sm.f_priority
"""
)

TABLE_ACTIONS = {
    "T_MyIngress__t": ["act_MyIngress__set", "act_MyIngress__add", "act_NoAction"],
    "T_MyIngress__u": ["act_MyIngress__add"],
}


def install_tables(namespace: dict[str, Any]) -> None:
    """Table ``t``: set(7, 2) on port 1, add(5) on port 2, NoAction (a hit) on port 3, NoAction missing.

    Table ``u`` (one action, add): add(1000) for f_a == 105 (after add(5)), else the default add(1).
    Entries are the data plane's RuntimeEntry, so ``e.call`` is what the real tables
    run (a partial of the action with its arguments, the builtin ``id`` for NoAction).
    """

    def entry(action: str, args: tuple[int, ...], hit: bool = True) -> RuntimeEntry:
        return RuntimeEntry(namespace[action], args, hit, 1, action)

    namespace["T_MyIngress__t"] = SimpleNamespace(
        by_key={
            (1,): entry("act_MyIngress__set", (7, 2)),
            (2,): entry("act_MyIngress__add", (5,)),
            (3,): entry("act_NoAction", ()),
        },
        default=entry("act_NoAction", (), hit=False),
    )
    namespace["T_MyIngress__u"] = SimpleNamespace(
        by_key={(105,): entry("act_MyIngress__add", (1000,))},
        default=entry("act_MyIngress__add", (1,), hit=False),
    )


def test_a_table_entry_call_becomes_a_dispatch_over_the_tables_actions() -> None:
    """``e.call(L)`` runs the entry's action with its arguments: inlined as an if/elif on ``e.action``.

    Entries with each action of the table (two with parameters, NoAction) and a missing
    key; the last action of the table is the ``else`` branch, a table of one action
    needs no test at all. The table_actions come from a ProgramModel through
    compiler.fused_or_plain, as the compiler makes them.
    """
    fused = fused_or_plain(TABLES, program_model(TABLE_ACTIONS))
    assert fused != TABLES
    records = assert_same_behaviour(TABLES, fused, ports(0, 1, 2, 3), install_tables)
    assert [record[-1][1] for record in records] == [
        (101, 0, 0, 0),
        (101, 1, 7, 2),
        (1105, 1, 0, 0),
        (101, 1, 0, 0),
    ]
    function = driver(fused)
    assert "call" not in called_methods(function)
    tested = [
        node.comparators[0].id
        for node in ast.walk(function)
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.Is)
    ]
    assert sorted(tested) == ["act_MyIngress__add", "act_MyIngress__set"]
    unpacked = [
        [target.id for target in node.targets[0].elts]
        for node in ast.walk(function)
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Tuple)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "args"
    ]
    assert sorted(unpacked) == [["a_port", "a_prio"], ["a_step"], ["a_step_2"]]
    assert not {"L", "LV"} & used_names(function)  # the context tuple resolved, then a dead store


def test_a_table_without_known_actions_keeps_its_entry_call() -> None:
    """A table missing from table_actions cannot be dispatched: its ``e.call(L)`` (and ``L``) stay."""
    fused = fuse(TABLES, {"T_MyIngress__t": TABLE_ACTIONS["T_MyIngress__t"]})
    assert_same_behaviour(TABLES, fused, ports(0, 1, 2, 3), install_tables)
    function = driver(fused)
    assert (
        sum(1 for node in ast.walk(function) if isinstance(node, ast.Attribute) and node.attr == "call") == 1
    )
    assert "L" in used_names(function)


# ------------------------------------------------------------------ 4. scalar replacement


SCALARS = (
    CLASSES
    + """
class LV_MyIngress:
    __slots__ = ('f_t',)

def ctl_MyIngress(_sm, p_hdr, p_meta):
    LV = LV_MyIngress()
    LV.f_t = p_hdr.f_eth.f_dst * 3
    p_meta.f_b = LV.f_t

def run_fused(packet, port, ts, admit, hooks):
    hdr = S_headers_t(); meta = S_metadata_t(); sm = S_standard_metadata_t()
    pk = PacketIn(packet)
    hdr.f_eth._v = True
    hdr.f_eth.f_dst = pk.data[pk.off]
    pk.off = pk.off + 1
    hdr.f_in.f_eth.f_type = hdr.f_eth.f_dst + port
    meta.f_a += hdr.f_in.f_eth.f_type
    ctl_MyIngress(sm, hdr, meta)
    sm.f_egress_spec = port
    if not admit(port, 0):
        return hooks.queue(port, 0, (hdr, meta, sm, pk.data[pk.off:]), ts)
    return hdr.f_eth._v, hdr.f_eth.f_dst, hdr.f_in.f_eth.f_type, meta.f_a, meta.f_b, pk.data[pk.off:], pk.n
"""
)


def test_objects_used_only_through_their_fields_become_locals() -> None:
    """Headers, a nested struct, metadata, standard metadata, PacketIn and a control's locals object.

    None of them is used but through its fields, so the fused driver has one local per
    field (``hdr_eth_valid``, ``hdr_in_eth_type``, ``pk_off``, ``LV_t``...) and no
    attribute access of them is left, except where they are rebuilt for ``hooks.queue``.
    """
    fused = fuse(SCALARS, {})
    assert_same_behaviour(SCALARS, fused, ports(0, 2) + ports(1, admit=False))
    function = driver(fused)
    assert attribute_uses_outside_spill(function, {"hdr", "meta", "sm", "pk", "LV"}) == []
    assert {"hdr_eth_valid", "hdr_eth_dst", "hdr_in_eth_type", "meta_a", "meta_b", "pk_off", "LV_t"} <= (
        stored_locals(function)
    )
    rebuilt = {
        node.targets[0].id
        for block in spill_blocks(function)
        for node in block
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
    }
    assert rebuilt == {"hdr", "meta", "sm"}
    outside = called_functions(function) - {"S_headers_t", "S_metadata_t", "S_standard_metadata_t"}
    assert not {"PacketIn", "LV_MyIngress", "S_inner_t", "S_eth_t"} & outside


ESCAPE_HEADER = (
    CLASSES
    + """
def helper(h):
    h.f_dst = h.f_dst + 42
    return h.f_type

def run_fused(packet, port, ts, admit, hooks):
    hdr = S_headers_t(); meta = S_metadata_t()
    hdr.f_eth.f_type = port
    hdr.f_ip.f_dst = port + 1
%s
    return hdr.f_eth.f_dst, hdr.f_eth.f_type, hdr.f_ip.f_dst, meta.f_a, meta.f_b
"""
)

ESCAPES = {
    "passed to a function": (
        """
    meta.f_a = helper(hdr.f_eth)
    meta.f_b = hdr.f_eth.f_dst
""",
        "hdr_eth = S_eth_t()",
        {"hdr_ip_dst", "meta_a", "meta_b"},
    ),
    "a method called on it": (
        """
    saved = hdr.f_eth.copy()
    hdr.f_eth.f_dst = 9
    meta.f_a = saved.f_dst
    meta.f_b = saved is hdr.f_eth
""",
        "hdr_eth = S_eth_t()",
        {"hdr_ip_dst", "meta_a", "meta_b"},
    ),
    "assigned as a whole": (
        """
    fresh = S_eth_t()
    fresh.f_dst = port + 5
    hdr.f_eth = fresh
    fresh.f_type = 8
    meta.f_a = fresh is hdr.f_eth
""",
        "hdr_eth = S_eth_t()",
        {"hdr_ip_dst", "meta_a", "meta_b"},
    ),
    "a root passed to a function": (
        """
    meta.f_a = helper(hdr.f_ip)
    meta.f_b = len(vars(meta))
""",
        "meta = S_metadata_t()",
        {"hdr_eth_type"},
    ),
    "a PacketIn with a method called": (
        """
    pk = PacketIn(packet)
    pk.advance(8, 1)
    meta.f_a = pk.data[pk.off]
""",
        "pk = PacketIn(packet)",
        {"hdr_eth_type", "hdr_ip_dst", "meta_a"},
    ),
}


@pytest.mark.parametrize("body, kept, replaced", list(ESCAPES.values()), ids=list(ESCAPES))
def test_an_object_used_as_an_object_stays_one(body: str, kept: str, replaced: set[str]) -> None:
    """An object used other than through its fields stays an object; the others are still replaced.

    A member passed to a function, with a method called on it (``copy``) or assigned
    as a whole is held in one local (``hdr_eth = S_eth_t()``, then ``hdr_eth.f_dst``);
    the function, the method or the assignment see and change the very object. So does
    a whole struct passed to a function, or a PacketIn whose ``advance`` is called.
    """
    source = ESCAPE_HEADER % body
    fused = fuse(source, {})
    assert_same_behaviour(source, fused, ports(0, 3))
    function = driver(fused)
    statements = {ast.unparse(node) for node in function.body}
    assert kept in statements
    holder = kept.split(" = ")[0]
    assert not {name for name in stored_locals(function) if name.startswith(f"{holder}_")}
    assert replaced <= stored_locals(function)


# ------------------------------------------------------------------ 5. aliases


ALIASES = (
    CLASSES
    + """
def run_fused(packet, port, ts, admit, hooks):
    hdr = S_headers_t(); meta = S_metadata_t()
    _h = hdr.f_eth
    if port & 1:
        _h.f_dst = 1
        _h._v = True
    else:
        _h.f_dst = 2
    meta.f_a = _h.f_dst
    if port & 2:
        _h = hdr.f_ip
        _h.f_type = 3
        meta.f_b = _h.f_type
    else:
        _h = hdr.f_ip
        _h.f_type = 4
        meta.f_b = _h.f_type + 1
    _h = hdr.f_in.f_eth
    _h.f_dst = meta.f_a + meta.f_b
    return meta.f_a, meta.f_b, hdr.f_eth._v, hdr.f_eth.f_dst, hdr.f_ip.f_type, hdr.f_in.f_eth.f_dst
"""
)


def test_aliases_are_resolved_in_and_across_branches() -> None:
    """``_h = hdr.f_eth`` read in both branches of an if/else and after it; rebound inside branches.

    Every read of ``_h`` becomes the path it aliases, so ``_h`` disappears and the
    headers become locals (an alias left in place would be a use of the object).
    """
    fused = fuse(ALIASES, {})
    assert_same_behaviour(ALIASES, fused, ports(0, 1, 2, 3))
    function = driver(fused)
    assert "_h" not in used_names(function)
    assert attribute_uses_outside_spill(function, {"hdr", "meta"}) == []


ALIAS_IN_LOOP = (
    CLASSES
    + """
def run_fused(packet, port, ts, admit, hooks):
    hdr = S_headers_t()
    n = 0
    while n < 2:
        if n == port:
            _h = hdr.f_eth
        else:
            _h = hdr.f_ip
        _h.f_dst = n + 10
        n += 1
    return hdr.f_eth.f_dst, hdr.f_ip.f_dst
"""
)


def test_an_alias_bound_differently_by_branches_stops_the_pass() -> None:
    """``_h`` is ``hdr.f_eth`` or ``hdr.f_ip`` depending on the branch taken: it cannot be resolved.

    fuse raises FusionError, and compiler.fused_or_plain (given a ProgramModel, here
    without tables) then returns the module exactly as generated, which still runs.
    """
    with pytest.raises(FusionError, match="may or may not be an alias"):
        fuse(ALIAS_IN_LOOP, {})
    kept = fused_or_plain(ALIAS_IN_LOOP, program_model({}))
    assert kept == ALIAS_IN_LOOP
    assert run(kept, Inputs(port=1))[-1] == ("returned", (11, 10))


ALIAS_AFTER_IF = (
    CLASSES
    + """
def run_fused(packet, port, ts, admit, hooks):
    hdr = S_headers_t()
    _h = hdr.f_eth
    if port:
        _h = hdr.f_ip
    _h.f_dst = 2
    return hdr.f_eth.f_dst, hdr.f_ip.f_dst
"""
)


def test_an_alias_rebound_in_one_branch_of_an_if_is_not_resolved_to_its_old_target() -> None:
    """``_h`` rebound in an ``if`` without ``else``, read after it: refuse (FusionError) or get it right."""
    try:
        fused = fuse(ALIAS_AFTER_IF, {})
    except FusionError:
        return
    assert_same_behaviour(ALIAS_AFTER_IF, fused, ports(0, 1))


FIELD_COPY = (
    CLASSES
    + """
def run_fused(packet, port, ts, admit, hooks):
    hdr = S_headers_t()
    hdr.f_ip.f_dst = 9
    v_old_0 = hdr.f_eth.f_dst
    hdr.f_eth.assign(hdr.f_ip)
    hdr.f_eth.f_type = v_old_0
    return hdr.f_eth.f_type
"""
)


def test_a_local_copy_of_a_field_keeps_the_value_it_was_given() -> None:
    """P4 ``bit<16> old = hdr.a.x; hdr.a = hdr.b; hdr.a.y = old;`` as codegen writes it: old is 0, not 9."""
    assert_same_behaviour(FIELD_COPY, fuse(FIELD_COPY, {}), ports(0))


# ------------------------------------------------------------------ 6. the spill to hooks.queue


SPILL = (
    CLASSES
    + """
def helper(h):
    h.f_type = 77

def run_fused(packet, port, ts, admit, hooks):
    hdr = S_headers_t(); meta = S_metadata_t(); sm = S_standard_metadata_t()
    pk = PacketIn(packet)
    sm.f_ingress_port = port
    hdr.f_eth._v = True
    hdr.f_eth.f_dst = pk.data[0]
    pk.off = 1
    hdr.f_in.f_eth.f_type = port + 1
    helper(hdr.f_ip)
    hdr.f_tags.push_front(1)
    _elem0 = hdr.f_tags.w(0)
    _elem0._v = True
    _elem0.f_x = port
    _elem1 = hdr.f_tags.w(2)
    _elem1.f_y = 5
    meta.f_a = 3
    sm.f_egress_spec = port + 1
    sm.f_priority = 2
    egress_port = sm.f_egress_spec
    if not admit(egress_port, sm.f_priority):
        return hooks.queue(egress_port, sm.f_priority, (hdr, meta, sm, pk.data[pk.off:]), ts)
    sm.f_egress_port = egress_port
    out = []
    for _h in hdr.f_tags.stored():
        out.append(_h.f_x)
    return egress_port, hdr.f_eth.f_dst, meta.f_a, out
"""
)


def test_the_state_handed_to_hooks_queue_is_rebuilt_field_by_field() -> None:
    """With ``admit`` false, ``hooks.queue`` gets the (hdr, meta, sm, payload) the plain driver passes.

    Compared field by field: scalars, the nested struct, a member that stayed an object
    (changed by a function), the header stack's items (written elements and blanks, the
    blanks being the module's shared one) and nxt.
    """
    fused = fuse(SPILL, {})
    records = assert_same_behaviour(SPILL, fused, ports(1, 2, admit=False) + ports(3))
    queued = records[0][1]
    assert queued[0] == "queue" and queued[1:3] == (2, 2) and queued[4] == 1000
    hdr, meta, sm, payload = queued[3]
    assert payload == b"\x06\x07\x08"
    assert dict(hdr[1])["f_ip"] == ("S_eth_t", (("_v", False), ("f_dst", 0), ("f_type", 77)))
    assert dict(hdr[1])["f_tags"][2] == 1
    function = driver(fused)
    (block,) = spill_blocks(function)
    assert [
        ast.unparse(node)
        for node in block
        if isinstance(node, ast.Assign) and ast.unparse(node).startswith(("hdr = ", "meta = ", "sm = "))
    ] == ["hdr = S_headers_t()", "meta = S_metadata_t()", "sm = S_standard_metadata_t()"]
    assert {"hdr.f_tags.items = hdr_tags_items", "hdr.f_tags.nxt = hdr_tags_nxt", "hdr.f_ip = hdr_ip"} <= {
        ast.unparse(node) for node in block
    }

    calls: list[tuple[Any, ...]] = []
    states: list[tuple[Any, ...]] = []

    class KeepingHooks(RecordingHooks):
        """Hooks that also keep the queued state itself, to check identities in it."""

        def queue(self, egress_port: int, priority: int, state: tuple[Any, ...], ts: int) -> str:
            """Keep the state, then record as RecordingHooks does."""
            states.append(state)
            return super().queue(egress_port, priority, state, ts)

    namespace = load(fused)
    namespace["run_fused"](b"\x05\x06", 1, 0, lambda port, priority: False, KeepingHooks(calls))
    (state,) = states
    stack = state[0].f_tags
    assert stack.blank is namespace["B_S_tag_t"] and stack.cls is namespace["S_tag_t"]
    assert [item is stack.blank for item in stack.items] == [False, True, False, True]


def test_a_packet_in_cannot_be_handed_to_a_queue() -> None:
    """A replaced PacketIn has no rebuild (its methods read the bytes): queuing it stops the pass."""
    source = CLASSES + (
        "def run_fused(packet, port, ts, admit, hooks):\n"
        "    pk = PacketIn(packet)\n"
        "    pk.off = 1\n"
        "    return hooks.queue(port, 0, (pk,), ts)\n"
    )
    with pytest.raises(FusionError, match="PacketIn"):
        fuse(source, {})


# ------------------------------------------------------------------ 7. header stacks


STACK_MODULE = (
    CLASSES
    + """
def run_fused(packet, port, ts, admit, hooks):
    hdr = S_headers_t()
    for _i in range(3):
        _e = hdr.f_tags.w(_i)
        _e._v = True
        _e.f_x = 10 + _i
    hdr.f_tags.nxt = 3
%s
"""
)

STACK_CASES = {
    "push_front(1)": """
    hdr.f_tags.push_front(1)
    return hdr.f_tags.items, hdr.f_tags.nxt
""",
    "push_front(1) until full": """
    hdr.f_tags.push_front(1)
    hdr.f_tags.push_front(1)
    hdr.f_tags.push_front(1)
    return hdr.f_tags.items, hdr.f_tags.nxt
""",
    "push_front(2)": """
    hdr.f_tags.push_front(2)
    return hdr.f_tags.items, hdr.f_tags.nxt
""",
    "push_front beyond the size": """
    hdr.f_tags.push_front(6)
    return hdr.f_tags.items, hdr.f_tags.nxt
""",
    "pop_front(2)": """
    hdr.f_tags.pop_front(2)
    return hdr.f_tags.items, hdr.f_tags.nxt
""",
    "pop_front beyond the size": """
    hdr.f_tags.pop_front(9)
    return hdr.f_tags.items, hdr.f_tags.nxt
""",
    "push and pop of nothing": """
    hdr.f_tags.push_front(0)
    hdr.f_tags.pop_front(0)
    return hdr.f_tags.items, hdr.f_tags.nxt
""",
    "w on a blank and on a written element": """
    hdr.f_tags.pop_front(2)
    a = hdr.f_tags.w(1)
    fresh = a is not hdr.f_tags.blank
    a.f_y = 5
    b = hdr.f_tags.w(1)
    c = hdr.f_tags.w(port)
    return hdr.f_tags.items, fresh, a is b, b.f_y, c is a, c.f_x
""",
    "stored with a blank in the middle": """
    hdr.f_tags.pop_front(4)
    _a = hdr.f_tags.w(0)
    _a.f_x = 1
    _b = hdr.f_tags.w(2)
    _b.f_x = 2
    return hdr.f_tags.stored(), hdr.f_tags.items[1] is hdr.f_tags.blank, hdr.f_tags.nxt
""",
    "stored with a blank first": """
    hdr.f_tags.pop_front(1)
    hdr.f_tags.push_front(1)
    return hdr.f_tags.stored(), hdr.f_tags.items[0] is hdr.f_tags.blank, hdr.f_tags.nxt
""",
    "stored of a full stack is its list": """
    _e = hdr.f_tags.w(3)
    _e.f_x = 13
    return hdr.f_tags.stored(), hdr.f_tags.stored() is hdr.f_tags.items
""",
    "stored of an empty stack": """
    hdr.f_tags.pop_front(4)
    return hdr.f_tags.stored(), len(hdr.f_tags.items)
""",
    "extracts as the parser writes them": """
    hdr.f_tags.pop_front(4)
    for _k in range(port + 2):
        _st = hdr.f_tags; _n = _st.nxt
        if _n >= 4: raise ParserError(3)
        _h = _st.items[_n] = _st.cls()
        _h.f_x = _k
        _h._v = True
        _st.nxt = _n + 1
    return hdr.f_tags.items, hdr.f_tags.nxt
""",
}


@pytest.mark.parametrize("body", list(STACK_CASES.values()), ids=list(STACK_CASES))
def test_header_stack_operations_on_locals_match_the_header_stack_methods(body: str) -> None:
    """push_front/pop_front/w/stored of a replaced stack, rewritten on ``hdr_tags_items``/``hdr_tags_nxt``.

    As written, the module runs HeaderStack's own methods (p4switch.runtime.support);
    fused, it runs the pass's inline versions: the same elements (blanks where the
    methods leave blanks, the same object where ``w`` returns an existing element) and
    the same ``nxt``, on ports 0 to 3 (the ``w(port)`` index and the extract count).
    """
    source = STACK_MODULE % body
    fused = fuse(source, {})
    assert_same_behaviour(source, fused, ports(0, 1, 2, 3))
    function = driver(fused)
    assert not {"push_front", "pop_front", "w", "stored"} & called_methods(function)
    assert "HeaderStack" not in called_functions(function)
    assert attribute_uses_outside_spill(function, {"hdr"}) == []
    assert {"hdr_tags_items", "hdr_tags_nxt"} <= used_names(function)
    if ".stored()" in body:
        assert "stored_headers" in called_functions(function)


W_INTO_ITS_INDEX = (
    STACK_MODULE
    % """
    i = 3
    i = hdr.f_tags.w(i)
    i.f_y = 5
    return hdr.f_tags.items
"""
)


def test_w_assigned_to_its_own_index_variable() -> None:
    """``i = stack.w(i)``: the index is read before the name is rebound."""
    assert_same_behaviour(W_INTO_ITS_INDEX, fuse(W_INTO_ITS_INDEX, {}), ports(0))


STORED_STATEMENT = (
    STACK_MODULE
    % """
    got = hdr.f_tags.stored()
    return got
"""
)


def test_stored_assigned_to_a_name() -> None:
    """``got = stack.stored()``: an expression use like any other, fused or refused, never a crash."""
    try:
        fused = fuse(STORED_STATEMENT, {})
    except FusionError:
        return
    assert_same_behaviour(STORED_STATEMENT, fused, ports(0))


# ------------------------------------------------------------------ 8. dead stores


DEAD_STORES = (
    CLASSES
    + """
def ctl_MyIngress(_sm, p_meta):
    n = 0
    n += 1
    p_meta.f_a = n
    k = 0
    k += 2
    unused = 5
    p_meta.f_b = 1

def run_fused(packet, port, ts, admit, hooks):
    meta = S_metadata_t()
    ctl_MyIngress(None, meta)
    x = 0
    x += port
    return x, meta.f_a, meta.f_b
"""
)


def test_dead_store_removal_keeps_what_an_augmented_assignment_reads() -> None:
    """``x = 0; x += 1`` reads x: the initialisation stays, even when nothing else reads x (``k``).

    A store nothing reads (``unused = 5``, the inlined control's ``_sm = None``) goes.
    """
    fused = fuse(DEAD_STORES, {})
    assert_same_behaviour(DEAD_STORES, fused, ports(0, 4))
    function = driver(fused)
    initialised = {
        node.targets[0].id
        for node in ast.walk(function)
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
        and node.value.value == 0
    }
    assert {"n", "k", "x"} <= initialised
    assert not {"unused", "_sm"} & used_names(function)


# ------------------------------------------------------------------ 9. raw stack elements

#: A trace of 3-byte headers (a 16-bit and two 4-bit fields) that the parser extracts up
#: to the count in the packet's first byte, and the deparser emits after a new element the
#: ingress pushes in front, as codegen writes parser, controls and deparser. ``%(ingress)s``
#: is more ingress code.
RAW_MODULE = """
class S_standard_metadata_t:
    f_ingress_port = 0
    f_parser_error = 0

class S_cnt_t:
    _v = False
    f_n = 0

class S_hop_t:
    _v = False
    f_id = 0
    f_a = 0
    f_b = 0
    def copy(self):
        o = S_hop_t.__new__(S_hop_t); o.__dict__.update(self.__dict__)
        return o
    def extract(self, pk):
        _o = pk.off; _e = _o + 3
        if _e > pk.n: raise ParserError(1)
        _u0, _u1 = U_S_hop_t.unpack_from(pk.data, _o)
        pk.off = _e
        self.f_id = _u0
        self.f_a = (_u1 >> 4)
        self.f_b = (_u1 & 15)
        self._v = True
B_S_hop_t = make_blank(S_hop_t)
U_S_hop_t = Struct('!HB')
U_S_cnt_t = Struct('!B')

class S_headers_t:
    def __init__(self):
        self.f_cnt = S_cnt_t()
        self.f_hops = HeaderStack(S_hop_t, B_S_hop_t, 4)

class S_metadata_t:
    f_left = 0

def prs_MyParser(_sm, pk, p_hdr, p_meta, p_standard_metadata):
    st = 0
    while True:
        if st == 0:
            _h = p_hdr.f_cnt
            _o = pk.off; _e = _o + 1
            if _e > pk.n: raise ParserError(1)
            _u0, = U_S_cnt_t.unpack_from(pk.data, _o)
            pk.off = _e
            _h.f_n = _u0
            _h._v = True
            p_meta.f_left = p_hdr.f_cnt.f_n
            if p_meta.f_left == 0: break
            st = 1; continue
        elif st == 1:
            _st = p_hdr.f_hops; _n = _st.nxt
            if _n >= 4: raise ParserError(3)
            _h = _st.items[_n] = _st.cls()
            _o = pk.off; _e = _o + 3
            if _e > pk.n: raise ParserError(1)
            _u0, _u1 = U_S_hop_t.unpack_from(pk.data, _o)
            pk.off = _e
            _h.f_id = _u0
            _c = _u1
            _h.f_a = (_c >> 4)
            _h.f_b = (_c & 15)
            _h._v = True
            _st.nxt = _n + 1
            p_meta.f_left = ((p_meta.f_left - 1) & 255)
            if p_meta.f_left == 0: break
            st = 1; continue

def ctl_MyIngress(_sm, p_hdr, p_meta, p_standard_metadata):
    p_hdr.f_hops.push_front(1)
    _elem0 = p_hdr.f_hops.w(0)
    _elem0._v = True
    _elem0.f_id = p_standard_metadata.f_ingress_port + 100
    p_hdr.f_cnt.f_n = p_hdr.f_cnt.f_n + 1 & 255
%(ingress)s

def ctl_MyDeparser(_sm, out, p_hdr):
    _h = p_hdr.f_cnt
    if _h._v: out.append(U_S_cnt_t.pack(_h.f_n))
    for _h in p_hdr.f_hops.stored():
        if _h._v: out.append(U_S_hop_t.pack(_h.f_id, ((_h.f_a << 4) | _h.f_b)))

def run_fused(packet, port, ts, admit, hooks):
    hdr = S_headers_t(); meta = S_metadata_t(); sm = S_standard_metadata_t()
    sm.f_ingress_port = port
    pk = PacketIn(packet)
    try:
        prs_MyParser(sm, pk, hdr, meta, sm)
    except ParserError as error:
        sm.f_parser_error = error.code
    ctl_MyIngress(sm, hdr, meta, sm)
    if not admit(port, 0):
        return hooks.queue(port, 0, (hdr, meta, sm, pk.data[pk.off:]), ts)
    out = []
    ctl_MyDeparser(sm, out, hdr)
    out.append(pk.data[pk.off:])
    return (port, b''.join(out))
"""

#: frames: the count, then that many 3-byte elements, then a payload; one cut short inside
#: an element, one with more elements than the stack holds
RAW_FRAMES = [
    b"\x00payload",
    b"\x01\x00\x07\x5apayload",
    b"\x03\x00\x01\x12\x00\x02\x34\x00\x03\x56tail",
    b"\x02\x00\x01\x12\x00",
    b"\x05" + bytes(range(15)) + b"rest",
]


def raw_inputs() -> list[Inputs]:
    return [
        Inputs(packet=frame, port=port, admit=admit)
        for frame in RAW_FRAMES
        for port in (0, 3)
        for admit in (True, False)
    ]


def test_stack_elements_only_extracted_and_emitted_stay_bytes() -> None:
    """The parser stores each element as its bytes, the deparser emits them as they are.

    Same frames out, same queued state (the raw elements made objects for the queue),
    same parser errors (a cut-short element leaves a fresh invalid element, as before).
    """
    source = RAW_MODULE % {"ingress": ""}
    fused = fuse(source, {})
    assert_same_behaviour(source, fused, raw_inputs())
    function = driver(fused)
    assert receivers_of(function, "unpack_from") == {"U_S_cnt_t"}  # the count is unpacked, the elements not
    assert "header_from_bytes" in called_functions(function)
    assert "U_S_hop_t" in receivers_of(function, "pack")  # the pushed element, in the branch for objects


def test_a_raw_element_written_is_made_an_object_first() -> None:
    """``w(i)`` on an extracted element: the write lands on an object holding the element's fields."""
    source = RAW_MODULE % {
        "ingress": """    _e1 = p_hdr.f_hops.w(1)
    _e1.f_b = 9
"""
    }
    fused = fuse(source, {})
    assert_same_behaviour(source, fused, raw_inputs())
    assert "header_from_bytes" in called_functions(driver(fused))


@pytest.mark.parametrize(
    "ingress",
    [
        "    p_standard_metadata.f_ingress_port = p_hdr.f_hops.items[1].f_id",
        "    p_standard_metadata.f_ingress_port = len(p_hdr.f_hops.items)",
    ],
    ids=["an element's field read", "the list used as a value"],
)
def test_a_stack_used_otherwise_keeps_its_objects(ingress: str) -> None:
    """Any use of the list the step does not know leaves the extraction as it was."""
    source = RAW_MODULE % {"ingress": ingress}
    fused = fuse(source, {})
    assert_same_behaviour(source, fused, raw_inputs())
    function = driver(fused)
    assert "header_from_bytes" not in called_functions(function)
    assert receivers_of(function, "unpack_from") == {"U_S_cnt_t", "U_S_hop_t"}
