"""v1model's ``digest<T>(receiver, data)``: the call, and the digest's description for P4Info.

As simple_switch does it, a call records the digest in the standard metadata object
(``_sm._digest``; a later call of the same packet replaces it) and the end of ingress hands
it to the pipeline's digest engine (p4switch.runtime.digests), also for a packet that is
dropped. The data is copied at the call (P4's ``in`` direction), flattened to a tuple of
scalars: a struct's members in order, a header as its validity then its fields. The
digest is named after its type, as p4c names it in P4Info; T must be a struct or header
whose members are scalars, structs or headers.
"""

from __future__ import annotations

from p4switch.compiler.expressions import ExpressionCompiler
from p4switch.compiler.model import DigestSpec
from p4switch.compiler.types import BitT, BoolT, EnumT, IntT, StructLikeT

DIGEST_RECORD = "_digest"


class DigestGen:
    """Code generation of digest calls."""

    def _digest_call(self, args, node, exprs: ExpressionCompiler, ctx, indent: int, type_arg=None) -> None:
        """``digest(receiver, data)`` (optionally ``digest<T>``): copy the data into ``_sm._digest``."""
        if len(args) != 2:
            raise self.fail(node, "digest(receiver, data) takes two arguments")
        if ctx.kind in ("state", "parser") or self.current_role not in ("", "ingress"):
            raise self.fail(
                node, "digest is only possible in the ingress control (simple_switch learns there)"
            )
        exprs.compile(args[0], expected=BitT(32))  # the receiver: simple_switch ignores it
        data_type = type_arg
        if data_type is None:
            data = exprs.compile(args[1])
            if data.items is not None:
                raise self.fail(
                    args[1],
                    "digest data given as a list needs its struct type: digest<T>(receiver, {...})",
                )
            data_type = data.type
        if not (isinstance(data_type, StructLikeT) and data_type.kind in ("struct", "header")):
            raise self.fail(args[1], f"digest data must be a struct or header, not {data_type}")
        self._digest_layout(data_type, args[1])
        self.model.uses_externs = True
        spec = self.model.digests.get(data_type.name)
        if spec is None:
            self.model.digests[data_type.name] = DigestSpec(data_type.name, describe(data_type))
        elif spec.type != describe(data_type):
            raise self.fail(args[1], f"two digest types are named {data_type.name}")
        temp = ctx.temp("dg")
        self.gen_assign_to(temp, data_type, args[1], exprs, self.code, indent, ctx, fresh=True)
        leaves = "".join(f"{leaf}, " for leaf in self._digest_leaves(temp, data_type))
        self.code.add(indent, f"_sm.{DIGEST_RECORD} = ({data_type.name!r}, ({leaves}))")

    def _digest_layout(self, type_: StructLikeT, node) -> None:
        """Refuse members a digest cannot carry (stacks, unions, varbit, nested structs in headers)."""
        for fname, ftype in type_.fields:
            if isinstance(ftype, BitT | IntT | BoolT) or (isinstance(ftype, EnumT) and ftype.underlying):
                continue
            nested = isinstance(ftype, StructLikeT) and ftype.kind in ("struct", "header")
            if nested and type_.kind == "struct":
                self._digest_layout(ftype, node)
                continue
            raise self.fail(node, f"digest member {type_.name}.{fname} of type {ftype} is not supported")

    def _digest_leaves(self, src: str, type_: StructLikeT) -> list[str]:
        """Sources of the flattened values: members in order, a header's validity first."""
        leaves = [f"{src}._v"] if type_.kind == "header" else []
        for fname, ftype in type_.fields:
            if isinstance(ftype, StructLikeT):
                leaves += self._digest_leaves(f"{src}.f_{fname}", ftype)
            else:
                leaves.append(f"{src}.f_{fname}")
        return leaves


def describe(type_: object) -> tuple:
    """A digest type as plain tuples (kept in the program model, read by P4Info):
    ``(kind, name, ((field, description), ...))`` for a struct or header, ``("bit", W)``,
    ``("int", W)`` or ``("bool",)`` for a scalar (a serializable enum as its underlying type)."""
    if isinstance(type_, StructLikeT):
        return (type_.kind, type_.name, tuple((name, describe(ftype)) for name, ftype in type_.fields))
    if isinstance(type_, EnumT):
        type_ = type_.underlying
    if isinstance(type_, BitT):
        return ("bit", type_.width)
    if isinstance(type_, IntT):
        return ("int", type_.width)
    return ("bool",)
