"""Scalar replacement for the fusion pass: an object used only through its fields becomes locals."""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass

from p4switch.compiler.fusion.ast_tools import (
    FusionError,
    NameSource,
    assign,
    attribute_path,
    path_of,
    rewrite_sub_blocks,
    statements,
)
from p4switch.compiler.fusion.objects import Layout, member_class

SPILL_HOOK = "queue"  # hooks.queue(port, priority, state, ts): the state is rebuilt from the locals there


@dataclass
class Node:
    """An object that may be replaced: its class and path, whether it escapes, its shape if a header stack."""

    cls: str
    path: tuple[str, ...]
    escaped: bool = False
    stack: StackShape | None = None  # a header stack: its elements' class, their blank, its size


@dataclass(frozen=True)
class StackShape:
    """A header stack created as ``HeaderStack(element_class, blank, size)``."""

    element: str
    blank: str
    size: int


STACK_FIELDS = ("items", "nxt")  # the state of a HeaderStack (p4switch.runtime.support) as locals
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
            rewrite_sub_blocks(statement, self.block)
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

        The same steps as HeaderStack's methods (p4switch.runtime.support), with the size,
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
