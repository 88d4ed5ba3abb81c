"""Calls with P4's copy-in/copy-out: arguments of actions and functions are copies, written back after.

P4_16 passes every argument by value: an ``in`` argument is copied in, an ``out``
argument starts fresh and is copied out, ``inout`` both, so writes to the original
during the call never show through a parameter, and a parameter's writes reach the
original only when the call returns (even if the argument aliases another one). Headers
and structs are passed as copies (written back with ``assign``); scalars are Python ints,
so a callee with ``out``/``inout`` scalar parameters returns their final values, after
its own result: ``(result, out1, out2, ...)``. The call is one expression (a tuple whose
last item is the result), so it works inside expressions as well as a statement.
"""

from __future__ import annotations

import re

from p4switch.compiler.expressions import Expr, ExpressionCompiler
from p4switch.compiler.types import ExternT, P4Type, StackT, StructLikeT, same_type

_NAME = re.compile(r"^[A-Za-z_]\w*$")
_ATTRIBUTE = re.compile(r"^(?P<object>.+)\.(?P<attribute>[A-Za-z_]\w*)$")


def scalar_outs(params: list[tuple[str, str | None, P4Type]]) -> list[str]:
    """Names of the out/inout parameters of scalar type: what the callee returns after its result."""
    return [name for name, direction, ptype in params if direction in ("out", "inout") and ptype.is_scalar()]


def return_tail(outs: list[str]) -> str:
    """What a callee's ``return`` adds after its result: ``, a_out1, a_out2`` (empty without outs)."""
    return "".join(f", a_{name}" for name in outs)


class CopyGen:
    """The caller's side of copy-in/copy-out."""

    def call_with_copies(
        self,
        function: str,
        params,
        args: list,
        node,
        exprs: ExpressionCompiler,
        trailing: tuple[str, ...] = (),
        leading: tuple[str, ...] = (),
    ) -> str:
        """Source of a call of `function` (an expression whose value is the callee's result)."""
        outs = scalar_outs(params)
        sources: list[str] = []
        after: list[str] = []
        result = self.copy_temp()
        for arg, (name, direction, ptype) in zip(args, params, strict=True):
            composite = isinstance(ptype, StructLikeT | StackT)
            if isinstance(ptype, ExternT):  # packet_in/packet_out: the one packet, by reference
                sources.append(exprs.compile(arg).src)
                continue
            if direction not in ("out", "inout"):
                src = self._arg_src(arg, ptype, exprs)
                sources.append(f"{src}.copy()" if composite else src)
                continue
            target = self._lvalue(arg, exprs)
            if composite:
                if not same_type(target.type, ptype):
                    raise self.fail(arg, f"type mismatch: expected {ptype}, got {target.type}")
                temp = self.copy_temp()
                start = f"{target.src}.copy()" if direction == "inout" else self.default_value_src(ptype)
                sources.append(f"({temp} := {start})")
                after.append(f"{target.src}.assign({temp})")
            else:
                if direction == "inout":
                    sources.append(exprs.coerce(exprs.compile(arg), ptype, arg).src)
                else:
                    sources.append(self.default_value_src(ptype))
                after.append(self.store_src(target, f"{result}[{1 + outs.index(name)}]", arg))
        call = f"{function}({', '.join([*leading, *sources, *trailing])})"
        if not outs and not after:
            return call
        if not outs:
            return f"({result} := {call}, {', '.join(after)}, {result})[-1]"
        return f"({result} := {call}, {', '.join(after)}, {result}[0])[-1]"

    def copy_temp(self) -> str:
        """A fresh local name for a copy or a result (unique in the module)."""
        return f"_cp{next(self._copy_temps)}"

    def store_src(self, target: Expr, value: str, node) -> str:
        """An expression that stores `value` into an assignable target (a local or an attribute)."""
        if _NAME.match(target.src):
            return f"({target.src} := {value})"
        match = _ATTRIBUTE.match(target.src)
        if match is None:
            raise self.fail(node, "this expression cannot receive an out argument")
        return f"setattr({match['object']}, {match['attribute']!r}, {value})"
