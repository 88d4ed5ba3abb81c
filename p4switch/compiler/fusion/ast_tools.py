"""Helpers of the fusion pass (p4switch.compiler.fusion) over Python's ``ast``: names, blocks, paths."""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable


class FusionError(Exception):
    """The pass met code it does not handle; the plain driver is kept."""


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


def rewrite_sub_blocks(statement: ast.stmt, rewrite: Callable[[list[ast.stmt]], list[ast.stmt]]) -> None:
    """Replace each non-empty statement list nested directly in a compound statement by rewrite(list)."""
    for name in ("body", "orelse", "finalbody"):
        if getattr(statement, name, None):
            setattr(statement, name, non_empty(rewrite(getattr(statement, name))))
    for handler in getattr(statement, "handlers", []):
        handler.body = non_empty(rewrite(handler.body))


def non_empty(block: list[ast.stmt]) -> list[ast.stmt]:
    """A block Python accepts (``pass`` if nothing is left in it)."""
    return block or [ast.Pass()]


def path_of(node: ast.expr) -> tuple[str, ...] | None:
    """``a.b.c`` as ("a", "b", "c"); None for anything but a name and attributes."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return (node.id, *reversed(attrs))


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
