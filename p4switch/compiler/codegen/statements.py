"""Statements: assignments, conditionals, switch, exit/return, locals."""

from __future__ import annotations

import re

from lark import Tree

from p4switch.compiler.codegen.common import (
    BlockContext,
    Code,
)
from p4switch.compiler.expressions import Binding, Expr, ExpressionCompiler, wrap_src
from p4switch.compiler.types import (
    BitT,
    BoolT,
    EnumT,
    ErrorT,
    IntT,
    P4Type,
    StackT,
    StructLikeT,
    TupleT,
    VoidT,
    mask,
    same_type,
)


class StatementGen:
    """Statements: assignments, conditionals, switch, exit/return, locals."""

    def gen_block(self, node: Tree, ctx: BlockContext, indent: int) -> None:
        """A block statement in a nested scope."""
        inner = BlockContext(ctx.scope.child(), ctx.kind, ctx.control)
        inner.counter = ctx.counter
        start = len(self.code.lines)
        for stmt in node.children[1:]:
            self.gen_statement(stmt, inner, indent)
        if len(self.code.lines) == start:
            self.code.add(indent, "pass")

    def gen_statement(self, node, ctx: BlockContext, indent: int) -> None:
        """One statement or declaration."""
        handler = getattr(self, "_s_" + node.data, None)
        if handler is None:
            raise self.fail(node, f"unsupported statement '{node.data}'")
        handler(node, ctx, indent)

    def _s_empty_statement(self, node, ctx, indent) -> None:
        """Statement node 'empty_statement'."""
        pass

    def _s_block_statement(self, node, ctx, indent) -> None:
        """Statement node 'block_statement'."""
        self.gen_block(node, ctx, indent)

    def _s_parser_block_statement(self, node, ctx, indent) -> None:
        """Statement node 'parser_block_statement'."""
        self.gen_block(node, ctx, indent)

    def _s_exit_statement(self, node, ctx, indent) -> None:
        """Statement node 'exit_statement'."""
        if ctx.kind in ("state", "parser"):
            raise self.fail(node, "exit is not allowed in parsers")
        self.code.add(indent, "raise ExitPipeline()")

    def _s_return_statement(self, node, ctx, indent) -> None:
        """Statement node 'return_statement'."""
        if ctx.kind == "function":
            result_type = self._function_result
            if node.children[0] is None:
                if not isinstance(result_type, VoidT):
                    raise self.fail(node, f"this function must return a {result_type}")
                self.code.add(
                    indent, "return" if self._return_tail is None else f"return (None{self._return_tail})"
                )
                return
            if isinstance(result_type, VoidT):
                raise self.fail(node, "a void function cannot return a value")
            exprs = ExpressionCompiler(self, ctx.scope)
            if isinstance(result_type, StructLikeT | StackT):  # a fresh value: never an alias of a parameter
                src = ctx.temp("r")
                value_node = node.children[0]
                self.gen_assign_to(src, result_type, value_node, exprs, self.code, indent, ctx, fresh=True)
            elif result_type.is_scalar():
                src = exprs.compile(node.children[0], expected=result_type).src
            else:
                raise self.fail(node, f"functions cannot return a {result_type} in the embedded target")
            if self._return_tail is None:
                self.code.add(indent, f"return {src}")
            else:
                self.code.add(indent, f"return ({src}{self._return_tail})")
            return
        if node.children[0] is not None:
            raise self.fail(node, "return with a value is only allowed in functions")
        if ctx.kind in ("state", "parser"):
            raise self.fail(node, "return is not allowed in parsers")
        if ctx.kind in ("action", "control") and self._return_tail:
            self.code.add(indent, f"return (None{self._return_tail})")
            return
        self.code.add(indent, "return")

    def _s_constant_decl(self, node, ctx, indent) -> None:
        """Statement node 'constant_decl'."""
        self._local_constant(node, ctx)

    def _s_variable_decl(self, node, ctx, indent) -> None:
        """Statement node 'variable_decl'."""
        _, type_node, name_node, value = node.children
        type_ = self.resolve_type(type_node)
        vname = self.name_of(name_node)
        py = f"v_{vname}_{next(ctx.counter)}"
        exprs = ExpressionCompiler(self, ctx.scope)
        code = Code()
        if value is None:
            code.add(0, f"{py} = {self.default_value_src(type_)}")
        else:
            self.gen_assign_to(py, type_, value, exprs, code, 0, ctx, fresh=True)
        for line in code.lines:
            self.code.add(indent, line)
        ctx.scope.names[vname] = Binding("var", py, type_)

    def _s_instantiation(self, node, ctx, indent) -> None:
        """Statement node 'instantiation'."""
        raise self.fail(node, "extern instances must be declared in the control's or parser's local section")

    def _s_assignment_statement(self, node, ctx, indent) -> None:
        """Statement node 'assignment_statement'."""
        target_node, value_node = node.children
        exprs = ExpressionCompiler(self, ctx.scope)
        if isinstance(target_node, Tree) and target_node.data == "slice":
            self._assign_slice(target_node, value_node, exprs, indent)
            return
        target = ExpressionCompiler(self, ctx.scope, for_write=True).compile(target_node)
        if target.kind != "value" or target.type is None:
            raise self.fail(target_node, "cannot assign to this expression")
        code = Code()
        self.gen_assign_to(target.src, target.type, value_node, exprs, code, 0, ctx)
        for line in code.lines:
            self.code.add(indent, line)

    def _assign_slice(self, target_node: Tree, value_node, exprs: ExpressionCompiler, indent: int) -> None:
        """`x[h:l] = v`: replace bits h..l of x (`x[h1:l1][h2:l2]` is `x[l1+h2:l1+l2]`)."""
        base_node = target_node.children[0]
        high = self.constant_int(target_node.children[1])
        low = self.constant_int(target_node.children[2])
        while isinstance(base_node, Tree) and base_node.data == "slice":  # a slice of a slice
            outer_high = self.constant_int(base_node.children[1])
            outer_low = self.constant_int(base_node.children[2])
            if not 0 <= low <= high <= outer_high - outer_low:
                raise self.fail(
                    target_node, f"slice [{high}:{low}] out of range for bit<{outer_high - outer_low + 1}>"
                )
            high, low = outer_low + high, outer_low + low
            base_node = base_node.children[0]
        base = ExpressionCompiler(self, exprs.scope, for_write=True).compile(base_node)
        if base.kind != "value" or not isinstance(base.type, BitT | IntT):
            raise self.fail(target_node, "slice assignment needs a bit<W> or int<W> target")
        if not 0 <= low <= high < base.type.width:
            raise self.fail(target_node, f"slice [{high}:{low}] out of range for {base.type}")
        width = high - low + 1
        value = exprs.compile(value_node, expected=BitT(width))
        keep = mask(base.type.width) ^ (mask(width) << low)
        new = f"(({base.src} & {keep}) | ({value.src} << {low}))"
        if isinstance(base.type, IntT):
            new = wrap_src(new, base.type)
        self.code.add(indent, f"{base.src} = {new}")

    def gen_assign_to(
        self,
        target: str,
        type_: P4Type,
        value_node,
        exprs: ExpressionCompiler,
        code: Code,
        indent: int,
        ctx: BlockContext,
        fresh: bool = False,
    ) -> None:
        """Assign a value (expression or initializer) to a target of a known type."""
        value = exprs.compile(value_node)
        if value.items is not None:
            if isinstance(type_, StructLikeT):
                if fresh:
                    code.add(indent, f"{target} = {self.default_value_src(type_)}")
                self._assign_initializer(target, type_, value, value_node, exprs, code, indent, ctx)
                return
            if (
                isinstance(type_, TupleT)
                and isinstance(value.items, list)
                and len(value.items) == len(type_.elements)
            ):
                items = [
                    exprs.coerce(item, t, value_node).src
                    for item, t in zip(value.items, type_.elements, strict=True)
                ]
                code.add(indent, f"{target} = ({', '.join(items)},)")
                return
            raise self.fail(value_node, f"cannot initialize a {type_} from a list")
        if isinstance(type_, StructLikeT | StackT):
            if not same_type(value.type, type_):
                raise self.fail(value_node, f"type mismatch: expected {type_}, got {value.type}")
            if fresh:
                code.add(indent, f"{target} = {value.src}.copy()")
            else:
                code.add(indent, f"{target}.assign({value.src})")
            return
        value = exprs.coerce(value, type_, value_node)
        code.add(indent, f"{target} = {value.src}")

    def _assign_initializer(
        self, target: str, type_: StructLikeT, value: Expr, node, exprs, code, indent, ctx
    ) -> None:
        """Assign a list or struct initializer field by field (headers become valid)."""
        if isinstance(value.items, list):
            if len(value.items) != len(type_.fields):
                raise self.fail(
                    node, f"{type_.name} has {len(type_.fields)} fields, initializer has {len(value.items)}"
                )
            pairs = [
                (fname, ftype, item, node)
                for (fname, ftype), item in zip(type_.fields, value.items, strict=True)
            ]
        else:
            names = {f for f, _ in type_.fields}
            unknown = set(value.items) - names
            if unknown or len(value.items) != len(names):
                raise self.fail(node, f"initializer fields do not match {type_.name}")
            pairs = [
                (fname, ftype, value.items[fname][0], value.items[fname][1]) for fname, ftype in type_.fields
            ]
        temps = []
        for fname, ftype, item, item_node in pairs:
            temp = ctx.temp("i")
            if isinstance(ftype, StructLikeT) and item.items is not None:  # a nested initializer
                code.add(indent, f"{temp} = {self.default_value_src(ftype)}")
                self._assign_initializer(temp, ftype, item, item_node, exprs, code, indent, ctx)
            elif isinstance(ftype, StructLikeT | StackT):
                if not same_type(item.type, ftype):
                    raise self.fail(item_node, f"type mismatch: expected {ftype}, got {item.type}")
                code.add(indent, f"{temp} = {item.src}.copy()")
            else:
                item = exprs.coerce(item, ftype, item_node)
                code.add(indent, f"{temp} = {item.src}")
            temps.append((fname, temp))
        for fname, temp in temps:
            code.add(indent, f"{target}.f_{fname} = {temp}")
        if type_.kind == "header":
            code.add(indent, f"{target}._v = True")

    def _s_conditional_statement(self, node, ctx, indent) -> None:
        """Statement node 'conditional_statement'."""
        cond_node, then_node, else_node = node.children
        cond = ExpressionCompiler(self, ctx.scope).compile(cond_node)
        if not isinstance(cond.type, BoolT):
            raise self.fail(cond_node, f"if condition must be bool, got {cond.type}")
        if cond.const is not None:  # a constant condition: only the branch that runs, as p4c keeps it
            live = then_node if cond.const else else_node
            self.code.add(indent, "if True:")
            if live is None:
                self.code.add(indent + 1, "pass")
            else:
                self._sub_statement(live, ctx, indent + 1)
            return
        self.code.add(indent, f"if {self._hoist_table_apply(cond.src, indent)}:")
        self._sub_statement(then_node, ctx, indent + 1)
        if else_node is not None:
            self.code.add(indent, "else:")
            self._sub_statement(else_node, ctx, indent + 1)

    def _hoist_table_apply(self, src: str, indent: int) -> str:
        """For `t.apply().hit`, `!t.apply().hit` or `t.apply().action_run`, inline the apply before the test.

        Saves a function call per table application; anything else is returned unchanged.
        """
        match = re.fullmatch(r"(\(not )?(tap_\w+)\(L\)\.(hit|aid)(\))?", src)
        if match is None or bool(match[1]) != bool(match[4]) or match[2] not in self._tables_by_function:
            return src
        for line in self._tables_by_function[match[2]].apply_lines:
            self.code.add(indent, line)
        return f"(not e.{match[3]})" if match[1] else f"e.{match[3]}"

    def _sub_statement(self, node, ctx, indent) -> None:
        """The body of an if/else branch in its own scope (`pass` if empty)."""
        start = len(self.code.lines)
        inner = BlockContext(ctx.scope.child(), ctx.kind, ctx.control)
        inner.counter = ctx.counter
        self.gen_statement(node, inner, indent)
        if len(self.code.lines) == start:
            self.code.add(indent, "pass")

    def _s_switch_statement(self, node, ctx, indent) -> None:
        """Statement node 'switch_statement'."""
        subject_node, *cases = node.children
        exprs = ExpressionCompiler(self, ctx.scope)
        subject = exprs.compile(subject_node)
        var = ctx.temp("sw")
        self.code.add(indent, f"{var} = {self._hoist_table_apply(subject.src, indent)}")
        pending: list = []
        first = True
        seen_default = False
        for case in cases:
            label = case.children[0]
            pending.append(label)
            if case.data == "switch_fallthrough":
                continue
            conds = []
            for lab in pending:
                if isinstance(lab, Tree) and lab.data == "default_label":
                    seen_default = True
                    conds = ["True"]
                    break
                conds.append(f"{var} == {self._switch_label_value(lab, subject, exprs)}")
            pending = []
            keyword = "if" if first else "elif"
            if conds == ["True"]:
                self.code.add(indent, "else:" if not first else "if True:")
            else:
                self.code.add(indent, f"{keyword} {' or '.join(conds)}:")
            first = False
            self.gen_block(case.children[1], ctx, indent + 1)
        del seen_default
        if pending:
            raise self.fail(node, "switch ends with a label without a block")

    def _switch_label_value(self, label, subject: Expr, exprs: ExpressionCompiler) -> int:
        """The value a switch label stands for (action id or enum member)."""
        if subject.kind == "action_run":
            name = self.name_of(label)
            ids = subject.info.action_ids
            if name not in ids:
                raise self.fail(label, f"action {name} is not an action of table {subject.info.spec.name}")
            return ids[name]
        if subject.kind != "value" or not isinstance(subject.type, BitT | IntT | EnumT | ErrorT):
            raise self.fail(label, "switch needs a table's action_run or an integer/enum value")
        if isinstance(label, Tree) and label.data == "name" and isinstance(subject.type, EnumT):
            member = self.name_of(label)
            if member in subject.type.members:
                return subject.type.members[member]
        if isinstance(subject.type, BitT | IntT):  # an integer or a constant of the subject's type
            node = label if label.data == "integer" else Tree("var", label.children)
            value = exprs.compile(node, expected=subject.type)
            if value.const is None:
                raise self.fail(label, "a switch label must be a compile-time constant")
            return int(value.const)
        raise self.fail(label, "switch labels on values must be enum members or constants")

    def _s_direct_application(self, node, ctx, indent) -> None:
        """Statement node 'direct_application'."""
        raise self.fail(node, "applying a parser or control from another block is not supported")

    def _s_generic_method_call_statement(self, node, ctx, indent) -> None:
        """Statement node 'generic_method_call_statement': ``pk.extract<H>(hdr.h)`` (H checked)."""
        callee_node, type_args, args_node = node.children
        types = [self.resolve_type(t) for t in type_args.children if t is not None]
        args = [a for a in (args_node.children if args_node is not None else []) if a is not None]
        callee = ExpressionCompiler(self, ctx.scope, for_write=True).compile(callee_node)
        if callee.kind == "extern_function" and callee.info == "digest":
            if len(types) != 1:
                raise self.fail(node, "digest<T>(receiver, data) takes one type argument")
            self._digest_call(args, node, ExpressionCompiler(self, ctx.scope), ctx, indent, types[0])
            return
        is_extract = callee.kind == "method" and callee.info[1] == "extract"
        if not (is_extract and callee.info[0].kind == "packet_in"):
            raise self.fail(node, "explicit type arguments are supported on packet.extract<H>(...) only")
        target = ExpressionCompiler(self, ctx.scope, for_write=True).compile(args[0]) if args else None
        if len(types) != 1 or target is None or not same_type(types[0], target.type):
            raise self.fail(node, "extract<H>(h) needs one type argument, the type of h")
        method_call = Tree("method_call_statement", [callee_node, args_node])
        self._s_method_call_statement(method_call, ctx, indent)

    def _s_method_call_statement(self, node, ctx, indent) -> None:
        """Statement node 'method_call_statement'."""
        callee_node, args_node = node.children
        exprs = ExpressionCompiler(self, ctx.scope)
        callee = ExpressionCompiler(self, ctx.scope, for_write=True).compile(callee_node)
        args = [a for a in (args_node.children if args_node is not None else []) if a is not None]
        for arg in args:
            if isinstance(arg, Tree) and arg.data in ("named_argument", "dont_care_argument"):
                raise self.fail(arg, "named and don't-care arguments are not supported")
        self.gen_call(callee, args, node, exprs, ctx, indent)
