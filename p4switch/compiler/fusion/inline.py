"""Inlining for the fusion pass: block, action and table-entry calls replaced by the callee's body."""

from __future__ import annotations

import ast
import copy

from p4switch.compiler.fusion.ast_tools import (
    FusionError,
    NameSource,
    Renamer,
    loaded_names,
    local_names,
    non_empty,
    rewrite_sub_blocks,
    stored_names,
)

INLINED_PREFIXES = ("prs_", "ctl_", "act_")


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
            rewrite_sub_blocks(statement, self.block)
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
    """Drop ``name = <names, constants or a tuple of them>`` where the name is never read.

    Repeated while a pass removes something: dropping ``L = (hdr, meta, LV)`` can leave
    ``LV = None`` unread.
    """
    while True:
        removed: list[ast.stmt] = []
        body = prune_dead_stores(body, loaded_names(body), removed)
        if not removed:
            return body


def prune_dead_stores(
    statements: list[ast.stmt], loaded: set[str], removed: list[ast.stmt]
) -> list[ast.stmt]:
    """One pass of remove_dead_stores over a block and its nested blocks; what it drops goes to `removed`."""
    out = []
    for statement in statements:
        if (
            isinstance(statement, ast.Assign)
            and all(isinstance(t, ast.Name) and t.id not in loaded for t in statement.targets)
            and is_trivial(statement.value)
        ):
            removed.append(statement)
            continue
        rewrite_sub_blocks(statement, lambda block: prune_dead_stores(block, loaded, removed))
        out.append(statement)
    return out


def is_trivial(value: ast.expr) -> bool:
    """An expression without effects: a name, a constant, or a tuple of them."""
    if isinstance(value, ast.Name | ast.Constant):
        return True
    return isinstance(value, ast.Tuple) and all(is_trivial(item) for item in value.elts)
