"""Deparser: packet.emit() of headers, stacks and structs of headers."""

from __future__ import annotations

from p4switch.compiler.expressions import Expr
from p4switch.compiler.types import (
    StackT,
    StructLikeT,
)


class DeparserGen:
    """Deparser: packet.emit() of headers, stacks and structs of headers."""

    def _emit(self, target: Expr, node, indent: int) -> None:
        """packet.emit() of a header, stack or struct of headers."""
        c = self.code
        t = target.type
        if isinstance(t, StructLikeT) and t.kind == "header":
            c.add(indent, f"_h = {target.src}")
            c.add(indent, f"if _h._v: out.append({self.pack_expression(t, '_h')})")
        elif isinstance(t, StackT) and t.element.kind == "header_union":
            c.add(indent, f"for _u in {target.src}.stored():")
            for fname, ftype in t.element.fields:
                c.add(indent + 1, f"_h = _u.f_{fname}")
                c.add(indent + 1, f"if _h._v: out.append({self.pack_expression(ftype, '_h')})")
        elif isinstance(t, StackT):
            # stored() leaves out the shared blank elements (never valid) without a Python-level
            # test per element: a deep stack that holds a few headers costs a few iterations
            c.add(indent, f"for _h in {target.src}.stored():")
            c.add(indent + 1, f"if _h._v: out.append({self.pack_expression(t.element, '_h')})")
        elif isinstance(t, StructLikeT) and t.kind in ("struct", "header_union"):
            for fname, ftype in t.fields:
                if not isinstance(ftype, StructLikeT | StackT):
                    raise self.fail(node, f"emit of a struct with non-header field {fname} is not supported")
                self._emit(Expr(f"{target.src}.f_{fname}", ftype), node, indent)
        else:
            raise self.fail(node, f"cannot emit a value of type {t}")
