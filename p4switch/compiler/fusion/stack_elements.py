"""Fetch a header stack element once for a run of writes to its fields, in every generated function.

An action that fills a stack element (``hdr.trace[0].x = ...; hdr.trace[0].y = ...``) is
generated as one ``stack.w(0)`` method call per field. In a run of consecutive plain
assignments in one block to fields of the same element with a constant index, nothing
can move the stack's elements between the writes as long as no right-hand side calls
anything (calls could push, pop or assign the stack), so the run becomes
``_elemN = stack.w(0)`` followed by ``_elemN.x = ...``. Evaluating ``w(0)`` before the
first value instead of after it changes nothing either: a value that reads the element
sees its default field values whether it is the shared blank or the fresh element ``w``
puts in its place.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator

__all__ = ["hoist_stack_element_writes"]


def hoist_stack_element_writes(python_source: str) -> str:
    """The module with every run of element writes rewritten (functions without one unchanged)."""
    module = ast.parse(python_source)
    taken = {node.id for node in ast.walk(module) if isinstance(node, ast.Name)}
    names = (name for name in (f"_elem{n}" for n in itertools.count()) if name not in taken)
    lines = python_source.split("\n")
    functions = [node for node in module.body if isinstance(node, ast.FunctionDef)]
    for function in reversed(functions):  # back to front: earlier line numbers stay valid
        if _rewrite_blocks(function, names):
            ast.fix_missing_locations(function)
            start, end = function.lineno - 1, function.end_lineno
            lines[start:end] = ast.unparse(function).split("\n")
    return "\n".join(lines)


def _rewrite_blocks(node: ast.AST, names: Iterator[str]) -> bool:
    """Rewrite the runs in every statement list under `node`; whether anything changed."""
    changed = False
    for field in ("body", "orelse", "finalbody", "handlers"):
        block = getattr(node, field, None)
        if not isinstance(block, list):
            continue
        for child in block:
            changed |= _rewrite_blocks(child, names)
        if field != "handlers":
            rewritten = _hoisted(block, names)
            if rewritten is not block:
                setattr(node, field, rewritten)
                changed = True
    return changed


def _element_write(statement: ast.stmt) -> tuple[str, ast.Attribute] | None:
    """(element dump, target) if `statement` is ``a.b.w(CONST).field = value``, with no call in value."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    if not isinstance(target, ast.Attribute):
        return None
    element = target.value
    if not (
        isinstance(element, ast.Call)
        and isinstance(element.func, ast.Attribute)
        and element.func.attr == "w"
        and _dotted(element.func.value)
        and len(element.args) == 1
        and not element.keywords
        and isinstance(element.args[0], ast.Constant)
        and type(element.args[0].value) is int
    ):
        return None
    if any(isinstance(node, ast.Call) for node in ast.walk(statement.value)):
        return None
    return ast.dump(element), target


def _dotted(node: ast.expr) -> bool:
    """Whether `node` is a plain name or a chain of attributes of one."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _hoisted(block: list[ast.stmt], names: Iterator[str]) -> list[ast.stmt]:
    """`block` with its runs rewritten, or `block` itself when it has none."""
    result: list[ast.stmt] = []
    changed = False
    index = 0
    while index < len(block):
        first = _element_write(block[index])
        end = index + 1
        while first is not None and end < len(block):
            following = _element_write(block[end])
            if following is None or following[0] != first[0]:
                break
            end += 1
        if first is None or end - index < 2:
            result.append(block[index])
            index += 1
            continue
        name = next(names)
        element = first[1].value
        result.append(ast.Assign(targets=[ast.Name(name, ast.Store())], value=element))
        for statement in block[index:end]:
            target = statement.targets[0]
            target.value = ast.Name(name, ast.Load())
            result.append(statement)
        changed = True
        index = end
    return result if changed else block
