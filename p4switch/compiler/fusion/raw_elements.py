"""Raw stack elements, the fusion pass's last step: elements only extracted and emitted stay bytes.

A header stack such as a path trace is extracted element by element by the parser and
emitted again by the deparser, while the program itself only pushes new elements in
front. After scalar replacement (scalars.py) such a stack is a local list; this step
makes the parser store each extracted element as its own bytes (one slice instead of a
header object, an unpack and a write per field) and the deparser emit those bytes as
they are (instead of a read per field and a pack). Both use the same ``struct`` code,
whose unpack and pack are each other's inverse (fields cover a header's bits), so the
frame that leaves is the same.

It applies to a stack only if every use of its list in the driver is one of:

- its creation, ``items = [blank] * size``;
- an extraction, ``_h = items[n] = S()`` followed by the bounds check, the
  ``U.unpack_from(data, offset)`` of the element's struct and writes of ``_h``'s fields
  from parse temporaries (``_u*``, ``_c*``), ending in ``_h._v = True``;
- a structural change: ``items.pop()``, ``items.insert(0, blank)``, ``items.extend(...)``,
  ``del items[...]``, ``items[a:b] = [blank] * k``;
- a write access, ``e = items[i]`` then ``if e is blank: e = items[i] = S()`` (the
  element is made an object first: ``header_from_bytes``);
- the deparser's ``for _h in stored_headers(items, blank): if _h._v: out.append(U.pack(...))``;
- the state handed to a queue, ``hdr.f_x.items = items`` (the bytes made objects again).

Any other use (an element's field read, the list returned or passed on) leaves the stack
as scalars.py wrote it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field

from p4switch.compiler.fusion.ast_tools import statements

#: the runtime helper that makes a raw element a header object (p4switch.runtime.support)
FROM_BYTES = "header_from_bytes"
STRUCTURAL_METHODS = ("pop", "insert", "extend")
PARSE_TEMPORARIES = ("_u", "_c")


@dataclass
class RawStack:
    """A replaced header stack: the local holding its list, its element class and its blank."""

    items: str
    element: str
    blank: str


@dataclass
class Plan:
    """The rewrites one stack needs, found by ``plan``: the statements and expressions to change."""

    extractions: list[tuple[list[ast.stmt], int, int, ast.Assign]] = field(default_factory=list)
    writes: list[ast.If] = field(default_factory=list)
    emits: list[ast.For] = field(default_factory=list)
    spills: list[ast.Assign] = field(default_factory=list)
    struct: str | None = None


def keep_raw_elements(body: list[ast.stmt], stacks: list[RawStack]) -> list[ast.stmt]:
    """``body`` with the stacks that qualify kept as bytes between parser and deparser (in place)."""
    for stack in stacks:
        found = plan(body, stack)
        if found is not None:
            apply(found, stack)
    return body


# ----- finding the uses -------------------------------------------------------------------------
def blocks(body: list[ast.stmt]) -> Iterator[list[ast.stmt]]:
    """Every statement list of the function, nested ones included."""
    yield body
    for statement in body:
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(statement, name, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                yield from blocks(inner)
        for handler in getattr(statement, "handlers", []):
            yield from blocks(handler.body)


def is_name(node: ast.AST | None, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def names_in(node: ast.AST, name: str) -> list[ast.Name]:
    return [child for child in ast.walk(node) if is_name(child, name)]


def plan(body: list[ast.stmt], stack: RawStack) -> Plan | None:
    """The rewrites of ``stack``, or None if some use of its list is not one this step knows."""
    found = Plan()
    accounted: set[int] = set()  # ids of the Name nodes of the list that a known use covers
    for block in blocks(body):
        index = 0
        while index < len(block):
            statement = block[index]
            covered = (
                extraction(block, index, stack, found)
                or write_access(block, index, stack, found)
                or structural(statement, stack)
                or creation(statement, stack)
                or emit(statement, stack, found)
                or spill(statement, stack, found)
            )
            if covered:
                accounted.update(id(name) for name in covered)
            index += 1
    every_use = [name for statement in body for name in names_in(statement, stack.items)]
    if not every_use or any(id(name) not in accounted for name in every_use):
        return None
    if not found.extractions or not found.emits:
        return None  # nothing to gain
    if not extracted_headers_stay_local(body, found):
        return None
    return found


def extracted_headers_stay_local(body: list[ast.stmt], found: Plan) -> bool:
    """Whether each name an extraction binds its header to is used only within extractions."""
    inside: set[int] = set()
    headers: set[str] = set()
    for block, start, end, first in found.extractions:
        headers.add(first.targets[0].id)
        inside.update(id(node) for statement in block[start : end + 1] for node in ast.walk(statement))
    return all(
        id(node) in inside
        for statement in body
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and node.id in headers
    )


def creation(statement: ast.stmt, stack: RawStack) -> list[ast.Name] | None:
    """``items = [blank] * size``."""
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and is_name(statement.targets[0], stack.items)
        and not names_in(statement.value, stack.items)
    ):
        return [statement.targets[0]]
    return None


def structural(statement: ast.stmt, stack: RawStack) -> list[ast.Name] | None:
    """pop/insert/extend/del/slice assignment of the list, none of which reads an element's fields."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        if (
            isinstance(call.func, ast.Attribute)
            and is_name(call.func.value, stack.items)
            and call.func.attr in STRUCTURAL_METHODS
            and not any(names_in(argument, stack.items) for argument in call.args)
        ):
            return [call.func.value]
    if isinstance(statement, ast.Delete) and all(
        isinstance(target, ast.Subscript) and is_name(target.value, stack.items)
        for target in statement.targets
    ):
        if not any(names_in(target.slice, stack.items) for target in statement.targets):
            return [target.value for target in statement.targets]
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Subscript)
        and isinstance(statement.targets[0].slice, ast.Slice)
        and is_name(statement.targets[0].value, stack.items)
        and blank_list(statement.value, stack)
    ):
        return [statement.targets[0].value]
    return None


def blank_list(node: ast.expr, stack: RawStack) -> bool:
    """``[blank] * k``."""
    return (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mult)
        and isinstance(node.left, ast.List)
        and len(node.left.elts) == 1
        and is_name(node.left.elts[0], stack.blank)
        and not names_in(node.right, stack.items)
    )


def element_store(target: ast.expr, stack: RawStack) -> bool:
    """``items[<index without the list>]`` as a target."""
    return (
        isinstance(target, ast.Subscript)
        and is_name(target.value, stack.items)
        and not isinstance(target.slice, ast.Slice)
        and not names_in(target.slice, stack.items)
    )


def new_element(node: ast.expr, stack: RawStack) -> bool:
    """``S()`` of the stack's element class."""
    return (
        isinstance(node, ast.Call)
        and is_name(node.func, stack.element)
        and not node.args
        and not node.keywords
    )


def extraction(block: list[ast.stmt], index: int, stack: RawStack, found: Plan) -> list[ast.Name] | None:
    """``_h = items[n] = S()``, the bounds check, the unpack and the field writes up to ``_h._v = True``."""
    first = block[index]
    if not (
        isinstance(first, ast.Assign)
        and len(first.targets) == 2
        and isinstance(first.targets[0], ast.Name)
        and element_store(first.targets[1], stack)
        and new_element(first.value, stack)
    ):
        return None
    header = first.targets[0].id
    unpack_at = None
    for position in range(index + 1, len(block)):
        statement = block[position]
        if unpack_call(statement) is not None:
            unpack_at = position
            break
        if names_in(statement, header) or names_in(statement, stack.items):
            return None
        if isinstance(statement, ast.If) and not (
            statement.body and isinstance(statement.body[-1], ast.Raise)
        ):
            return None  # only bounds checks lie between the element's creation and its unpack
        if not isinstance(statement, ast.If | ast.Assign):
            return None
    if unpack_at is None:
        return None
    struct_name = unpack_call(block[unpack_at]).func.value.id
    if found.struct not in (None, struct_name):
        return None
    end = None
    for position in range(unpack_at + 1, len(block)):
        statement = block[position]
        if is_valid_set(statement, header):
            end = position
            break
        if not (
            field_write(statement, header) or temporary_write(statement) or plain_assign(statement, header)
        ):
            return None
    if end is None:
        return None
    found.struct = struct_name
    found.extractions.append((block, index, end, first))
    return [first.targets[1].value]


def unpack_call(statement: ast.stmt) -> ast.Call | None:
    """The ``U.unpack_from(data, offset)`` call of ``_u0, ... = U.unpack_from(data, offset)``."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return None
    call = statement.value
    if (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "unpack_from"
        and isinstance(call.func.value, ast.Name)
        and len(call.args) == 2
        and all(isinstance(argument, ast.Name) for argument in call.args)
    ):
        return call
    return None


def header_store(statement: ast.stmt, header: str) -> str | None:
    """The attribute of ``header`` a ``header.<attribute> = value`` statement writes, else None."""
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Attribute)
        and is_name(statement.targets[0].value, header)
    ):
        return statement.targets[0].attr
    return None


def is_valid_set(statement: ast.stmt, header: str) -> bool:
    """``_h._v = True``."""
    return (
        header_store(statement, header) == "_v"
        and isinstance(statement.value, ast.Constant)
        and statement.value.value is True
    )


def field_write(statement: ast.stmt, header: str) -> bool:
    """``_h.f_x = <expression of parse temporaries>``."""
    written = header_store(statement, header)
    return written is not None and written.startswith("f_") and reads_only_temporaries(statement.value)


def temporary_write(statement: ast.stmt) -> bool:
    """``_c = <expression of parse temporaries>``."""
    return (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id.startswith(PARSE_TEMPORARIES)
        and reads_only_temporaries(statement.value)
    )


def plain_assign(statement: ast.stmt, header: str) -> bool:
    """A statement between the field writes that the header is not part of (``pk_off = _e``)."""
    return (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and not statement.targets[0].id.startswith(PARSE_TEMPORARIES)
        and not names_in(statement, header)
    )


def reads_only_temporaries(node: ast.expr) -> bool:
    return all(
        child.id.startswith(PARSE_TEMPORARIES) for child in ast.walk(node) if isinstance(child, ast.Name)
    )


def write_access(block: list[ast.stmt], index: int, stack: RawStack, found: Plan) -> list[ast.Name] | None:
    """``e = items[i]`` then ``if e is blank: e = items[i] = S()``."""
    if index + 1 >= len(block):
        return None
    fetch, check = block[index], block[index + 1]
    if not (
        isinstance(fetch, ast.Assign)
        and len(fetch.targets) == 1
        and isinstance(fetch.targets[0], ast.Name)
        and isinstance(fetch.value, ast.Subscript)
        and is_name(fetch.value.value, stack.items)
        and not isinstance(fetch.value.slice, ast.Slice)
        and not names_in(fetch.value.slice, stack.items)
    ):
        return None
    name = fetch.targets[0].id
    if not (
        isinstance(check, ast.If)
        and not check.orelse
        and isinstance(check.test, ast.Compare)
        and is_name(check.test.left, name)
        and len(check.test.ops) == 1
        and isinstance(check.test.ops[0], ast.Is)
        and is_name(check.test.comparators[0], stack.blank)
        and len(check.body) == 1
        and isinstance(check.body[0], ast.Assign)
        and len(check.body[0].targets) == 2
        and is_name(check.body[0].targets[0], name)
        and element_store(check.body[0].targets[1], stack)
        and ast.dump(check.body[0].targets[1].slice) == ast.dump(fetch.value.slice)
        and new_element(check.body[0].value, stack)
    ):
        return None
    found.writes.append(check)
    return [fetch.value.value, check.body[0].targets[1].value]


def emit(statement: ast.stmt, stack: RawStack, found: Plan) -> list[ast.Name] | None:
    """``for _h in stored_headers(items, blank): if _h._v: out.append(U.pack(...))``."""
    if not (
        isinstance(statement, ast.For)
        and isinstance(statement.target, ast.Name)
        and isinstance(statement.iter, ast.Call)
        and is_name(statement.iter.func, "stored_headers")
        and len(statement.iter.args) == 2
        and is_name(statement.iter.args[0], stack.items)
        and is_name(statement.iter.args[1], stack.blank)
        and not statement.orelse
        and len(statement.body) == 1
    ):
        return None
    header, check = statement.target.id, statement.body[0]
    if not (
        isinstance(check, ast.If)
        and not check.orelse
        and isinstance(check.test, ast.Attribute)
        and is_name(check.test.value, header)
        and check.test.attr == "_v"
        and len(check.body) == 1
    ):
        return None
    append = appended(check.body[0])
    if append is None:
        return None
    packed = append.args[0]
    if not (
        isinstance(packed, ast.Call)
        and isinstance(packed.func, ast.Attribute)
        and packed.func.attr == "pack"
        and isinstance(packed.func.value, ast.Name)
    ):
        return None
    if found.struct not in (None, packed.func.value.id):
        return None
    found.struct = packed.func.value.id
    found.emits.append(statement)
    return [statement.iter.args[0]]


def appended(statement: ast.stmt) -> ast.Call | None:
    """The ``out.append(x)`` call of a statement that is one."""
    if (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Attribute)
        and statement.value.func.attr == "append"
        and isinstance(statement.value.func.value, ast.Name)
        and len(statement.value.args) == 1
        and not statement.value.keywords
    ):
        return statement.value
    return None


def spill(statement: ast.stmt, stack: RawStack, found: Plan) -> list[ast.Name] | None:
    """``hdr.f_x.items = items`` when the state is rebuilt for a queue."""
    if (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Attribute)
        and statement.targets[0].attr == "items"
        and is_name(statement.value, stack.items)
    ):
        found.spills.append(statement)
        return [statement.value]
    return None


# ----- the rewrite ------------------------------------------------------------------------------
def raw_class_test(name: str) -> ast.expr:
    """``name.__class__ is bytes``."""
    return ast.parse(f"{name}.__class__ is bytes", mode="eval").body


def apply(found: Plan, stack: RawStack) -> None:
    """Rewrite the uses ``plan`` found (the statements are changed in place, last first per block)."""
    for block, start, end, first in sorted(found.extractions, key=lambda item: -item[1]):
        block[start : end + 1] = raw_extraction(block[start + 1 : end + 1], first, stack)
    for check in found.writes:
        name = check.test.left.id
        target = ast.unparse(check.body[0].targets[1])
        check.orelse = statements(
            f"if {name}.__class__ is bytes:\n    {name} = {target} = {FROM_BYTES}({stack.element}, {name})"
        )
    for loop in found.emits:
        header = loop.target.id
        check = loop.body[0]
        out = appended(check.body[0]).func.value.id
        loop.body = [
            ast.If(
                test=raw_class_test(header),
                body=statements(f"{out}.append({header})"),
                orelse=[check],
            )
        ]
    for statement in found.spills:
        statement.value = ast.parse(
            f"[{FROM_BYTES}({stack.element}, _x) if _x.__class__ is bytes else _x for _x in {stack.items}]",
            mode="eval",
        ).body


def raw_extraction(after: list[ast.stmt], first: ast.Assign, stack: RawStack) -> list[ast.stmt]:
    """The statements of one extraction with the element stored as its bytes.

    Up to the unpack they stay (a bounds check that fails stores a new, invalid element
    first, as the plain code did); the unpack and the field writes become one slice.
    """
    element = ast.unparse(first.targets[1])
    out: list[ast.stmt] = []
    for position, statement in enumerate(after):
        call = unpack_call(statement)
        if call is not None:
            data, offset = (argument.id for argument in call.args)
            struct_name = call.func.value.id
            out.extend(statements(f"{element} = {data}[{offset}:{offset} + {struct_name}.size]"))
            out.extend(s for s in after[position + 1 :] if plain_assign(s, first.targets[0].id))
            return out
        if isinstance(statement, ast.If):
            statement.body[:0] = statements(f"{element} = {stack.element}()")
        out.append(statement)
    raise AssertionError("plan() found the unpack")  # pragma: no cover
