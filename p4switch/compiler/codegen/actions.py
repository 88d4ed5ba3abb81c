"""Actions: one function per action, with the action's parameters and the P4Info spec."""

from __future__ import annotations

from lark import Tree

from p4switch.compiler.codegen.common import (
    BlockContext,
)
from p4switch.compiler.codegen.copies import return_tail, scalar_outs
from p4switch.compiler.expressions import READ_ONLY, Binding, Scope
from p4switch.compiler.model import (
    ActionParamSpec,
    ActionSpec,
)
from p4switch.compiler.types import (
    BitT,
    BoolT,
    EnumT,
    IntT,
    P4Type,
    width_of,
)


class ActionGen:
    """Actions: one function per action, with the action's parameters and the P4Info spec."""

    def action_params(self, node: Tree) -> list[tuple[str, str | None, P4Type]]:
        """(name, direction, type) of an action's parameters."""
        result = []
        plist = node.children[2]
        for p in plist.children if plist is not None else []:
            if p is None:
                continue
            direction = str(p.children[1].children[0]) if p.children[1] is not None else None
            result.append((self.name_of(p.children[3]), direction, self.resolve_type(p.children[2])))
        return result

    def gen_global_action(self, name: str) -> None:
        """A top-level action (such as core's NoAction)."""
        self.control_prefix = ""
        self.current_params = []
        self.gen_action(self.ir.actions[name], None, [])

    def gen_action(self, node: Tree, control_scope: Scope | None, params) -> None:
        """An action as `def act_<name>(L, *params)`."""
        ann = self.annotations(node.children[0])
        local = self.name_of(node.children[1])
        fq = self.fq_name(local, ann)
        fn = "act_" + self.py_ident(fq)
        scope = Scope({}, control_scope) if control_scope is not None else Scope({}, self.global_scope)
        aparams = self.action_params(node)
        py_params, cp_params = [], []
        seen_directionless = False
        for pname, direction, ptype in aparams:
            src = f"a_{pname}"
            py_params.append(src)
            scope.names[pname] = Binding("var", src, ptype, READ_ONLY if direction in ("in", None) else None)
            if direction is None:
                seen_directionless = True
                if not isinstance(ptype, BitT | IntT | BoolT) and not (
                    isinstance(ptype, EnumT) and ptype.underlying
                ):
                    raise self.fail(node, f"control-plane parameter {pname} must be bit<W>, int<W> or bool")
                cp_params.append(ActionParamSpec(pname, width_of(ptype)))
            else:
                if seen_directionless:
                    raise self.fail(node, "directional parameters must come before directionless ones")
        spec = ActionSpec(fq, fn, cp_params, next(self._aid), ann, hidden="hidden" in ann)
        if fq in self.model.actions:
            raise self.fail(node, f"duplicate action name {fq}")
        self.model.actions[fq] = spec
        if control_scope is not None:
            control_scope.names[local] = Binding("action", fn, None, spec)
        self._action_param_types[fq] = aparams
        if control_scope is None:
            self._global_action_specs[local] = spec
        self.code.add(0, f"def {fn}({', '.join([*py_params, 'L'])}):")
        if control_scope is not None:
            self.prologue(params, 1)
        for pname, direction, ptype in aparams:  # entries give int<W> parameters as unsigned W bits
            if direction is None and isinstance(ptype, IntT):
                top, full = 1 << (ptype.width - 1), 1 << ptype.width
                self.code.add(1, f"if a_{pname} >= {top}: a_{pname} -= {full}")
        ctx = BlockContext(scope, "action", self.control_prefix)
        before = len(self.code.lines)
        outs = scalar_outs(aparams)
        self._return_tail = return_tail(outs)
        self.gen_block(node.children[3], ctx, 1)
        if outs:
            self.code.add(1, f"return (None{self._return_tail})")
        self._return_tail = None
        if len(self.code.lines) == before:
            self.code.add(1, "pass")
        self.code.add(0, "")

    def resolve_action(self, name_node, scope: Scope) -> ActionSpec:
        """The ActionSpec an action name refers to in a control."""
        name = self.name_of(name_node)
        binding = scope.lookup(name)
        if binding is not None and binding.kind == "action":
            return binding.info
        specs = self._global_action_specs
        if name in specs:
            return specs[name]
        raise self.fail(name_node, f"unknown action {name}")
