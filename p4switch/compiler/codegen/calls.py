"""Calls: actions, P4 functions, and methods of headers, stacks, tables, packets and instances."""

from __future__ import annotations

from lark import Tree

from p4switch.compiler.codegen.common import (
    BlockContext,
)
from p4switch.compiler.codegen.copies import return_tail, scalar_outs
from p4switch.compiler.expressions import READ_ONLY, Binding, Expr, ExpressionCompiler, Scope
from p4switch.compiler.model import (
    ActionSpec,
)
from p4switch.compiler.types import (
    BitT,
    InfIntT,
    P4Type,
    StackT,
    StructLikeT,
    VoidT,
    same_type,
)


class CallGen:
    """Calls: actions, P4 functions, and methods of headers, stacks, tables, packets and instances."""

    def gen_call(
        self, callee: Expr, args: list, node, exprs: ExpressionCompiler, ctx: BlockContext, indent: int
    ) -> None:
        """A call statement: methods, actions, extern functions."""
        c = self.code
        if callee.kind == "method":
            base, method = callee.info
            self._method_call(base, method, args, node, exprs, ctx, indent)
            return
        if callee.kind == "action":
            spec = callee.info if isinstance(callee.info, ActionSpec) else None
            if spec is None:
                spec = self._global_action_specs.get(callee.info[1])
            if spec is None:
                raise self.fail(node, "unknown action")
            if ctx.kind == "control" and spec.name not in self.model.direct_actions:
                self.model.direct_actions.append(spec.name)
            decl = self._action_decl_params(spec)
            if len(args) != len(decl):
                raise self.fail(node, f"action {spec.name} takes {len(decl)} arguments, got {len(args)}")
            c.add(indent, self.call_with_copies(spec.function, decl, args, node, exprs, ("L",)))
            return
        if callee.kind == "extern_function":
            self._extern_function_call(callee.info, args, node, exprs, ctx, indent)
            return
        if callee.kind == "function":
            c.add(indent, self._function_call(callee.info, args, node, exprs).src)
            return
        raise self.fail(node, "this expression cannot be called")

    def _function_call(self, name: str, args: list, node, exprs: ExpressionCompiler) -> Expr:
        """A call of a top-level P4 function."""
        params, result_type = self._function_signatures[name]
        if len(args) != len(params):
            raise self.fail(node, f"function {name} takes {len(params)} arguments, got {len(args)}")
        returned = None if isinstance(result_type, VoidT) else result_type
        return Expr(self.call_with_copies(f"fn_{name}", params, args, node, exprs), returned)

    def gen_function(self, name: str) -> None:
        """A top-level P4 function with `in` (or composite inout) parameters and a scalar result."""
        node = self.ir.functions[name]
        proto = node.children[1]
        if proto.children[2] is not None:
            raise self.fail(proto, "generic functions are not supported")
        result_type = self.resolve_type(proto.children[0])
        params = []
        scope = Scope({}, self.global_scope)
        plist = proto.children[3]
        for p in plist.children if plist is not None else []:
            if p is None:
                continue
            direction = str(p.children[1].children[0]) if p.children[1] is not None else None
            ptype = self.resolve_type(p.children[2])
            pname = self.name_of(p.children[3])
            params.append((pname, direction, ptype))
            read_only = READ_ONLY if direction in ("in", None) else None
            scope.names[pname] = Binding("var", f"a_{pname}", ptype, read_only)
        self._function_signatures[name] = (params, result_type)
        self.control_prefix = ""
        self._function_result = result_type
        self.code.add(0, f"def fn_{name}({', '.join('a_' + p for p, _, _ in params)}):")
        ctx = BlockContext(scope, "function", "")
        outs = scalar_outs(params)
        self._return_tail = return_tail(outs)
        before = len(self.code.lines)
        self.gen_block(node.children[2], ctx, 1)
        if outs:
            self.code.add(1, f"return (None{self._return_tail})")
        elif len(self.code.lines) == before:
            self.code.add(1, "pass")
        self._return_tail = None
        self.code.add(0, "")

    def _action_args(self, spec: ActionSpec, args: list, node, exprs: ExpressionCompiler) -> list[str]:
        """Python sources of the arguments of a direct action call."""
        decl = self._action_decl_params(spec)
        if len(args) != len(decl):
            raise self.fail(node, f"action {spec.name} takes {len(decl)} arguments, got {len(args)}")
        return [
            self._arg_src(arg, ptype, exprs, direction in ("out", "inout"))
            for arg, (_, direction, ptype) in zip(args, decl, strict=True)
        ]

    def union_siblings(self, header_node, exprs: ExpressionCompiler) -> list[str]:
        """Sources of the other headers of the header_union `header_node` is a member of (else none).

        Making one header of a union valid makes the others invalid (P4_16 8.20).
        """
        if not (isinstance(header_node, Tree) and header_node.data == "member"):
            return []
        parent = ExpressionCompiler(self, exprs.scope, for_write=True).compile(header_node.children[0])
        if not (isinstance(parent.type, StructLikeT) and parent.type.kind == "header_union"):
            return []
        member = self.name_of(header_node.children[1])
        return [f"{parent.src}.f_{name}" for name, _ in parent.type.fields if name != member]

    def _action_decl_params(self, spec: ActionSpec):
        """(name, direction, type) of an action's parameters."""
        return self._action_param_types.get(spec.name, [])

    def _arg_src(self, arg, ptype: P4Type, exprs: ExpressionCompiler, writable: bool = False) -> str:
        """Source of one argument for a parameter of a given type (headers and structs by reference)."""
        if isinstance(ptype, StructLikeT | StackT):
            expr = ExpressionCompiler(self, exprs.scope, for_write=writable).compile(arg)
            if not same_type(expr.type, ptype):
                raise self.fail(arg, f"type mismatch: expected {ptype}, got {expr.type}")
            return expr.src
        return exprs.coerce(exprs.compile(arg), ptype, arg).src

    def _method_call(
        self, base: Expr, method: str, args, node, exprs: ExpressionCompiler, ctx, indent
    ) -> None:
        """A method call statement on a header, stack, table, packet or extern instance."""
        c = self.code
        if isinstance(base.type, StructLikeT) and base.kind == "value":
            if method in ("setValid", "setInvalid"):
                if args:
                    raise self.fail(node, f"{method}() takes no arguments")
                if method == "setValid":
                    for sibling in self.union_siblings(node.children[0].children[0], exprs):
                        c.add(indent, f"{sibling}._v = False")
                c.add(indent, f"{base.src}._v = {method == 'setValid'}")
                return
            if method == "isValid":
                return
        if isinstance(base.type, StackT) and method in ("push_front", "pop_front"):
            if len(args) != 1:
                raise self.fail(node, f"{method}(count) takes one argument")
            count = self.constant_int(args[0])
            c.add(indent, f"{base.src}.{method}({count})")
            return
        if base.kind == "table" and method == "apply":
            if args:
                raise self.fail(node, "apply() takes no arguments")
            self.note_table_apply(base.info, node)
            for line in base.info.apply_lines:  # inlined: the control function has the same locals
                c.add(indent, line)
            return
        if base.kind == "packet_in":
            too_short = self.ir.errors.get("PacketTooShort", 1)
            if method == "extract":
                if len(args) not in (1, 2):
                    raise self.fail(node, "extract takes a header (and the bits of its varbit field)")
                target = ExpressionCompiler(self, exprs.scope, for_write=True).compile(args[0])
                if not (isinstance(target.type, StructLikeT) and target.type.kind == "header"):
                    raise self.fail(args[0], "extract needs a header")
                varbit_bits = None
                if (len(args) == 2) != (target.type.varbit_field() is not None):
                    raise self.fail(
                        node, "extract takes a second argument exactly for a header with a varbit field"
                    )
                if len(args) == 2:
                    bits = exprs.compile(args[1])
                    if not isinstance(bits.type, BitT | InfIntT):
                        raise self.fail(args[1], "the varbit size must be a bit<W> value")
                    varbit_bits = bits.src
                if isinstance(target.info, tuple) and target.info[0] == "stack_next":
                    stack = target.info[1]
                    sooob = self.ir.errors.get("StackOutOfBounds", 0)
                    size = stack.type.size
                    c.add(indent, f"_st = {stack.src}; _n = _st.nxt")
                    c.add(indent, f"if _n >= {size}: raise ParserError({sooob})")
                    c.add(indent, "_h = _st.items[_n] = _st.cls()")
                    for line in self.extract_lines(target.type, "_h", varbit_bits):
                        c.add(indent, line)
                    c.add(indent, "_st.nxt = _n + 1")
                else:
                    c.add(indent, f"_h = {target.src}")
                    for line in self.extract_lines(target.type, "_h", varbit_bits):
                        c.add(indent, line)
                    for sibling in self.union_siblings(args[0], exprs):
                        c.add(indent, f"{sibling}._v = False")
                return
            if method == "advance":
                if len(args) != 1:
                    raise self.fail(node, "advance(bits) takes one argument")
                bits = exprs.compile(args[0], expected=BitT(32))
                c.add(indent, f"pk.advance({bits.src}, {too_short})")
                return
            raise self.fail(node, f"packet_in.{method} is not supported as a statement")
        if base.kind == "packet_out" and method == "emit":
            if len(args) != 1:
                raise self.fail(node, "emit(header) takes one argument")
            target = exprs.compile(args[0])
            self._emit(target, args[0], indent)
            return
        if base.kind == "instance":
            self._instance_call(base, method, args, node, exprs, ctx, indent)
            return
        raise self.fail(node, f"method {method} is not supported here")

    def _lvalue(self, node, exprs: ExpressionCompiler) -> Expr:
        """An assignable expression (out argument)."""
        if isinstance(node, Tree) and node.data == "slice":
            raise self.fail(node, "a slice cannot be an out argument here")
        target = ExpressionCompiler(self, exprs.scope, for_write=True).compile(node)
        if target.kind != "value" or target.const is not None:
            raise self.fail(node, "an assignable value is required here")
        return target

    def call_expression(self, exprs: ExpressionCompiler, callee: Expr, args: list, node) -> Expr | None:
        """Calls usable inside expressions beyond those ExpressionCompiler knows: P4 functions."""
        if callee.kind == "function":
            result = self._function_call(callee.info, args, node, exprs)
            if result.type is None:
                raise self.fail(node, f"function {callee.info} returns no value")
            return result
        return None
