"""Rewrite the generated ``run_fused`` into one function whose headers and metadata are local variables.

``run_fused``, as emulation.target.codegen writes it, calls the parser, the controls and
the deparser, which call the actions; every header field is an attribute of an object
created per packet. This pass rewrites it with Python's ``ast`` module in three classic
compiler steps:

1. inlining: statement-level calls of parser, control and action functions are replaced
   by the function's body (its locals renamed where they would clash, a ``return``
   becoming a ``break`` out of a one-pass loop); a table's ``e.call(L)`` becomes an
   if/elif over the actions the table may run, each inlined;
2. alias resolution: ``_h = hdr.f_tw`` followed by ``_h.f_vc`` becomes ``hdr.f_tw.f_vc``;
3. scalar replacement: an object created in the function whose only uses are reads and
   writes of its fields (``hdr.f_tw.f_dst_pe``) becomes one local variable per field
   (``hdr_tw_dst_pe``), recursively for nested headers. An object used any other way
   (passed to a function, a method called on it, a header stack) stays an object.

The one place whole objects are needed, the state handed to ``hooks.queue`` when a
packet has to wait in a queue, rebuilds them from the locals. The rewritten function does
what the calls did (tests/unit/test_target_fused_driver.py compares the two on every
test program) at a fraction of the cost. Anything the pass does not recognise raises
FusionError, and the compiler keeps the plain ``run_fused``.
"""

from __future__ import annotations

import ast
import copy
import itertools
from dataclasses import dataclass, field

FUSED = "run_fused"
INLINED_PREFIXES = ("prs_", "ctl_", "act_")
SPILL_HOOK = "queue"  # hooks.queue(port, priority, state, ts): the state is rebuilt from the locals there


class FusionError(Exception):
    """The pass met code it does not handle; the plain driver is kept."""


def fuse(python_source: str, table_actions: dict[str, list[str]]) -> str:
    """The generated module with ``run_fused`` rewritten (the rest of the source unchanged).

    `table_actions` maps a table's global name (``T_MyIngress__route``) to the function
    names of the actions its entries may run (``act_MyIngress__set_route``, ...).
    """
    module = ast.parse(python_source)
    functions = {node.name: node for node in module.body if isinstance(node, ast.FunctionDef)}
    classes = {node.name: node for node in module.body if isinstance(node, ast.ClassDef)}
    driver = functions.get(FUSED)
    if driver is None:
        raise FusionError(f"the module has no {FUSED}")
    names = NameSource(global_names(module) | set(local_names(driver)))
    inliner = Inliner(functions, table_actions, names)
    body = inliner.run(driver)
    body = remove_dead_stores(body)
    inliner.check_tuples(body)
    layouts = class_layouts(classes)
    roots = find_roots(body, layouts)
    body = AliasResolver(roots, layouts, stored_paths(body)).block(body, {})
    body = ScalarReplacer(roots, layouts, names).rewrite(body)
    fused = ast.FunctionDef(
        name=FUSED, args=driver.args, body=body, decorator_list=[], returns=None, type_comment=None
    )
    ast.fix_missing_locations(fused)
    lines = python_source.split("\n")
    start, end = driver.lineno - 1, driver.end_lineno
    return "\n".join([*lines[:start], ast.unparse(fused), *lines[end:]])


# ================================================================ names
class NameSource:
    """Fresh local names that clash with nothing in the module."""

    def __init__(self, reserved: set[str]) -> None:
        self.taken = set(reserved)

    def claim(self, name: str) -> str:
        """`name` itself if free, else name_2, name_3, ...; the result is taken from now on."""
        candidate = name
        for number in itertools.count(2):
            if candidate not in self.taken:
                break
            candidate = f"{name}_{number}"
        self.taken.add(candidate)
        return candidate


def global_names(module: ast.Module) -> set[str]:
    """Names the module binds at its top level or its functions read as globals."""
    found = {node.name for node in module.body if isinstance(node, ast.FunctionDef | ast.ClassDef)}
    found |= stored_names(
        [node for node in module.body if not isinstance(node, ast.FunctionDef | ast.ClassDef)]
    )
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef):
            found |= loaded_names(node.body) - set(local_names(node))
    return found


def local_names(function: ast.FunctionDef) -> list[str]:
    """The names a function binds (parameters first), in order of first appearance."""
    return list(dict.fromkeys([arg.arg for arg in function.args.args] + bound_in(function.body)))


def stored_names(nodes) -> set[str]:
    """Names bound anywhere in these statements."""
    return set(bound_in(nodes))


def bound_in(nodes) -> list[str]:
    """Names bound in these statements (assigned, loop targets, exception names), in order, with repeats."""
    found = []
    for statement in nodes:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                found.append(node.id)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                found.append(node.name)
    return found


def loaded_names(nodes) -> set[str]:
    """Names read anywhere in these statements (an augmented assignment reads its target too)."""
    found: set[str] = set()
    for statement in nodes:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                found.add(node.id)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                found.add(node.target.id)
    return found


class Renamer(ast.NodeTransformer):
    """Rename Name nodes (and exception handler names) by a mapping."""

    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.mapping.get(node.id, node.id)
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.ExceptHandler:
        if node.name:
            node.name = self.mapping.get(node.name, node.name)
        self.generic_visit(node)
        return node


def sub_blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists nested directly in a compound statement."""
    blocks = [
        getattr(statement, name) for name in ("body", "orelse", "finalbody") if hasattr(statement, name)
    ]
    blocks += [handler.body for handler in getattr(statement, "handlers", [])]
    return blocks


def non_empty(block: list[ast.stmt]) -> list[ast.stmt]:
    """A block Python accepts (``pass`` if nothing is left in it)."""
    return block or [ast.Pass()]


# ================================================================ 1. inlining
class Inliner:
    """Inline statement-level calls of block and action functions, and tables' ``e.call(L)``."""

    def __init__(
        self, functions: dict[str, ast.FunctionDef], table_actions: dict[str, list[str]], names: NameSource
    ):
        self.functions = functions
        self.table_actions = table_actions
        self.names = names
        self.tuples: dict[str, list[str]] = {}  # L = (p_hdr, p_meta, ...): the names a context tuple holds
        self.locals: set[str] = set()  # the local names of the function being built

    def run(self, driver: ast.FunctionDef) -> list[ast.stmt]:
        """The driver's body with every inlinable call replaced by the callee's body."""
        for name in local_names(driver):
            self.names.taken.add(name)
            self.locals.add(name)
        return self.block(copy.deepcopy(driver.body))

    def block(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for statement in statements:
            inlined = self.inline_statement(statement, out)
            if inlined is not None:
                out.extend(inlined)
                continue
            if (
                isinstance(statement, ast.Assign)
                and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name)
                and isinstance(statement.value, ast.Tuple)
                and all(isinstance(item, ast.Name) for item in statement.value.elts)
            ):
                self.tuples[statement.targets[0].id] = [item.id for item in statement.value.elts]
            for name in ("body", "orelse", "finalbody"):
                if hasattr(statement, name) and getattr(statement, name):
                    setattr(statement, name, non_empty(self.block(getattr(statement, name))))
            for handler in getattr(statement, "handlers", []):
                handler.body = non_empty(self.block(handler.body))
            out.append(statement)
        return out

    def inline_statement(self, statement: ast.stmt, before: list[ast.stmt]) -> list[ast.stmt] | None:
        """The statements replacing a call statement, or None to keep it."""
        if not isinstance(statement, ast.Expr) or not isinstance(statement.value, ast.Call):
            return None
        call = statement.value
        if call.keywords:
            return None
        if isinstance(call.func, ast.Name) and call.func.id.startswith(INLINED_PREFIXES):
            return self.inline_function(call.func.id, call.args)
        if (
            isinstance(call.func, ast.Attribute)
            and call.func.attr == "call"
            and isinstance(call.func.value, ast.Name)
            and len(call.args) == 1
            and isinstance(call.args[0], ast.Name)
        ):
            return self.inline_entry_call(call.func.value.id, call.args[0], before)
        return None

    def inline_function(self, name: str, args: list[ast.expr]) -> list[ast.stmt] | None:
        """The body of function `name` bound to `args`, or None if it cannot be inlined."""
        function = self.functions.get(name)
        if function is None or not inlinable(function, len(args)):
            return None
        params = [arg.arg for arg in function.args.args]
        if loaded_names(function.body) - set(local_names(function)) & self.locals:
            return None  # a global the callee reads is a local here: inlined, it would read the local
        body = copy.deepcopy(function.body)
        stored = stored_names(body)
        mapping: dict[str, str] = {}
        prologue: list[ast.stmt] = []
        for param, arg in zip(params, args, strict=True):
            if isinstance(arg, ast.Name) and param not in stored:
                mapping[param] = arg.id  # a read-only parameter is the caller's variable
        # the prologue `p_hdr, p_meta, ... = L` of an action called with a known context tuple
        if body and isinstance(first := body[0], ast.Assign) and len(first.targets) == 1:
            target, value = first.targets[0], first.value
            if (
                isinstance(target, ast.Tuple)
                and isinstance(value, ast.Name)
                and mapping.get(value.id, "") in self.tuples
                and all(isinstance(item, ast.Name) for item in target.elts)
            ):
                held = self.tuples[mapping[value.id]]
                unpacked = [item.id for item in target.elts]
                if len(held) == len(unpacked) and not set(unpacked) & stored_names(body[1:]):
                    mapping.update(zip(unpacked, held, strict=True))
                    body = body[1:]
        for local in local_names(function):
            if local not in mapping:
                mapping[local] = self.names.claim(local)
                self.locals.add(mapping[local])
        for param, arg in zip(params, args, strict=True):
            if mapping[param] != getattr(arg, "id", None):
                prologue.append(ast.Assign(targets=[ast.Name(mapping[param], ast.Store())], value=arg))
        body = [Renamer(mapping).visit(statement) for statement in body]
        if any(isinstance(node, ast.Return) for statement in body for node in ast.walk(statement)):
            body = [
                ast.While(
                    test=ast.Constant(True), body=[*map(ReturnToBreak().visit, body), ast.Break()], orelse=[]
                )
            ]
        return prologue + self.block(body)

    def inline_entry_call(
        self, entry: str, context: ast.Name, before: list[ast.stmt]
    ) -> list[ast.stmt] | None:
        """``e.call(L)`` after ``e = T_x...`` as an if/elif over the table's actions, or None to keep it."""
        if not before or not isinstance(before[-1], ast.Assign):
            return None
        lookup = before[-1]
        if [getattr(target, "id", None) for target in lookup.targets] != [entry]:
            return None
        tables = {
            node.id
            for node in ast.walk(lookup.value)
            if isinstance(node, ast.Name) and node.id.startswith("T_")
        }
        if len(tables) != 1 or (actions := self.table_actions.get(tables.pop())) is None or not actions:
            return None
        selector = self.names.claim("action")
        self.locals.add(selector)
        branches: list[tuple[str, list[ast.stmt]]] = []
        for action in actions:
            function = self.functions.get(action)
            if function is None:
                return None
            params = [ast.Name(self.names.claim(arg.arg), ast.Store()) for arg in function.args.args[:-1]]
            self.locals.update(param.id for param in params)
            inlined = self.inline_function(action, [ast.Name(p.id, ast.Load()) for p in params] + [context])
            if inlined is None:
                return None
            if params:
                unpack = ast.Assign(
                    targets=[ast.Tuple(params, ast.Store())],
                    value=ast.Attribute(ast.Name(entry, ast.Load()), "args", ast.Load()),
                )
                inlined = [unpack, *inlined]
            branches.append((action, inlined))
        if len(branches) == 1:
            return branches[0][1]
        chain: list[ast.stmt] = branches[-1][1]
        for action, body in reversed(branches[:-1]):
            test = ast.Compare(ast.Name(selector, ast.Load()), [ast.Is()], [ast.Name(action, ast.Load())])
            chain = [ast.If(test=test, body=non_empty(body), orelse=chain)]
        select = ast.Assign(
            targets=[ast.Name(selector, ast.Store())],
            value=ast.Attribute(ast.Name(entry, ast.Load()), "action", ast.Load()),
        )
        return [select, *chain]

    def check_tuples(self, body: list[ast.stmt]) -> None:
        """Every context tuple resolved at compile time must be bound once, to names bound at most once."""
        counts: dict[str, int] = {}
        for statement in body:
            for node in ast.walk(statement):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    counts[node.id] = counts.get(node.id, 0) + 1
        for name, held in self.tuples.items():
            for item in [name, *held]:
                if counts.get(item, 0) > 1:
                    raise FusionError(f"{item} is bound more than once; its context tuple cannot be resolved")


def inlinable(function: ast.FunctionDef, arg_count: int) -> bool:
    """A plain function (no defaults, *args, nested defs, yields) with bare returns outside loops."""
    args = function.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
        return False
    if len(args.args) != arg_count:
        return False
    for node in ast.walk(function):
        if node is not function and isinstance(node, ast.FunctionDef | ast.Lambda | ast.ClassDef):
            return False
        if isinstance(node, ast.Yield | ast.YieldFrom | ast.Global | ast.Nonlocal):
            return False
        if isinstance(node, ast.Return) and node.value is not None:
            return False
        if isinstance(node, ast.While | ast.For) and any(
            isinstance(inner, ast.Return) for inner in ast.walk(node)
        ):
            return False
    return True


class ReturnToBreak(ast.NodeTransformer):
    """``return`` -> ``break`` (the inlined body runs in a one-pass ``while True`` loop)."""

    def visit_Return(self, node: ast.Return) -> ast.Break:
        return ast.copy_location(ast.Break(), node)


def remove_dead_stores(body: list[ast.stmt]) -> list[ast.stmt]:
    """Drop ``name = <names, constants or a tuple of them>`` where the name is never read."""
    while True:
        before = sum(1 for statement in body for _ in ast.walk(statement))
        body = prune_dead_stores(body, loaded_names(body))
        if sum(1 for statement in body for _ in ast.walk(statement)) == before:
            return body


def prune_dead_stores(statements: list[ast.stmt], loaded: set[str]) -> list[ast.stmt]:
    """One pass of remove_dead_stores over a block and the blocks nested in it."""
    out = []
    for statement in statements:
        if (
            isinstance(statement, ast.Assign)
            and all(isinstance(t, ast.Name) and t.id not in loaded for t in statement.targets)
            and is_trivial(statement.value)
        ):
            continue
        for name in ("body", "orelse", "finalbody"):
            if hasattr(statement, name) and getattr(statement, name):
                setattr(statement, name, non_empty(prune_dead_stores(getattr(statement, name), loaded)))
        for handler in getattr(statement, "handlers", []):
            handler.body = non_empty(prune_dead_stores(handler.body, loaded))
        out.append(statement)
    return out


def is_trivial(value: ast.expr) -> bool:
    """An expression without effects: a name, a constant, or a tuple of them."""
    if isinstance(value, ast.Name | ast.Constant):
        return True
    return isinstance(value, ast.Tuple) and all(is_trivial(item) for item in value.elts)


# ================================================================ layouts of the generated classes
@dataclass
class Layout:
    """The attributes of a generated class: scalars with their defaults, members with their initialisers."""

    cls: str
    scalars: dict[str, ast.expr | None] = field(default_factory=dict)  # None: no default (a __slots__ class)
    members: dict[str, ast.expr] = field(default_factory=dict)
    from_args: bool = False  # PacketIn: the attributes come from the constructor's argument


PACKET_IN = "PacketIn"


def class_layouts(classes: dict[str, ast.ClassDef]) -> dict[str, Layout]:
    """Layouts of the header/struct classes (S_*), control locals (LV_*) and the runtime's PacketIn."""
    layouts = {PACKET_IN: Layout(PACKET_IN, scalars={"data": None, "off": None, "n": None}, from_args=True)}
    for name, node in classes.items():
        layout = Layout(name)
        understood = True
        for item in node.body:
            if (
                isinstance(item, ast.Assign)
                and len(item.targets) == 1
                and isinstance(item.targets[0], ast.Name)
            ):
                target = item.targets[0].id
                if target == "__slots__":
                    slots = ast.literal_eval(item.value)
                    layout.scalars.update(dict.fromkeys(slots if isinstance(slots, tuple) else (slots,)))
                elif isinstance(item.value, ast.Constant):
                    layout.scalars[target] = item.value
                else:
                    understood = False
            elif isinstance(item, ast.FunctionDef) and item.name == "__init__":
                for statement in item.body:
                    member = self_member(statement)
                    if member is None:
                        understood = False
                    else:
                        layout.members[member[0]] = member[1]
        if understood:
            layouts[name] = layout
    return layouts


def self_member(statement: ast.stmt) -> tuple[str, ast.expr] | None:
    """(attribute, initialiser) of ``self.attr = <expression not using self>`` in an __init__."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    if not (
        isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
    ):
        return None
    if "self" in loaded_names([ast.Expr(statement.value)]):
        return None
    return target.attr, statement.value


def member_class(initialiser: ast.expr, layouts: dict[str, Layout]) -> str | None:
    """The class a member's initialiser creates (``S_ethernet_t()``), if it has a layout and no arguments."""
    if (
        isinstance(initialiser, ast.Call)
        and isinstance(initialiser.func, ast.Name)
        and not initialiser.args
        and not initialiser.keywords
        and initialiser.func.id in layouts
        and not layouts[initialiser.func.id].from_args
    ):
        return initialiser.func.id
    return None


def find_roots(body: list[ast.stmt], layouts: dict[str, Layout]) -> dict[str, str]:
    """Variables bound once, by ``x = C(...)`` with C a class with a layout: name -> class."""
    stores: dict[str, int] = {}
    created: dict[str, str] = {}
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                stores[node.id] = stores.get(node.id, 0) + 1
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id in layouts
            ):
                created[node.targets[0].id] = node.value.func.id
    return {name: cls for name, cls in created.items() if stores.get(name) == 1}


# ================================================================ 2. aliases
def path_of(node: ast.expr) -> tuple[str, ...] | None:
    """``a.b.c`` as ("a", "b", "c"); None for anything but a name and attributes."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return (node.id, *reversed(attrs))


def stored_paths(body: list[ast.stmt]) -> set[tuple[str, ...]]:
    """Attribute paths assigned anywhere (``hdr.f_tw = ...``)."""
    found = set()
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                path = path_of(node)
                if path is not None:
                    found.add(path)
    return found


UNKNOWN = "unknown"  # a name bound differently on different paths: reading it stops the pass
PLAIN = "plain"  # a name bound to a value that is not an alias


class AliasResolver:
    """Replace reads of ``_h`` after ``_h = hdr.f_tw`` by ``hdr.f_tw``, and drop the alias assignment.

    Only names of objects are aliases (a header, a struct, a header stack: members all the
    way down from a root); ``v = hdr.f_a.f_x`` copies a value and stays as it is.
    Flow-sensitive over the statement tree: inside a loop or an exception handler, and
    after a compound statement, a name aliased in it is UNKNOWN; reading an UNKNOWN name
    raises FusionError.
    """

    def __init__(
        self, roots: dict[str, str], layouts: dict[str, Layout], stored: set[tuple[str, ...]]
    ) -> None:
        self.roots = roots
        self.layouts = layouts
        self.stored = stored

    def alias_target(self, statement: ast.stmt) -> tuple[str, ast.expr] | None:
        """(name, path) for ``name = root.member...`` where no part of the path is ever reassigned."""
        if not (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            return None
        path = path_of(statement.value)
        if path is None or len(path) < 2 or path[0] not in self.roots or not self.is_object_path(path):
            return None
        if any(path[:length] in self.stored for length in range(2, len(path) + 1)):
            return None
        return statement.targets[0].id, statement.value

    def is_object_path(self, path: tuple[str, ...]) -> bool:
        """Whether every step of the path after the root names a member (an object), not a scalar field."""
        cls: str | None = self.roots[path[0]]
        for attr in path[1:]:
            layout = self.layouts.get(cls) if cls is not None else None
            if layout is None or attr not in layout.members:
                return False
            cls = member_class(layout.members[attr], self.layouts)  # None: a stack or other object, a leaf
        return True

    def aliased_in(self, statement: ast.stmt) -> set[str]:
        """Names that statements nested in this one make aliases."""
        found = set()
        for block in sub_blocks(statement):
            for inner in block:
                for node in ast.walk(inner):
                    alias = self.alias_target(node) if isinstance(node, ast.stmt) else None
                    if alias is not None:
                        found.add(alias[0])
        return found

    def block(self, statements: list[ast.stmt], env: dict) -> list[ast.stmt]:
        """The statements with aliases resolved; `env` (name -> path, PLAIN or UNKNOWN) is updated."""
        out = []
        for statement in statements:
            alias = self.alias_target(statement)
            if alias is not None:
                name, value = alias
                env[name] = self.substitute(value, env)
                continue
            aliased_inside = self.aliased_in(statement)
            bound_inside = stored_names([statement]) | aliased_inside  # before the alias assignments go
            if isinstance(statement, ast.If):
                statement.test = self.substitute(statement.test, env)
                statement.body = non_empty(self.block(statement.body, dict(env)))
                statement.orelse = self.block(statement.orelse, dict(env))
            elif isinstance(statement, ast.While | ast.For):
                inner = dict(env)
                for name in bound_inside:
                    inner[name] = UNKNOWN if name in aliased_inside else PLAIN
                if isinstance(statement, ast.For):
                    statement.iter = self.substitute(statement.iter, env)
                    for name in stored_names([ast.Assign(targets=[statement.target], value=ast.Constant(0))]):
                        inner[name] = PLAIN
                else:
                    statement.test = self.substitute(statement.test, inner)
                statement.body = non_empty(self.block(statement.body, inner))
                statement.orelse = self.block(statement.orelse, dict(inner))
            elif isinstance(statement, ast.Try):
                bound_in_body = stored_names(statement.body) | self.aliased_in(
                    ast.If(ast.Constant(True), statement.body, [])
                )
                statement.body = non_empty(self.block(statement.body, dict(env)))
                after = dict(env)
                for name in bound_in_body:
                    after[name] = UNKNOWN if name in aliased_inside else PLAIN
                for handler in statement.handlers:
                    handler_env = dict(after)
                    if handler.name:
                        handler_env[handler.name] = PLAIN
                    handler.body = non_empty(self.block(handler.body, handler_env))
                statement.orelse = self.block(statement.orelse, dict(after))
                statement.finalbody = self.block(statement.finalbody, dict(after))
            elif sub_blocks(statement):
                raise FusionError(f"unexpected statement {type(statement).__name__}")
            else:
                statement = self.substitute(statement, env)
                bound_inside = stored_names([statement])
            for name in bound_inside:
                env[name] = UNKNOWN if name in aliased_inside else PLAIN
            out.append(statement)
        return out

    def substitute(self, node, env: dict):
        """The node with reads of aliases replaced by copies of their paths."""

        class Substitute(ast.NodeTransformer):
            def visit_Name(self, name: ast.Name):
                bound = env.get(name.id)
                if isinstance(name.ctx, ast.Load) and bound is UNKNOWN:
                    raise FusionError(f"{name.id} may or may not be an alias of a header here")
                if isinstance(name.ctx, ast.Load) and isinstance(bound, ast.AST):
                    return copy.deepcopy(bound)
                return name

        return Substitute().visit(node)


# ================================================================ 3. scalar replacement
@dataclass
class Node:
    """An object being replaced: its class, and per attribute either a child Node or a local name."""

    cls: str
    path: tuple[str, ...]
    children: dict[str, Node] = field(default_factory=dict)
    escaped: bool = False
    stack: StackShape | None = None  # a header stack: its elements' class, their blank, its size


@dataclass(frozen=True)
class StackShape:
    """A header stack created as ``HeaderStack(element_class, blank, size)``."""

    element: str
    blank: str
    size: int


STACK_FIELDS = ("items", "nxt")  # the state of a HeaderStack (emulation.target.runtime) as locals
STACK_CONSTANTS = ("cls", "blank")


def stack_shape(initialiser: ast.expr) -> StackShape | None:
    """The shape of a ``HeaderStack(S_x, B_S_x, n)`` initialiser."""
    if (
        isinstance(initialiser, ast.Call)
        and isinstance(initialiser.func, ast.Name)
        and initialiser.func.id == "HeaderStack"
        and len(initialiser.args) == 3
        and not initialiser.keywords
    ):
        element, blank, size = initialiser.args
        if isinstance(element, ast.Name) and isinstance(blank, ast.Name) and isinstance(size, ast.Constant):
            if type(size.value) is int:
                return StackShape(element.id, blank.id, size.value)
    return None


def stack_method_use(attribute: ast.Attribute, parents: dict[int, ast.AST]) -> bool:
    """Whether ``stack.<method>`` is used in a form the scalar replacement rewrites.

    ``stack.push_front(n)`` and ``stack.pop_front(n)`` statements with a constant n,
    ``name = stack.w(index)`` with a constant or a name as index, and ``stack.stored()``.
    """
    call = parents.get(id(attribute))
    if not isinstance(call, ast.Call) or call.func is not attribute or call.keywords:
        return False
    holder = parents.get(id(call))
    if attribute.attr in ("push_front", "pop_front"):
        return (
            isinstance(holder, ast.Expr)
            and len(call.args) == 1
            and isinstance(call.args[0], ast.Constant)
            and type(call.args[0].value) is int
        )
    if attribute.attr == "w":
        return (
            isinstance(holder, ast.Assign)
            and len(holder.targets) == 1
            and isinstance(holder.targets[0], ast.Name)
            and len(call.args) == 1
            and isinstance(call.args[0], ast.Constant | ast.Name)
            and getattr(call.args[0], "id", None) != holder.targets[0].id  # the index is read twice
        )
    return attribute.attr == "stored" and not call.args


class ScalarReplacer:
    """Replace objects used only through their fields by one local per field."""

    def __init__(self, roots: dict[str, str], layouts: dict[str, Layout], names: NameSource) -> None:
        self.layouts = layouts
        self.names = names
        self.nodes: dict[tuple[str, ...], Node] = {}
        for root, cls in roots.items():
            self.add_node((root,), cls)
        self.leaves: dict[tuple[str, ...], str] = {}

    def add_node(self, path: tuple[str, ...], cls: str) -> None:
        self.nodes[path] = Node(cls, path)
        for attr, initialiser in self.layouts[cls].members.items():
            child = member_class(initialiser, self.layouts)
            if child is not None:
                self.add_node((*path, attr), child)
            elif (shape := stack_shape(initialiser)) is not None:
                self.nodes[(*path, attr)] = Node("HeaderStack", (*path, attr), stack=shape)

    def fields(self, path: tuple[str, ...]) -> set[str]:
        layout = self.layouts[self.nodes[path].cls]
        return set(layout.scalars) | set(layout.members)

    def stack_use_is_replaceable(self, attribute: ast.Attribute, parents: dict[int, ast.AST]) -> bool:
        """Whether this use of a header stack (``attribute.value``) can be rewritten on its locals."""
        if attribute.attr in STACK_FIELDS:
            return True
        if attribute.attr in STACK_CONSTANTS:
            return isinstance(attribute.ctx, ast.Load)
        return stack_method_use(attribute, parents)

    # ----- which objects escape
    def mark_escapes(self, body: list[ast.stmt]) -> None:
        """An object escapes if it is used other than by reading or writing a field it has."""
        spilled: set[int] = set()
        for statement in body:
            for node in ast.walk(statement):
                if is_spill(node):
                    spilled.update(id(item) for item in node.value.args[2].elts if isinstance(item, ast.Name))
        parents: dict[int, ast.AST] = {}
        for statement in body:
            for node in ast.walk(statement):
                for child in ast.iter_child_nodes(node):
                    parents[id(child)] = node
        for statement in body:
            for node in ast.walk(statement):
                if not isinstance(node, ast.Name) or (node.id,) not in self.nodes or id(node) in spilled:
                    continue
                if isinstance(node.ctx, ast.Store):
                    continue  # the root's one assignment: its creation
                path: tuple[str, ...] = (node.id,)
                current: ast.AST = node
                while True:
                    parent = parents.get(id(current))
                    if not (isinstance(parent, ast.Attribute) and parent.value is current):
                        self.nodes[path].escaped = True  # the object itself is used
                        break
                    if self.nodes[path].stack is not None:
                        if not self.stack_use_is_replaceable(parent, parents):
                            self.nodes[path].escaped = True
                        break
                    if parent.attr not in self.fields(path):
                        self.nodes[path].escaped = True  # a method or unknown attribute
                        break
                    child = (*path, parent.attr)
                    if child not in self.nodes:
                        break  # a field (scalar or opaque member) of a replaceable object
                    if isinstance(parent.ctx, ast.Store):
                        self.nodes[child].escaped = True  # the member object is replaced as a whole
                        break
                    path, current = child, parent
        # an escaped node makes its whole subtree objects; a replaced node needs replaced ancestors
        for path in sorted(self.nodes, key=len):
            if len(path) > 1 and self.nodes[path[:-1]].escaped:
                self.nodes[path].escaped = True

    def replaced(self, path: tuple[str, ...]) -> bool:
        node = self.nodes.get(path)
        return node is not None and not node.escaped

    def leaf(self, path: tuple[str, ...]) -> str:
        """The local holding attribute path[-1] of the replaced object path[:-1]."""
        name = self.leaves.get(path)
        if name is None:
            parts = [path[0], *("valid" if part == "_v" else part.removeprefix("f_") for part in path[1:])]
            name = self.leaves[path] = self.names.claim("_".join(parts))
        return name

    # ----- the rewrite
    def rewrite(self, body: list[ast.stmt]) -> list[ast.stmt]:
        self.mark_escapes(body)
        return self.block(body)

    def block(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for statement in statements:
            created = self.creation(statement)
            if created is not None:
                out.extend(created)
                continue
            stack_operation = self.stack_statement(statement)
            if stack_operation is not None:
                out.extend(stack_operation)
                continue
            if isinstance(statement, ast.Return) and is_spill(statement):
                out.extend(self.rebuild(statement))
            for name in ("body", "orelse", "finalbody"):
                if hasattr(statement, name) and getattr(statement, name):
                    setattr(statement, name, non_empty(self.block(getattr(statement, name))))
            for handler in getattr(statement, "handlers", []):
                handler.body = non_empty(self.block(handler.body))
            out.append(self.replace_paths(statement))
        return out

    def stack_method(self, call: ast.AST) -> tuple[str, ...] | None:
        """The path of the replaced header stack whose method this is a call of, if it is one."""
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            return None
        path = path_of(call.func.value)
        if path is None or not self.replaced(path) or self.nodes[path].stack is None:
            return None
        return path

    def stack_statement(self, statement: ast.stmt) -> list[ast.stmt] | None:
        """push_front/pop_front/w of a replaced header stack as statements on its locals.

        The same steps as HeaderStack's methods (emulation.target.runtime), with the size,
        the count and the element class known here.
        """
        if isinstance(statement, ast.Expr | ast.Assign):
            call = statement.value
        else:
            return None
        path = self.stack_method(call)
        if path is None or call.func.attr not in ("push_front", "pop_front", "w"):
            return None  # stored() is an expression, rewritten where it is
        shape = self.nodes[path].stack
        items, nxt = (self.leaf((*path, name)) for name in STACK_FIELDS)
        method, blank, size = call.func.attr, shape.blank, shape.size
        if method == "w":
            name, index = statement.targets[0].id, ast.unparse(call.args[0])
            element = f"{items}[{index}]"
            return statements(
                f"{name} = {element}\nif {name} is {blank}:\n    {name} = {element} = {shape.element}()"
            )
        count = min(call.args[0].value, size)
        if method == "push_front" and count > 0:
            if count == 1:
                return statements(
                    f"{items}.pop()\n{items}.insert(0, {blank})\nif {nxt} < {size}:\n    {nxt} += 1"
                )
            return statements(
                f"del {items}[{size - count}:]\n{items}[0:0] = [{blank}] * {count}\n"
                f"{nxt} = min({nxt} + {count}, {size})"
            )
        if method == "pop_front" and count > 0:
            return statements(
                f"del {items}[:{count}]\n{items}.extend([{blank}] * {count})\n{nxt} = max({nxt} - {count}, 0)"
            )
        return [ast.Pass()]  # a push or pop of nothing

    def creation(self, statement: ast.stmt) -> list[ast.stmt] | None:
        """``hdr = S_headers_t()`` of a replaced root -> its fields' locals set to their initial values."""
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            return None
        target = statement.targets[0]
        if not isinstance(target, ast.Name) or not self.replaced((target.id,)):
            return None
        call = statement.value
        layout = self.layouts[self.nodes[(target.id,)].cls]
        if layout.from_args:  # PacketIn(packet)
            if len(call.args) != 1 or not isinstance(call.args[0], ast.Name):
                raise FusionError("PacketIn takes one name")
            data = call.args[0]
            root = target.id
            return [
                assign(self.leaf((root, "data")), ast.Name(data.id, ast.Load())),
                assign(self.leaf((root, "off")), ast.Constant(0)),
                assign(
                    self.leaf((root, "n")),
                    ast.Call(ast.Name("len", ast.Load()), [ast.Name(data.id, ast.Load())], []),
                ),
            ]
        return self.initial_values((target.id,))

    def initial_values(self, path: tuple[str, ...]) -> list[ast.stmt]:
        """Locals of a replaced object (and its replaced members) set as its constructor would."""
        shape = self.nodes[path].stack
        if shape is not None:
            items, nxt = (self.leaf((*path, name)) for name in STACK_FIELDS)
            return statements(f"{items} = [{shape.blank}] * {shape.size}\n{nxt} = 0")
        layout = self.layouts[self.nodes[path].cls]
        out: list[ast.stmt] = []
        by_value: dict[object, list[str]] = {}
        for attr, default in layout.scalars.items():
            if default is not None:
                by_value.setdefault(repr(default.value), [default.value, []])[1].append(
                    self.leaf((*path, attr))
                )
        for value, targets in by_value.values():
            out.append(
                ast.Assign(targets=[ast.Name(t, ast.Store()) for t in targets], value=ast.Constant(value))
            )
        for attr, initialiser in layout.members.items():
            if self.replaced((*path, attr)):
                out.extend(self.initial_values((*path, attr)))
            else:
                out.append(assign(self.leaf((*path, attr)), copy.deepcopy(initialiser)))
        return out

    def rebuild(self, statement: ast.Return) -> list[ast.stmt]:
        """Before ``return hooks.queue(..., (hdr, meta, sm, ...))``: the replaced objects built again."""
        out: list[ast.stmt] = []
        for item in statement.value.args[2].elts:
            if isinstance(item, ast.Name) and self.replaced((item.id,)):
                cls = self.nodes[(item.id,)].cls
                if self.layouts[cls].from_args:
                    raise FusionError("a PacketIn cannot be handed to a queue")
                out.append(assign(item.id, ast.Call(ast.Name(cls, ast.Load()), [], [])))
                out.extend(self.store_fields((item.id,)))
        return out

    def store_fields(self, path: tuple[str, ...]) -> list[ast.stmt]:
        """``obj.f = local`` for every field of a replaced object, recursively."""
        if self.nodes[path].stack is not None:
            return [
                ast.Assign(
                    targets=[attribute_path((*path, name), ast.Store())],
                    value=ast.Name(self.leaf((*path, name)), ast.Load()),
                )
                for name in STACK_FIELDS
            ]
        layout = self.layouts[self.nodes[path].cls]
        out: list[ast.stmt] = []
        for attr in [*layout.scalars, *layout.members]:
            if self.replaced((*path, attr)):
                out.extend(self.store_fields((*path, attr)))
            elif attr in layout.members or layout.scalars[attr] is not None:
                out.append(
                    ast.Assign(
                        targets=[attribute_path((*path, attr), ast.Store())],
                        value=ast.Name(self.leaf((*path, attr)), ast.Load()),
                    )
                )
        return out

    def replace_paths(self, statement: ast.stmt) -> ast.stmt:
        """Field accesses of replaced objects -> their locals (in this statement, not in nested blocks)."""
        replacer = self

        class Replace(ast.NodeTransformer):
            def visit_Attribute(self, node: ast.Attribute):
                path = path_of(node)
                if path is not None and replacer.replaced(path[:-1]) and not replacer.replaced(path):
                    shape = replacer.nodes[path[:-1]].stack
                    if shape is not None and path[-1] in STACK_CONSTANTS:
                        constant = shape.element if path[-1] == "cls" else shape.blank
                        return ast.copy_location(ast.Name(constant, ast.Load()), node)
                    return ast.copy_location(ast.Name(replacer.leaf(path), node.ctx), node)
                self.generic_visit(node)
                return node

            def visit_Call(self, node: ast.Call):
                stack = replacer.stack_method(node)
                if stack is not None and node.func.attr == "stored":  # stack.stored(), an expression
                    items = replacer.leaf((*stack, "items"))
                    return ast.copy_location(
                        ast.parse(
                            f"stored_headers({items}, {replacer.nodes[stack].stack.blank})", mode="eval"
                        ).body,
                        node,
                    )
                self.generic_visit(node)
                return node

        nested = {
            name: getattr(statement, name)
            for name in ("body", "orelse", "finalbody", "handlers")
            if hasattr(statement, name)
        }
        for name in nested:
            setattr(statement, name, [])
        statement = Replace().visit(statement)
        for name, value in nested.items():
            setattr(statement, name, value)
        return statement


def is_spill(node: ast.AST) -> bool:
    """``return hooks.queue(port, priority, (hdr, meta, sm, payload), ts)``."""
    return (
        isinstance(node, ast.Return)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Attribute)
        and node.value.func.attr == SPILL_HOOK
        and isinstance(node.value.func.value, ast.Name)
        and node.value.func.value.id == "hooks"
        and len(node.value.args) == 4
        and isinstance(node.value.args[2], ast.Tuple)
    )


def statements(source: str) -> list[ast.stmt]:
    """The statements of a piece of Python source (the rewrites' templates)."""
    return ast.parse(source).body


def assign(name: str, value: ast.expr) -> ast.Assign:
    """``name = value``."""
    return ast.Assign(targets=[ast.Name(name, ast.Store())], value=value)


def attribute_path(path: tuple[str, ...], ctx: ast.expr_context) -> ast.expr:
    """("a", "b", "c") -> ``a.b.c``."""
    node: ast.expr = ast.Name(path[0], ast.Load())
    for index, attr in enumerate(path[1:], start=2):
        node = ast.Attribute(node, attr, ctx if index == len(path) else ast.Load())
    return node
