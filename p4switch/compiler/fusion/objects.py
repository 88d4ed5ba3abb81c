"""The objects the fusion pass can replace: the generated classes' layouts, the roots, aliases to them."""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from p4switch.compiler.fusion.ast_tools import (
    FusionError,
    loaded_names,
    non_empty,
    path_of,
    stored_names,
    sub_blocks,
)


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
