"""Controls: one function per control, its local variables and extern instances."""

from __future__ import annotations

import re

from lark import Tree

from p4switch.compiler.codegen.common import (
    BlockContext,
    Code,
    InstanceInfo,
)
from p4switch.compiler.codegen.copies import scalar_outs
from p4switch.compiler.expressions import Binding, ExpressionCompiler, Scope
from p4switch.compiler.model import (
    CounterSpec,
    RegisterSpec,
)
from p4switch.compiler.types import (
    BitT,
    EnumT,
    ExternT,
    IntT,
)


class ControlGen:
    """Controls: one function per control, its local variables and extern instances."""

    def gen_control(self, node: Tree, role: str, instance: str | None = None) -> None:
        """A control: its locals class, actions, tables and apply function.

        `instance` is the full name of a sub-control instance (``ingress.c``): its function,
        tables and actions are named after the instance, as p4c names them.
        """
        name = instance or self.name_of(node.children[1])
        if instance is None and f"ctl_{name}" in self._generated_controls:
            raise self.fail(
                node, f"control {name} is used twice in V1Switch; the target needs one instance per block"
            )
        if node.children[4] is not None and any(c is not None for c in node.children[4].children):
            raise self.fail(node, "controls with constructor parameters are not supported")
        self.control_prefix = name
        name = self.py_ident(name)
        params = self.block_params(node)
        scope = Scope({}, self.global_scope)
        for pname, direction, ptype in params:
            scope.names[pname] = self.param_binding(pname, ptype, direction)
        # out/inout scalars live in the locals object, where the control's actions write them too;
        # the function returns them after its (None) result, as a function does (copies.scalar_outs)
        outs = scalar_outs(params)
        slot_names: list[str] = [f"p_{pname}" for pname in outs]
        init = Code()
        for pname, _, ptype in params:
            if pname in outs:
                scope.names[pname] = Binding("var", f"LV.p_{pname}", ptype)
                init.add(0, f"LV.p_{pname} = p_{pname}")
        ctx = BlockContext(scope, "control", name)
        self.current_params = params
        self.current_role = role
        locals_ = [c for c in node.children[5:-1] if isinstance(c, Tree)]
        for local in locals_:
            if local.data == "action_decl":
                self.gen_action(local, scope, params)
            elif local.data == "table_decl":
                self.gen_table(local, scope, params)
            elif local.data == "function_decl":
                raise self.fail(local, "functions declared inside controls are not supported")
            else:
                self.gen_block_local(local, ctx, init, slot_names)
        pnames = ", ".join(self.param_binding(p, t).src for p, _, t in params)
        self.gen_context_setup(name, slot_names, init, pnames, f"def ctl_{name}(_sm, {pnames}):")
        setup_end = len(self.code.lines)
        apply_ctx = BlockContext(scope.child(), "control", name)
        self._return_tail = "".join(f", LV.p_{pname}" for pname in outs) or None
        self.gen_block(node.children[-1], apply_ctx, 1)
        if outs:
            self.code.add(1, f"return (None{self._return_tail})")
        self._return_tail = None
        body = self.code.lines[setup_end:]
        if body == ["    pass"] and not slot_names:
            self._empty_controls.add(f"ctl_{name}")
        if not slot_names and not any(re.search(r"\bL\b", line) for line in body):
            # nothing in the body needs the context tuple: do not build it per packet
            del self.code.lines[setup_end - 2 : setup_end]
        self.code.add(0, "")
        self._generated_controls.add(f"ctl_{name}")

    def gen_context_setup(
        self, name: str, slot_names: list[str], init: Code, pnames: str, header: str
    ) -> None:
        """The locals class of a block (if it has local variables) and the start of its function."""
        if slot_names:
            self.code.add(0, f"class LV_{name}:")
            self.code.add(1, f"__slots__ = {tuple(slot_names)!r}")
            self.code.add(0, "")
        self.code.add(0, header)
        self.code.add(1, f"LV = LV_{name}()" if slot_names else "LV = None")
        self.code.add(1, f"L = ({pnames + ', ' if pnames else ''}_sm, LV)")
        for line in init.lines:
            self.code.add(1, line)

    def gen_block_local(self, node: Tree, ctx: BlockContext, init: Code, slot_names: list[str]) -> None:
        """A declaration in a parser's/control's local section: constant, variable or extern instance."""
        if node.data == "constant_decl":
            self._local_constant(node, ctx)
            return
        if node.data == "variable_decl":
            _, type_node, name_node, value = node.children
            type_ = self.resolve_type(type_node)
            vname = self.name_of(name_node)
            slot = f"v_{vname}"
            slot_names.append(slot)
            ctx.scope.names[vname] = Binding("var", f"LV.{slot}", type_)
            if value is None:
                init.add(0, f"LV.{slot} = {self.default_value_src(type_)}")
            else:
                exprs = ExpressionCompiler(self, ctx.scope)
                self.gen_assign_to(f"LV.{slot}", type_, value, exprs, init, 0, ctx, fresh=True)
            return
        if node.data == "instantiation":
            self.gen_instance(node, ctx.scope)
            return
        raise self.fail(node, f"unsupported local declaration '{node.data}'")

    def _local_constant(self, node: Tree, ctx: BlockContext) -> None:
        """A `const` inside a block: folded, bound in the block's scope."""
        _, type_node, name_node, value_node = node.children
        type_ = self.resolve_type(type_node)
        expr = ExpressionCompiler(self, ctx.scope).compile(value_node, expected=type_)
        if expr.const is None:
            raise self.fail(value_node, "constant initializer is not a compile-time constant")
        ctx.scope.names[self.name_of(name_node)] = Binding("const", expr.src, type_, expr.const)

    def gen_instance(self, node: Tree, scope: Scope) -> None:
        """counter, direct_counter and register instances become per-pipeline globals."""
        annotations, type_node, args_node, name_node = node.children
        ann = self.annotations(annotations)
        type_ = self.resolve_type(type_node)
        local = self.name_of(name_node)
        control = self._instantiated_block(type_node, self.ir.controls)
        if control is not None:
            self.gen_subcontrol(node, control, self.fq_name(local, ann), local, scope, args_node)
            return
        parser = self._instantiated_block(type_node, self.ir.parsers)
        if parser is not None:
            self.gen_subparser(node, parser, self.fq_name(local, ann), local, scope, args_node)
            return
        if not isinstance(type_, ExternT):
            raise self.fail(node, f"cannot instantiate {type_} here")
        self.model.uses_externs = True
        args = [a for a in (args_node.children if args_node is not None else []) if a is not None]
        fq = self.fq_name(local, ann)
        gname = "X_" + self.py_ident(fq)
        if type_.name == "counter":
            if len(args) != 2:
                raise self.fail(node, "counter(size, CounterType) takes two arguments")
            size = self.constant_int(args[0])
            unit = self._counter_unit(args[1])
            spec = CounterSpec(fq, gname, size, unit)
            self.model.counters[fq] = spec
        elif type_.name == "direct_counter":
            if len(args) != 1:
                raise self.fail(node, "direct_counter(CounterType) takes one argument")
            spec = CounterSpec(fq, gname, 0, self._counter_unit(args[0]))
            self.model.direct_counters[fq] = spec
        elif type_.name == "register":
            if len(type_.type_args) != 1 or len(args) != 1:
                raise self.fail(node, "register<T>(size) needs one type argument and one size")
            (cell,) = type_.type_args
            if not isinstance(cell, BitT | IntT):
                raise self.fail(node, "register cells must be bit<W> or int<W> in the embedded target")
            spec = RegisterSpec(fq, gname, self.constant_int(args[0]), cell.width, isinstance(cell, IntT))
            self.model.registers[fq] = spec
        elif type_.name == "meter":
            if len(args) != 2:
                raise self.fail(node, "meter(size, MeterType) takes two arguments")
            spec = CounterSpec(fq, gname, self.constant_int(args[0]), self._meter_unit(args[1]))
            self.model.meters[fq] = spec
        elif type_.name == "direct_meter":
            if len(args) != 1:
                raise self.fail(node, "direct_meter(MeterType) takes one argument")
            spec = CounterSpec(fq, gname, 0, self._meter_unit(args[0]))
            self.model.direct_meters[fq] = spec
        else:
            raise self.fail(node, f"extern {type_.name} is not supported by the embedded target")
        scope.names[local] = Binding(
            "instance", gname, type_, InstanceInfo(type_.name, gname, spec, type_.type_args)
        )

    def _instantiated_block(self, type_node, blocks: dict) -> Tree | None:
        """The control or parser declaration (from `blocks`) an instantiation's type names, if any."""
        try:
            name = self.name_of(type_node)
        except Exception:  # a type that is not a plain name (specialised, ...): not a block
            return None
        return blocks.get(name) if isinstance(name, str) else None

    def gen_subparser(
        self, node: Tree, parser: Tree, instance: str, local: str, scope: Scope, args_node
    ) -> None:
        """``P() p;`` in a parser: P generated once more, for this instance, applied as ``p.apply(...)``."""
        if args_node is not None and any(a is not None for a in args_node.children):
            raise self.fail(node, "parsers with constructor parameters are not supported")
        saved = (self.control_prefix, self.current_params, self.current_role)
        self.gen_parser(parser, instance)  # a module-level function, before the outer one
        self.control_prefix, self.current_params, self.current_role = saved
        function = f"prs_{self.py_ident(instance)}"
        info = InstanceInfo("control", function, self.block_params(parser))
        scope.names[local] = Binding("instance", function, None, info)

    def gen_subcontrol(
        self, node: Tree, control: Tree, instance: str, local: str, scope: Scope, args_node
    ) -> None:
        """``C() c;`` in a control: C generated once more, for this instance, applied as ``c.apply(...)``."""
        if args_node is not None and any(a is not None for a in args_node.children):
            raise self.fail(node, "controls with constructor parameters are not supported")
        params = self.block_params(control)
        saved = (self.control_prefix, self.current_params, self.current_role)
        self.gen_control(control, saved[2], instance)  # a module-level function, before the outer one
        self.control_prefix, self.current_params, self.current_role = saved
        function = f"ctl_{self.py_ident(instance)}"
        info = InstanceInfo("control", function, params)
        scope.names[local] = Binding("instance", function, None, info)

    def _meter_unit(self, node) -> str:
        """The MeterType member an instantiation names."""
        expr = ExpressionCompiler(self, None).compile(node)
        if not isinstance(expr.type, EnumT) or expr.type.name != "MeterType":
            raise self.fail(node, "expected a MeterType")
        return expr.info

    def _counter_unit(self, node) -> str:
        """The CounterType member an instantiation names."""
        expr = ExpressionCompiler(self, None).compile(node)
        if not isinstance(expr.type, EnumT) or expr.type.name != "CounterType":
            raise self.fail(node, "expected a CounterType")
        return expr.info
