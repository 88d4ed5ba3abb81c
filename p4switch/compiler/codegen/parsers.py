"""Parsers: one function per parser, states as a loop over the current state, select transitions."""

from __future__ import annotations

from lark import Tree

from p4switch.compiler.codegen.common import (
    BlockContext,
    Code,
    int_src,
)
from p4switch.compiler.expressions import Expr, ExpressionCompiler, Scope
from p4switch.compiler.types import (
    P4Type,
)


class ParserGen:
    """Parsers: one function per parser, states as a loop over the current state, select transitions."""

    def gen_parser(self, node: Tree, instance: str | None = None) -> None:
        """The parser function and one function per state (`instance`: a sub-parser instance's full name)."""
        name = instance or self.name_of(node.children[1])
        self.control_prefix = name
        name = self.py_ident(name)
        params = self.block_params(node)
        if node.children[4] is not None and any(c is not None for c in node.children[4].children):
            raise self.fail(node, "parsers with constructor parameters are not supported")
        scope = Scope({}, self.global_scope, in_parser=True)
        for pname, direction, ptype in params:
            scope.names[pname] = self.param_binding(pname, ptype, direction)
        locals_, states = [], []
        for child in node.children[5:]:
            if isinstance(child, Tree) and child.data == "parser_state":
                states.append(child)
            elif isinstance(child, Tree):
                locals_.append(child)
        slot_names: list[str] = []
        init = Code()
        ctx = BlockContext(scope, "parser", name)
        for local in locals_:
            self.gen_block_local(local, ctx, init, slot_names)
        state_names = {self.name_of(s.children[1]) for s in states}
        if "start" not in state_names:
            raise self.fail(node, f"parser {name} has no start state")
        pnames = ", ".join(self.param_binding(p, t).src for p, _, t in params)
        timeout = self.ir.errors.get("ParserTimeout", 0)
        self.gen_context_setup(name, slot_names, init, pnames, f"def prs_{name}(_sm, {pnames}):")
        order = [self.name_of(s.children[1]) for s in states]
        order.remove("start")
        order.insert(0, "start")
        self._state_index = {sname: index for index, sname in enumerate(order)}
        by_name = {self.name_of(s.children[1]): s for s in states}
        self.code.add(1, "st = 0")
        self.code.add(1, "steps = 0")
        self.code.add(1, "while True:")
        self.code.add(2, "steps += 1")
        self.code.add(2, f"if steps > 4096: raise ParserError({timeout})")
        for index, sname in enumerate(order):
            self.code.add(2, f"{'if' if index == 0 else 'elif'} st == {index}:  # state {sname}")
            self.gen_state(by_name[sname], name, scope, state_names, 3)
        outs = [p for p, direction, t in params if direction in ("out", "inout") and t.is_scalar()]
        if outs:  # a sub-parser's out/inout scalars, copied out by its caller (see codegen.copies)
            self.code.add(1, f"return (None{''.join(f', p_{p}' for p in outs)})")
        self.code.add(0, "")

    def gen_state(self, node: Tree, parser: str, scope: Scope, state_names: set[str], indent: int) -> None:
        """One parser state: statements, then `st = next; continue`, `break` (accept) or a parser error."""
        ctx = BlockContext(scope.child(), "state", parser)
        for stmt in node.children[2:-1]:
            self.gen_statement(stmt, ctx, indent)
        self.gen_transition(node.children[-1], ctx, parser, state_names, indent)

    def state_target(self, name_node, parser: str, state_names: set[str]) -> str:
        """The next state's index, "ACCEPT" or "REJECT"."""
        target = self.name_of(name_node)
        if target == "accept":
            return "ACCEPT"
        if target == "reject":
            return "REJECT"
        if target not in state_names:
            raise self.fail(name_node, f"unknown parser state {target}")
        return str(self._state_index[target])

    def gen_transition(
        self, node: Tree, ctx: BlockContext, parser: str, state_names: set[str], indent: int
    ) -> None:
        """transition to a state or select."""
        inner = node.children[0]
        c = self.code
        if inner.data == "transition_name":
            target = self.state_target(inner.children[0], parser, state_names)
            c.add(indent, self._goto(target))
            return
        keys_node, *cases = inner.children
        exprs = ExpressionCompiler(self, ctx.scope)
        keys = [exprs.compile(k) for k in keys_node.children]
        key_vars = []
        for key, knode in zip(keys, keys_node.children, strict=True):
            if key.kind != "value" or not (key.type is not None and key.type.is_scalar()):
                raise self.fail(knode, "select keys must be scalar values")
            var = ctx.temp("k")
            c.add(indent, f"{var} = {int_src(key)}")
            key_vars.append(var)
        for case in cases:
            keyset, target_node = case.children
            target = self.state_target(target_node, parser, state_names)
            cond = self.keyset_condition(keyset, keys, key_vars, exprs)
            if cond == "True":
                c.add(indent, self._goto(target))
                return
            c.add(indent, f"if {cond}: {self._goto(target)}")
        c.add(indent, f"raise ParserError({self.ir.errors.get('NoMatch', 2)})")

    @staticmethod
    def _goto(target: str) -> str:
        """Python statement that leaves a parser state for `target`."""
        if target == "REJECT":
            return "raise ParserError(0)"
        if target == "ACCEPT":
            return "break"
        return f"st = {target}; continue"

    def keyset_condition(
        self, keyset, keys: list[Expr], key_vars: list[str], exprs: ExpressionCompiler
    ) -> str:
        """Python condition for a select case keyset."""
        if isinstance(keyset, Tree) and keyset.data == "tuple_keyset_expression":
            elements = keyset.children
        elif isinstance(keyset, Tree) and keyset.data == "tuple_keyset_one":
            elements = keyset.children
        elif isinstance(keyset, Tree) and keyset.data in ("default_keyset", "dont_care_keyset"):
            return "True"
        else:
            elements = [keyset]
        if len(elements) != len(keys):
            raise self.fail(keyset, f"keyset has {len(elements)} elements, select has {len(keys)} keys")
        conds = []
        for element, key, var in zip(elements, keys, key_vars, strict=True):
            cond = self.simple_keyset_condition(element, key.type, var, exprs)
            if cond != "True":
                conds.append(cond)
        return " and ".join(conds) if conds else "True"

    def keyset_value(self, node, type_: P4Type, exprs: ExpressionCompiler) -> int:
        """Constant value of a keyset component as an int of the key's type."""
        expr = exprs.compile(node)
        if expr.const is None:
            raise self.fail(node, "keyset values must be compile-time constants (value_set is not supported)")
        expr = exprs.coerce(expr, type_, node)
        return int(expr.const)

    def simple_keyset_condition(self, element, type_: P4Type, var: str, exprs: ExpressionCompiler) -> str:
        """Condition for one keyset component: value, mask, range, default."""
        if isinstance(element, Tree) and element.data in ("default_keyset", "dont_care_keyset"):
            return "True"
        if isinstance(element, Tree) and element.data == "mask_keyset":
            value = self.keyset_value(element.children[0], type_, exprs)
            msk = self.keyset_value(element.children[1], type_, exprs)
            return f"({var} & {msk}) == {value & msk}"
        if isinstance(element, Tree) and element.data == "range_keyset":
            low = self.keyset_value(element.children[0], type_, exprs)
            high = self.keyset_value(element.children[1], type_, exprs)
            return f"{low} <= {var} <= {high}"
        return f"{var} == {self.keyset_value(element, type_, exprs)}"
