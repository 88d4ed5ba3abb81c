"""What the code generator's parts share: names of match kinds and externs, block state, generated lines."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from lark import Token

from p4switch.compiler.expressions import Expr, Scope
from p4switch.compiler.model import (
    TableSpec,
)
from p4switch.compiler.types import (
    BoolT,
)

MATCH_KINDS = ("exact", "lpm", "ternary", "range", "optional")
UNSUPPORTED_EXTERN_FUNCTIONS: dict[str, str] = {}  # name -> what it is, for the refusal
SUPPORTED_HASHES = {"crc32", "crc16", "csum16", "identity", "xor16", "random"}


@dataclass
class TableInfo:
    """What code generation knows of a table while compiling its control."""

    spec: TableSpec
    apply_function: str
    action_ids: dict[str, int]  # local action name -> aid
    apply_lines: tuple[str, ...] = ()  # the apply function's body, to inline at statement level


@dataclass
class InstanceInfo:
    """An extern instance declared in a control (counter, register, ...)."""

    type_name: str
    global_name: str
    spec: object
    type_args: tuple = ()


class Code:
    """Lines of generated Python source with indentation."""

    def __init__(self) -> None:
        """Start an empty list of lines."""
        self.lines: list[str] = []

    def add(self, indent: int, line: str) -> None:
        """Append one line at an indentation level."""
        self.lines.append("    " * indent + line)

    def text(self) -> str:
        """The source text."""
        return "\n".join(self.lines) + "\n"


class BlockContext:
    """State while generating one Python function: scope, local name counters, the block's role."""

    def __init__(self, scope: Scope, kind: str, control: str) -> None:
        """Start a block with its scope, role and owning control."""
        self.scope = scope
        self.kind = kind  # parser | control | action | state
        self.control = control
        self.counter = itertools.count()

    def temp(self, stem: str = "t") -> str:
        """A fresh Python local name."""
        return f"_{stem}{next(self.counter)}"


def int_src(expr: Expr) -> str:
    """Source of an expression as an int (bool keys become 0/1)."""
    if isinstance(expr.type, BoolT):
        return f"int({expr.src})"
    return expr.src


def expression_text(node) -> str:
    """The source text of a key/name expression as p4c writes it in P4Info (e.g. hdr.ipv4.dstAddr)."""
    if isinstance(node, Token):
        return str(node)
    kind = node.data
    if kind in ("var", "var_kw", "prefixed_non_type_name", "name", "type_name", "decl_name"):
        return expression_text(node.children[0])
    if kind.startswith("kw_"):
        return kind[3:]
    if kind in ("dot_var", "dot_name"):
        return "." + str(node.children[0])
    if kind == "member":
        return f"{expression_text(node.children[0])}.{expression_text(node.children[1])}"
    if kind == "type_member":
        return f"{expression_text(node.children[0])}.{expression_text(node.children[1])}"
    if kind == "index":
        return f"{expression_text(node.children[0])}[{expression_text(node.children[1])}]"
    if kind == "slice":
        base, high, low = (expression_text(child) for child in node.children)
        return f"{base}[{high}:{low}]"
    if kind == "call":
        args = node.children[1]
        inner = (
            ", ".join(expression_text(a) for a in args.children if a is not None) if args is not None else ""
        )
        return f"{expression_text(node.children[0])}({inner})"
    if kind == "integer":
        return str(node.children[0])
    return kind
