"""Naming and block parameters: P4Info names, Python identifiers, parameter bindings."""

from __future__ import annotations

from lark import Tree

from p4switch.compiler.expressions import READ_ONLY, Binding
from p4switch.compiler.types import (
    ExternT,
    P4Type,
)


class ScopeGen:
    """Naming and block parameters: P4Info names, Python identifiers, parameter bindings."""

    def fq_name(self, local: str, annotations: dict) -> str:
        """The P4Info name of a control-local object: @name, or Control.local."""
        name = annotations.get("name", [None])[0] if "name" in annotations else None
        if isinstance(name, str):
            if name.startswith("."):
                return name[1:]
            return f"{self.control_prefix}.{name}" if self.control_prefix else name
        return f"{self.control_prefix}.{local}" if self.control_prefix else local

    @staticmethod
    def py_ident(name: str) -> str:
        """A Python identifier fragment for a P4 name (dots become double underscores)."""
        return name.replace(".", "__")

    def block_params(self, node: Tree) -> list[tuple[str, str | None, P4Type]]:
        """(name, direction, type) of a parser's/control's parameters."""
        result = []
        param_list = node.children[3]
        for p in param_list.children if param_list is not None else []:
            if p is None:
                continue
            direction = str(p.children[1].children[0]) if p.children[1] is not None else None
            result.append((self.name_of(p.children[3]), direction, self.resolve_type(p.children[2])))
        return result

    def param_binding(self, name: str, type_: P4Type, direction: str | None = "inout") -> Binding:
        """Binding of a block parameter by its type (packet externs are special); `in` is read-only."""
        if isinstance(type_, ExternT) and type_.name == "packet_in":
            return Binding("packet_in", "pk", type_)
        if isinstance(type_, ExternT) and type_.name == "packet_out":
            return Binding("packet_out", "out", type_)
        return Binding("var", f"p_{name}", type_, READ_ONLY if direction in ("in", None) else None)

    def prologue(self, params: list[tuple[str, str | None, P4Type]], indent: int) -> None:
        """Unpack a block's context tuple L (parameters, standard metadata, locals LV) into Python locals."""
        names = [self.param_binding(name, type_).src for name, _, type_ in params]
        self.code.add(indent, f"{', '.join(names + ['_sm', 'LV'])} = L")
