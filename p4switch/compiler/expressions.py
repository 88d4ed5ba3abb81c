"""Typed translation of P4 expressions to Python source, with P4's width, wrap-around and cast rules.

Every P4 expression becomes one Python expression over plain ints and bools:
bit<W> values stay in [0, 2**W), int<W> values in the signed range, so arithmetic
only masks where the operator can leave the range. Constant operands are folded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lark import Token, Tree

from p4switch.compiler.types import (
    BitT,
    BoolT,
    EnumT,
    ErrorT,
    ExternT,
    InfIntT,
    IntT,
    P4Type,
    StackT,
    StringT,
    StructLikeT,
    TupleT,
    mask,
)


@dataclass
class Expr:
    """A translated expression: Python source, P4 type, constant value if known, extra data by kind."""

    src: str
    type: P4Type | None
    const: Any = None
    items: list | dict | None = None  # list/struct initializer elements
    kind: str = "value"  # value | table_result | method | block | action | instance | packet
    info: Any = None


READ_ONLY = "read-only"  # Binding.info of `in` and directionless parameters


@dataclass
class Binding:
    """What a name means in a scope."""

    kind: str  # var | const | action | table | instance | packet_in | packet_out
    src: str
    type: P4Type | None = None
    info: Any = None


@dataclass
class Scope:
    """Nested name scopes of one block of generated code."""

    names: dict[str, Binding] = field(default_factory=dict)
    parent: Scope | None = None
    in_parser: bool = False

    def lookup(self, name: str) -> Binding | None:
        """The innermost binding of name."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None

    def child(self) -> Scope:
        """A nested scope."""
        return Scope({}, self, self.in_parser)


def wrap(value: int, type_: P4Type) -> int:
    """Value reduced to the range of a fixed-width type."""
    if isinstance(type_, BitT):
        return value & mask(type_.width)
    if isinstance(type_, IntT):
        half = 1 << (type_.width - 1)
        return ((value + half) & mask(type_.width)) - half
    return value


def wrap_src(src: str, type_: P4Type) -> str:
    """Python source reducing src to the range of a fixed-width type."""
    if isinstance(type_, BitT):
        return f"(({src}) & {mask(type_.width)})"
    if isinstance(type_, IntT):
        half = 1 << (type_.width - 1)
        return f"(((({src}) + {half}) & {mask(type_.width)}) - {half})"
    return src


_ARITH = {"op_add": "+", "op_sub": "-", "op_mul": "*"}
_BITWISE = {"op_band": "&", "op_bor": "|", "op_bxor": "^"}
_COMPARE = {"op_eq": "==", "op_ne": "!=", "op_lt": "<", "op_gt": ">", "op_le": "<=", "op_ge": ">="}


def py_literal(value: Any) -> str:
    """Python source of a constant."""
    return repr(value)


class ExpressionCompiler:
    """Translates expression subtrees in one scope; `front` supplies errors, types and declarations."""

    def __init__(self, front, scope: Scope | None, for_write: bool = False) -> None:
        """Translate expressions of one scope; `front` gives errors, types and declarations.

        With `for_write`, header stack elements on the path are made writable (`HeaderStack.w`):
        use it for anything that is assigned, modified or passed on by reference.
        """
        self.front = front
        self.scope = scope
        self.for_write = for_write

    def fail(self, node, message: str):
        """A compile error at node."""
        return self.front.fail(node, message)

    # ---------------------------------------------------------------- entry points
    def compile(self, node, expected: P4Type | None = None) -> Expr:
        """Translate node; with `expected`, untyped literals take that type and the type must match."""
        expr = self._compile(node)
        if expected is not None:
            expr = self.coerce(expr, expected, node)
        return expr

    def coerce(self, expr: Expr, expected: P4Type, node) -> Expr:
        """expr as a value of type expected (implicit casts of untyped integer literals only)."""
        if expr.kind != "value":
            raise self.fail(node, "expected a value")
        if expr.items is not None:
            return expr  # initializers are checked where they are assigned
        if expr.type == expected or expr.type is expected:
            return expr
        if isinstance(expr.type, InfIntT) and isinstance(expected, BitT | IntT | InfIntT):
            if expr.const is None:
                raise self.fail(node, f"cannot use an untyped integer expression as {expected}")
            value = wrap(expr.const, expected)
            return Expr(py_literal(value), expected, value)
        if isinstance(expr.type, InfIntT) and isinstance(expected, EnumT) and expected.underlying is not None:
            raise self.fail(node, f"cannot use an integer as {expected} without a cast")
        raise self.fail(node, f"type mismatch: expected {expected}, got {expr.type}")

    # ---------------------------------------------------------------- dispatch
    def _compile(self, node) -> Expr:
        """Dispatch on the node kind."""
        if isinstance(node, Token):
            raise self.fail(node, f"unexpected token {node!s}")
        handler = getattr(self, "_e_" + node.data, None)
        if handler is None:
            raise self.fail(node, f"unsupported expression construct '{node.data}'")
        return handler(node)

    # ---------------------------------------------------------------- literals and names
    def _e_integer(self, node: Tree) -> Expr:
        """Expression node 'integer'."""
        from p4switch.compiler.ir import parse_integer

        value, width, signed = parse_integer(str(node.children[0]))
        if width is None:
            return Expr(py_literal(value), InfIntT(), value)
        if width <= 0 or (signed and width < 2):
            raise self.fail(node, f"invalid width in integer literal {node.children[0]}")
        type_ = IntT(width) if signed else BitT(width)
        value = wrap(value, type_)
        return Expr(py_literal(value), type_, value)

    def _e_true_lit(self, node: Tree) -> Expr:
        """Expression node 'true_lit'."""
        return Expr("True", BoolT(), True)

    def _e_false_lit(self, node: Tree) -> Expr:
        """Expression node 'false_lit'."""
        return Expr("False", BoolT(), False)

    def _e_string_lit(self, node: Tree) -> Expr:
        """Expression node 'string_lit'."""
        text = str(node.children[0])[1:-1]
        return Expr(repr(text), StringT(), text)

    def _e_var(self, node: Tree) -> Expr:
        """Expression node 'var'."""
        return self.name_expr(self.front.name_of(node.children[0]), node)

    def _e_var_kw(self, node: Tree) -> Expr:
        """Expression node 'var_kw'."""
        return self.name_expr(self.front.name_of(node.children[0]), node)

    def _e_dot_var(self, node: Tree) -> Expr:
        """Expression node 'dot_var'."""
        return self.name_expr(str(node.children[0]), node, top_level=True)

    def _e_prefixed_non_type_name(self, node: Tree) -> Expr:
        """Expression node 'prefixed_non_type_name'."""
        return self.name_expr(self.front.name_of(node.children[0]), node)

    def _e_dot_name(self, node: Tree) -> Expr:
        """Expression node 'dot_name'."""
        return self.name_expr(str(node.children[0]), node, top_level=True)

    def name_expr(self, name: str, node, top_level: bool = False) -> Expr:
        """The meaning of a plain name."""
        binding = None if (self.scope is None or top_level) else self.scope.lookup(name)
        if binding is not None:
            if binding.kind == "const":
                return Expr(py_literal(binding.info), binding.type, binding.info)
            if self.for_write and binding.info == READ_ONLY:
                raise self.fail(node, f"{name} is an `in` (read-only) parameter and cannot be modified")
            kind = "value" if binding.kind == "var" else binding.kind
            return Expr(binding.src, binding.type, kind=kind, info=binding.info)
        ir = self.front.ir
        if name in ir.constants:
            const = ir.constants[name]
            return Expr(py_literal(const.value), const.type, const.value)
        if name in ir.actions:
            return Expr("", None, kind="action", info=("global", name))
        if name in ir.extern_functions:
            return Expr("", None, kind="extern_function", info=name)
        if name in ir.functions:
            return Expr("", None, kind="function", info=name)
        raise self.fail(node, f"unknown name {name}")

    def _e_type_member(self, node: Tree) -> Expr:
        """Expression node 'type_member'."""
        type_ = self.front.resolve_type(node.children[0])
        member = self.front.name_of(node.children[1])
        if isinstance(type_, EnumT):
            if member not in type_.members:
                raise self.fail(node, f"{type_} has no member {member}")
            value = type_.members[member]
            return Expr(py_literal(value), type_, value, info=member)
        raise self.fail(node, f"unsupported member access {type_}.{member}")

    def _e_error_member(self, node: Tree) -> Expr:
        """Expression node 'error_member'."""
        member = self.front.name_of(node.children[0])
        codes = self.front.ir.errors
        if member not in codes:
            raise self.fail(node, f"unknown error {member}")
        return Expr(py_literal(codes[member]), ErrorT(), codes[member], info=member)

    # ---------------------------------------------------------------- structure access
    def _e_member(self, node: Tree) -> Expr:
        """Expression node 'member'."""
        base = self._compile(node.children[0])
        member = self.front.name_of(node.children[1])
        type_ = base.type
        if base.kind == "table_result":
            if member == "hit":
                return Expr(f"{base.src}.hit", BoolT())
            if member == "miss":
                return Expr(f"(not {base.src}.hit)", BoolT())
            if member == "action_run":
                return Expr(f"{base.src}.aid", None, kind="action_run", info=base.info)
            raise self.fail(node, f"table apply result has no member {member}")
        if base.kind != "value":
            return Expr(base.src, None, kind="method", info=(base, member))
        if isinstance(type_, StructLikeT):
            ftype = type_.field_type(member)
            if ftype is None:
                if (type_.kind == "header" and member in ("isValid", "setValid", "setInvalid")) or (
                    type_.kind == "header_union" and member == "isValid"
                ):
                    return Expr(base.src, None, kind="method", info=(base, member))
                raise self.fail(node, f"{type_.kind} {type_.name} has no field {member}")
            return Expr(f"{base.src}.f_{member}", ftype)
        if isinstance(type_, StackT):
            element = type_.element
            sooob = self.front.ir.errors.get("StackOutOfBounds", 0)
            if member == "next":
                if self.scope is None or not self.scope.in_parser:
                    raise self.fail(node, "header stack .next may only be used in parsers")
                access = "next_w" if self.for_write else "next_element"
                return Expr(f"{base.src}.{access}({sooob})", element, info=("stack_next", base))
            if member == "last":
                return Expr(f"{base.src}.{'last_w' if self.for_write else 'last'}({sooob})", element)
            if member == "lastIndex":
                return Expr(f"(({base.src}.nxt - 1) & 4294967295)", BitT(32))
            if member == "size":
                return Expr(str(type_.size), BitT(32), type_.size)
            if member in ("push_front", "pop_front"):
                return Expr(base.src, None, kind="method", info=(base, member))
            raise self.fail(node, f"header stack has no member {member}")
        raise self.fail(node, f"cannot access member {member} of a value of type {type_}")

    def _e_index(self, node: Tree) -> Expr:
        """Expression node 'index'."""
        base = self._compile(node.children[0])
        if not isinstance(base.type, StackT):
            raise self.fail(node, "indexing is only supported on header stacks")
        index = self._compile(node.children[1])
        if index.const is not None:
            if not 0 <= index.const < base.type.size:
                raise self.fail(
                    node, f"index {index.const} out of bounds of a stack of size {base.type.size}"
                )
            if self.for_write:
                return Expr(f"{base.src}.w({index.const})", base.type.element)
            return Expr(f"{base.src}.items[{index.const}]", base.type.element)
        if not isinstance(index.type, BitT | IntT):
            raise self.fail(node, "stack index must be an integer")
        if self.for_write:
            return Expr(f"{base.src}.w({index.src})", base.type.element)
        return Expr(f"{base.src}.items[{index.src}]", base.type.element)

    def _e_slice(self, node: Tree) -> Expr:
        """Expression node 'slice'."""
        base = self._compile(node.children[0])
        high = self.front.constant_int(node.children[1])
        low = self.front.constant_int(node.children[2])
        if not isinstance(base.type, BitT | IntT):
            raise self.fail(node, f"slices need a bit<W> or int<W> operand, got {base.type}")
        if not (0 <= low <= high < base.type.width):
            raise self.fail(node, f"slice [{high}:{low}] out of range for {base.type}")
        width = high - low + 1
        result = BitT(width)
        if base.const is not None:
            value = (base.const >> low) & mask(width)
            return Expr(py_literal(value), result, value)
        shifted = f"({base.src} >> {low})" if low else base.src
        if low == 0 and high == base.type.width - 1 and isinstance(base.type, BitT):
            return Expr(base.src, result)
        return Expr(f"({shifted} & {mask(width)})", result)

    # ---------------------------------------------------------------- operators
    def unify(self, left: Expr, right: Expr, node) -> tuple[Expr, Expr, P4Type]:
        """Give untyped literals the other operand's type; both operands must then have the same type."""
        if isinstance(left.type, InfIntT) and not isinstance(right.type, InfIntT):
            left = self.coerce(left, right.type, node)
        elif isinstance(right.type, InfIntT) and not isinstance(left.type, InfIntT):
            right = self.coerce(right, left.type, node)
        if left.type != right.type and left.type is not right.type:
            raise self.fail(node, f"operands have different types: {left.type} and {right.type}")
        return left, right, left.type

    def _numeric(self, expr: Expr, node, what: str) -> None:
        """Raise unless the operand is an integer."""
        if not isinstance(expr.type, BitT | IntT | InfIntT):
            raise self.fail(node, f"{what} needs integer operands, got {expr.type}")

    def _binary(self, node: Tree) -> tuple[Expr, Expr]:
        """Both operands of a binary operator."""
        return self._compile(node.children[0]), self._compile(node.children[1])

    def _arith(self, node: Tree, op: str) -> Expr:
        """+, - and *: same width on both sides, result wrapped to it."""
        left, right = self._binary(node)
        self._numeric(left, node, op)
        self._numeric(right, node, op)
        left, right, type_ = self.unify(left, right, node)
        if left.const is not None and right.const is not None:
            value = wrap(eval(f"{left.const} {op} {right.const}"), type_)  # noqa: S307 - ints only
            return Expr(py_literal(value), type_, value)
        return Expr(wrap_src(f"{left.src} {op} {right.src}", type_), type_)

    def _e_op_add(self, node: Tree) -> Expr:
        """Operator `a + b`, wrapping to the width."""
        return self._arith(node, "+")

    def _e_op_sub(self, node: Tree) -> Expr:
        """Operator `a - b`, wrapping to the width."""
        return self._arith(node, "-")

    def _e_op_mul(self, node: Tree) -> Expr:
        """Operator `a * b`, wrapping to the width."""
        return self._arith(node, "*")

    def _divmod(self, node: Tree, op: str) -> Expr:
        """/ and %: bit<W> (or untyped) operands only."""
        left, right = self._binary(node)
        self._numeric(left, node, op)
        self._numeric(right, node, op)
        left, right, type_ = self.unify(left, right, node)
        if isinstance(type_, IntT):
            raise self.fail(node, f"'{op}' is not defined on signed int<W> values")
        if right.const == 0:
            raise self.fail(node, "division by zero")
        pyop = "//" if op == "/" else "%"
        if left.const is not None and right.const is not None:
            value = eval(f"{left.const} {pyop} {right.const}")  # noqa: S307 - ints only
            return Expr(py_literal(value), type_, value)
        return Expr(f"({left.src} {pyop} {right.src})", type_)

    def _e_op_div(self, node: Tree) -> Expr:
        """Operator `a / b` (bit<W> only)."""
        return self._divmod(node, "/")

    def _e_op_mod(self, node: Tree) -> Expr:
        """Operator `a % b` (bit<W> only)."""
        return self._divmod(node, "%")

    def _saturating(self, node: Tree, add: bool) -> Expr:
        """|+| and |-|: clamp to the type's range."""
        left, right = self._binary(node)
        left, right, type_ = self.unify(left, right, node)
        if not isinstance(type_, BitT | IntT):
            raise self.fail(node, "saturating arithmetic needs bit<W> or int<W> operands")
        if isinstance(type_, BitT):
            low, high = 0, mask(type_.width)
        else:
            low, high = -(1 << (type_.width - 1)), (1 << (type_.width - 1)) - 1
        op = "+" if add else "-"
        return Expr(f"min(max({left.src} {op} {right.src}, {low}), {high})", type_)

    def _e_op_addsat(self, node: Tree) -> Expr:
        """Operator `a |+| b`, saturating."""
        return self._saturating(node, True)

    def _e_op_subsat(self, node: Tree) -> Expr:
        """Operator `a |-| b`, saturating."""
        return self._saturating(node, False)

    def _bitwise(self, node: Tree, op: str) -> Expr:
        """&, | and ^ on operands of one type."""
        left, right = self._binary(node)
        self._numeric(left, node, op)
        self._numeric(right, node, op)
        left, right, type_ = self.unify(left, right, node)
        if left.const is not None and right.const is not None:
            value = wrap(eval(f"{left.const} {op} {right.const}"), type_)  # noqa: S307 - ints only
            return Expr(py_literal(value), type_, value)
        return Expr(f"({left.src} {op} {right.src})", type_)

    def _e_op_band(self, node: Tree) -> Expr:
        """Operator `a & b`."""
        return self._bitwise(node, "&")

    def _e_op_bor(self, node: Tree) -> Expr:
        """Operator `a | b`."""
        return self._bitwise(node, "|")

    def _e_op_bxor(self, node: Tree) -> Expr:
        """Operator `a ^ b`."""
        return self._bitwise(node, "^")

    def _shift(self, node: Tree, op: str) -> Expr:
        """<< and >>: unsigned shift amount; << wraps to the width."""
        left, right = self._binary(node)
        self._numeric(left, node, op)
        if isinstance(right.type, IntT) or (right.const is not None and right.const < 0):
            raise self.fail(node, "shift amounts must be unsigned")
        self._numeric(right, node, op)
        type_ = left.type
        if isinstance(type_, InfIntT) and left.const is None:
            raise self.fail(node, "shift of an untyped value needs a constant")
        if left.const is not None and right.const is not None:
            value = wrap(left.const << right.const if op == "<<" else left.const >> right.const, type_)
            return Expr(py_literal(value), type_, value)
        if op == "<<":
            return Expr(wrap_src(f"{left.src} << {right.src}", type_), type_)
        return Expr(f"({left.src} >> {right.src})", type_)

    def _e_op_shl(self, node: Tree) -> Expr:
        """Operator `a << b`, wrapping to the width."""
        return self._shift(node, "<<")

    def _e_op_shr(self, node: Tree) -> Expr:
        """Operator `a >> b` (arithmetic for int<W>)."""
        return self._shift(node, ">>")

    def _e_op_concat(self, node: Tree) -> Expr:
        """Operator `a ++ b`."""
        left, right = self._binary(node)
        for side in (left, right):
            if not isinstance(side.type, BitT | IntT):
                raise self.fail(node, f"'++' needs bit<W> or int<W> operands, got {side.type}")
        width = left.type.width + right.type.width
        type_ = IntT(width) if isinstance(left.type, IntT) else BitT(width)
        low = right.src if isinstance(right.type, BitT) else f"({right.src} & {mask(right.type.width)})"
        high = left.src if isinstance(left.type, BitT) else f"({left.src} & {mask(left.type.width)})"
        if left.const is not None and right.const is not None:
            value = wrap(
                ((left.const & mask(left.type.width)) << right.type.width)
                | (right.const & mask(right.type.width)),
                type_,
            )
            return Expr(py_literal(value), type_, value)
        src = f"(({high} << {right.type.width}) | {low})"
        if isinstance(type_, IntT):
            src = wrap_src(src, type_)
        return Expr(src, type_)

    def _compare(self, node: Tree, op: str) -> Expr:
        """Comparisons: == and != on any scalar, ordering on integers."""
        left, right = self._binary(node)
        left, right, type_ = self.unify(left, right, node)
        if op not in ("==", "!=") and not isinstance(type_, BitT | IntT | InfIntT):
            raise self.fail(node, f"'{op}' needs integer operands, got {type_}")
        if isinstance(type_, StructLikeT | StackT) and op in ("==", "!="):
            same = f"(lambda _x, _y: {composite_equal_src(type_, '_x', '_y')})({left.src}, {right.src})"
            return Expr(same if op == "==" else f"(not {same})", BoolT())
        if not type_.is_scalar():
            raise self.fail(node, f"comparison of {type_} values is not supported")
        if left.const is not None and right.const is not None:
            value = bool(eval(f"{left.const!r} {op} {right.const!r}"))  # noqa: S307 - constants only
            return Expr(py_literal(value), BoolT(), value)
        return Expr(f"({left.src} {op} {right.src})", BoolT())

    def _e_op_eq(self, node: Tree) -> Expr:
        """Operator `a == b`."""
        return self._compare(node, "==")

    def _e_op_ne(self, node: Tree) -> Expr:
        """Operator `a != b`."""
        return self._compare(node, "!=")

    def _e_op_lt(self, node: Tree) -> Expr:
        """Operator `a < b`."""
        return self._compare(node, "<")

    def _e_op_gt(self, node: Tree) -> Expr:
        """Operator `a > b`."""
        return self._compare(node, ">")

    def _e_op_le(self, node: Tree) -> Expr:
        """Operator `a <= b`."""
        return self._compare(node, "<=")

    def _e_op_ge(self, node: Tree) -> Expr:
        """Operator `a >= b`."""
        return self._compare(node, ">=")

    def _logical(self, node: Tree, op: str) -> Expr:
        """&& and || on bools."""
        left, right = self._binary(node)
        for side in (left, right):
            if not isinstance(side.type, BoolT):
                raise self.fail(
                    node, f"'{'&&' if op == 'and' else '||'}' needs bool operands, got {side.type}"
                )
        if left.const is not None and right.const is not None:
            value = (left.const and right.const) if op == "and" else (left.const or right.const)
            return Expr(py_literal(value), BoolT(), value)
        return Expr(f"({left.src} {op} {right.src})", BoolT())

    def _e_op_land(self, node: Tree) -> Expr:
        """Operator `a && b`."""
        return self._logical(node, "and")

    def _e_op_lor(self, node: Tree) -> Expr:
        """Operator `a || b`."""
        return self._logical(node, "or")

    def _e_op_not(self, node: Tree) -> Expr:
        """Operator `!a`."""
        operand = self._compile(node.children[0])
        if not isinstance(operand.type, BoolT):
            raise self.fail(node, f"'!' needs a bool operand, got {operand.type}")
        if operand.const is not None:
            return Expr(py_literal(not operand.const), BoolT(), not operand.const)
        return Expr(f"(not {operand.src})", BoolT())

    def _e_op_cpl(self, node: Tree) -> Expr:
        """Operator `~a`."""
        operand = self._compile(node.children[0])
        type_ = operand.type
        if not isinstance(type_, BitT | IntT):
            raise self.fail(node, f"'~' needs a bit<W> or int<W> operand, got {type_}")
        if operand.const is not None:
            value = wrap(~operand.const, type_)
            return Expr(py_literal(value), type_, value)
        if isinstance(type_, BitT):
            return Expr(f"({operand.src} ^ {mask(type_.width)})", type_)
        return Expr(f"(~{operand.src})", type_)

    def _e_op_neg(self, node: Tree) -> Expr:
        """Operator `-a`, wrapping to the width."""
        operand = self._compile(node.children[0])
        self._numeric(operand, node, "unary '-'")
        if operand.const is not None:
            value = wrap(-operand.const, operand.type)
            return Expr(py_literal(value), operand.type, value)
        return Expr(wrap_src(f"-{operand.src}", operand.type), operand.type)

    def _e_op_pos(self, node: Tree) -> Expr:
        """Operator `+a`."""
        operand = self._compile(node.children[0])
        self._numeric(operand, node, "unary '+'")
        return operand

    def _e_conditional(self, node: Tree) -> Expr:
        """Expression node 'conditional'."""
        cond = self._compile(node.children[0])
        if not isinstance(cond.type, BoolT):
            raise self.fail(node, f"condition must be bool, got {cond.type}")
        then = self._compile(node.children[1])
        other = self._compile(node.children[2])
        then, other, type_ = self.unify(then, other, node)
        if cond.const is not None:
            return then if cond.const else other
        if isinstance(type_, InfIntT):
            raise self.fail(node, "both branches of ?: are untyped integers; give one a width")
        return Expr(f"({then.src} if {cond.src} else {other.src})", type_)

    def _e_cast(self, node: Tree) -> Expr:
        """Expression node 'cast'."""
        target = self.front.resolve_type(node.children[0])
        operand = self._compile(node.children[1])
        return self.cast(operand, target, node)

    def cast(self, operand: Expr, target: P4Type, node) -> Expr:
        """An explicit cast (P4 specification, section on explicit casts)."""
        source = operand.type
        if source == target or source is target:
            return operand
        if isinstance(source, EnumT) and source.underlying is not None and not isinstance(target, EnumT):
            return self.cast(Expr(operand.src, source.underlying, operand.const), target, node)
        self._check_cast(source, target, node)
        if operand.const is not None:
            value = operand.const
            if isinstance(target, BoolT):
                value = bool(value)
            elif isinstance(target, BitT | IntT):
                value = wrap(int(value), target)
            return Expr(py_literal(value), target, value)
        if isinstance(target, BoolT):
            return Expr(f"({operand.src} == 1)", target)
        if isinstance(source, BoolT):
            return Expr(f"int({operand.src})", target)
        if isinstance(target, EnumT):
            return Expr(operand.src, target)
        if isinstance(target, BitT):
            if isinstance(source, BitT) and target.width >= source.width:
                return Expr(operand.src, target)
            return Expr(f"({operand.src} & {mask(target.width)})", target)
        return Expr(wrap_src(operand.src, target), target)

    def _check_cast(self, source: P4Type, target: P4Type, node) -> None:
        """Raise unless P4 allows casting source to target (strict: as p4c does)."""
        strict = self.front.strict
        allowed = False
        hint = ""
        if isinstance(target, BoolT):
            allowed = isinstance(source, BitT) and source.width == 1
            hint = " (only bit<1> can be)"
        elif isinstance(target, BitT):
            if isinstance(source, BoolT):
                allowed = target.width == 1
            elif isinstance(source, BitT | InfIntT):
                allowed = True
            elif isinstance(source, IntT):
                allowed = source.width == target.width or not strict
                hint = f"; cast to bit<{source.width}> first"
        elif isinstance(target, IntT):
            if isinstance(source, IntT | InfIntT):
                allowed = True
            elif isinstance(source, BitT):
                allowed = source.width == target.width or not strict
                hint = f"; cast to int<{source.width}> first"
        elif isinstance(target, EnumT) and target.underlying is not None:
            allowed = source == target.underlying or isinstance(source, InfIntT)
        if not allowed:
            raise self.fail(node, f"cannot cast {source} to {target}{hint}")

    # ---------------------------------------------------------------- initializers
    def _e_list_expression(self, node: Tree) -> Expr:
        """Expression node 'list_expression'."""
        elements = [] if node.children[0] is None else [self._compile(c) for c in node.children[0].children]
        return Expr("", TupleT([e.type for e in elements]), items=elements)

    def _e_struct_expression(self, node: Tree) -> Expr:
        """Expression node 'struct_expression'."""
        fields = {}
        for pair in node.children:
            fields[self.front.name_of(pair.children[0])] = (self._compile(pair.children[1]), pair.children[1])
        return Expr("", None, items=fields)

    # ---------------------------------------------------------------- calls with values
    def _e_call(self, node: Tree) -> Expr:
        """Expression node 'call'."""
        callee = self._compile(node.children[0])
        args = [] if node.children[1] is None else [a for a in node.children[1].children if a is not None]
        if callee.kind == "method":
            base, method = callee.info
            if method == "isValid" and isinstance(base.type, StructLikeT):
                self._no_args(args, node, "isValid")
                if base.type.kind == "header_union":  # valid when one of its headers is
                    members = " or ".join(f"{base.src}.f_{name}._v" for name, _ in base.type.fields)
                    return Expr(f"({members})", BoolT())
                return Expr(f"{base.src}._v", BoolT())
            if base.kind == "table" and method == "apply":
                self._no_args(args, node, "apply")
                self.front.note_table_apply(base.info, node)
                return Expr(f"{base.info.apply_function}(L)", None, kind="table_result", info=base.info)
            if base.kind == "packet_in" and method == "length":
                return Expr("(pk.n * 8)", BitT(32))
        handler = getattr(self.front, "call_expression", None)
        if handler is not None:
            result = handler(self, callee, args, node)
            if result is not None:
                return result
        raise self.fail(node, "this call is not supported in an expression (call it as a statement)")

    def _e_generic_call(self, node: Tree) -> Expr:
        """Expression node 'generic_call'."""
        callee = self._compile(node.children[0])
        type_args = [self.front.resolve_type(t) for t in node.children[1].children]
        args = [] if node.children[2] is None else [a for a in node.children[2].children if a is not None]
        if callee.kind == "method" and callee.info[1] == "lookahead" and callee.info[0].kind == "packet_in":
            self._no_args(args, node, "lookahead")
            (target,) = type_args
            too_short = self.front.ir.errors.get("PacketTooShort", 1)
            if isinstance(target, BitT):
                return Expr(f"pk.peek({target.width}, {too_short})", target)
            if isinstance(target, StructLikeT) and target.kind == "header":
                return Expr(f"{self.front.class_name(target)}.lookahead(pk, {too_short})", target)
            raise self.fail(node, f"lookahead<{target}> is not supported (bit<W> or a header type)")
        raise self.fail(node, "generic calls other than packet.lookahead<T>() are not supported")

    def _e_constructor_call(self, node: Tree) -> Expr:
        """Expression node 'constructor_call'."""
        raise self.fail(
            node, "constructor calls are only supported in instantiations and the V1Switch package"
        )

    def _no_args(self, args: list, node, what: str) -> None:
        """Raise if a method that takes no arguments got some."""
        if args:
            raise self.fail(node, f"{what}() takes no arguments")

    def _e_named_argument(self, node: Tree) -> Expr:
        """Expression node 'named_argument'."""
        raise self.fail(node, "named arguments are not supported")

    def _e_dont_care_argument(self, node: Tree) -> Expr:
        """Expression node 'dont_care_argument'."""
        raise self.fail(node, "'_' arguments are not supported")


__all__ = ["Binding", "Expr", "ExpressionCompiler", "ExternT", "Scope", "wrap", "wrap_src"]


def composite_equal_src(type_: P4Type, a: str, b: str) -> str:
    """Source of P4's == on two headers, structs, unions or stacks (`a`, `b`: sources read once each).

    Headers are equal when both are invalid, or both valid with equal fields; structs,
    unions and stacks when all their members are.
    """
    if isinstance(type_, StackT):
        element = type_.element
        pairs = [(f"{a}.items[{i}]", f"{b}.items[{i}]") for i in range(type_.size)]
        items = [composite_equal_src(element, x, y) for x, y in pairs]
        return "(" + " and ".join(items) + ")"
    if isinstance(type_, StructLikeT):
        fields = [composite_equal_src(t, f"{a}.f_{name}", f"{b}.f_{name}") for name, t in type_.fields]
        if type_.kind == "header":
            return f"({a}._v == {b}._v and (not {a}._v or {' and '.join(fields) or 'True'}))"
        return "(" + (" and ".join(fields) or "True") + ")"
    return f"({a} == {b})"
