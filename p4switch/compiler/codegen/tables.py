"""Tables: the control-plane spec, const entries, and the apply code (lookup, then the action)."""

from __future__ import annotations

from lark import Tree

from p4switch.compiler.codegen.common import (
    MATCH_KINDS,
    TableInfo,
    expression_text,
    int_src,
)
from p4switch.compiler.expressions import Binding, ExpressionCompiler, Scope
from p4switch.compiler.model import (
    ActionRefSpec,
    ActionSpec,
    ConstEntrySpec,
    KeySpec,
    TableSpec,
)
from p4switch.compiler.types import (
    BitT,
    BoolT,
    EnumT,
    ErrorT,
    IntT,
    P4Type,
    StructLikeT,
    mask,
    width_of,
)


class TableGen:
    """Tables: the control-plane spec, const entries, and the apply code (lookup, then the action)."""

    def gen_table(self, node: Tree, scope: Scope, params) -> None:
        """A table: its spec for the control plane and its apply function."""
        ann = self.annotations(node.children[0])
        local = self.name_of(node.children[1])
        fq = self.fq_name(local, ann)
        gname = "T_" + self.py_ident(fq)
        fn = "tap_" + self.py_ident(fq)
        exprs = ExpressionCompiler(self, scope)
        keys: list[KeySpec] = []
        key_srcs: list[str] = []
        key_types: list[P4Type] = []
        action_refs: list[ActionRefSpec] = []
        action_specs: dict[str, ActionSpec] = {}
        bound_functions: dict[str, str] = {}
        bound_args: dict[str, list] = {}  # action -> the directional arguments the actions list binds
        default = None
        default_const = False
        size = 1024
        const_entries_node = None
        direct_counter = None
        direct_meter = None
        seen: set[str] = set()
        for prop in node.children[2:]:
            kind = prop.data
            pname = kind
            if kind == "table_simple_property":
                pname = self.name_of(prop.children[2])
            if pname in seen:
                raise self.fail(prop, f"table property {pname} given twice")
            seen.add(pname)
            if kind == "table_key":
                for element in prop.children:
                    expr_node, mk_node, kann_node = element.children
                    kann = self.annotations(kann_node)
                    mk = self.name_of(mk_node)
                    if mk not in MATCH_KINDS:
                        raise self.fail(mk_node, f"match kind {mk} is not supported")
                    expr = exprs.compile(expr_node)
                    if expr.kind == "value" and isinstance(expr.type, ErrorT):  # error codes: bit<32> (bmv2)
                        kname = kann["name"][0] if "name" in kann else self._key_name(expr_node, exprs)
                        keys.append(KeySpec(kname, mk, 32, kann, p4info_width=0))
                        key_srcs.append(expr.src)
                        key_types.append(BitT(32))
                        continue
                    if expr.kind != "value" or not isinstance(expr.type, BitT | IntT | BoolT | EnumT):
                        raise self.fail(
                            expr_node, "table keys must be bit<W>, int<W>, bool or serializable enum values"
                        )
                    width = width_of(expr.type)
                    kname = kann["name"][0] if "name" in kann else self._key_name(expr_node, exprs)
                    keys.append(KeySpec(kname, mk, width, kann))
                    key_srcs.append(int_src(expr))
                    key_types.append(expr.type)
            elif kind == "table_actions":
                for ref in prop.children:
                    rann = self.annotations(ref.children[0])
                    listed = ref.children[2] if ref.data == "action_ref_args" else None
                    ref_args = listed.children if listed is not None else []
                    spec = self.resolve_action(ref.children[1], scope)
                    bound = [a for a in ref_args if a is not None]
                    if bound:
                        bound_functions[spec.name] = self._bound_action(spec, bound, ref, scope, params, fq)
                        bound_args[self.name_of(ref.children[1])] = bound
                    scope_kind = "TABLE_AND_DEFAULT"
                    if "tableonly" in rann:
                        scope_kind = "TABLE_ONLY"
                    elif "defaultonly" in rann:
                        scope_kind = "DEFAULT_ONLY"
                    if spec.name in action_specs:
                        raise self.fail(ref, f"action {spec.name} listed twice")
                    action_refs.append(ActionRefSpec(spec.name, scope_kind, rann))
                    action_specs[self.name_of(ref.children[1])] = spec
            elif kind in ("table_entries", "table_entries_mutable"):
                if kind == "table_entries_mutable":
                    raise self.fail(prop, "non-const table entries are not supported (use const entries)")
                const_entries_node = prop
            elif kind == "table_simple_property":
                _, const_tok, _, value = prop.children
                if pname == "default_action":
                    default = value
                    default_const = const_tok is not None
                elif pname == "size":
                    size = self.constant_int(value)
                elif pname == "counters":
                    direct_counter = self._attach_direct(value, scope, "direct_counter", fq)
                elif pname == "meters":
                    direct_meter = self._attach_direct(value, scope, "direct_meter", fq)
                elif pname == "implementation":
                    raise self.fail(prop, f"table property {pname} is not supported by the embedded target")
                elif pname == "support_timeout":
                    pass
                else:
                    raise self.fail(prop, f"unknown table property {pname}")
        if "table_actions" not in seen:
            raise self.fail(node, f"table {local} has no actions property")
        if default is None:
            # as p4c does: the default action is NoAction, listed as a default-only action if absent
            default_args = ()
            if "NoAction" not in self.model.actions:
                raise self.fail(node, "table without default_action needs core's NoAction")
            default_spec = self.model.actions["NoAction"]
            if "NoAction" not in [r.action for r in action_refs]:
                action_refs.append(ActionRefSpec("NoAction", "DEFAULT_ONLY", {"defaultonly": []}))
                action_specs["NoAction"] = default_spec
        else:
            default_spec, default_args = self._action_call(default, scope, action_specs, bound_args)
        spec = TableSpec(
            fq,
            gname,
            keys,
            action_refs,
            default_spec.name,
            tuple(default_args),
            default_const,
            size,
            None,
            direct_counter.name if direct_counter else None,
            direct_meter.name if direct_meter else None,
            ann,
            hidden="hidden" in ann,
            bound_functions=bound_functions,
        )
        if const_entries_node is not None:
            spec.const_entries = self._const_entries(
                const_entries_node, keys, key_types, scope, action_specs, bound_args
            )
        if fq in self.model.tables:
            raise self.fail(node, f"duplicate table name {fq}")
        self.model.tables[fq] = spec
        info = TableInfo(spec, fn, {n: s.aid for n, s in action_specs.items()})
        scope.names[local] = Binding("table", gname, None, info)
        c = self.code
        c.add(0, f"def {fn}(L):")
        self.prologue(params, 1)
        key_tuple = "(" + ", ".join(key_srcs) + ("," if len(key_srcs) == 1 else "") + ")"
        lines = []
        if all(k.match_kind == "exact" for k in keys):
            lines.append(f"e = {gname}.by_key.get({key_tuple}) or {gname}.default")
        else:
            lines.append(f"e = {gname}.lookup({key_tuple})")
        if direct_meter is not None:  # its colour, for direct_meter.read() in the entry's action
            amount = "_sm.f_packet_length" if direct_meter.unit == "bytes" else "1"
            execute = f"e.meter.execute(_sm.f_ingress_global_timestamp, {amount})"
            lines.append(f"_sm._dm = None if e.meter is None else {execute}")
        lines.append("e.call(L)")
        if direct_counter is not None:
            lines.append("if e.hit: e.counts[0] += 1; e.counts[1] += _sm.f_packet_length")
        for line in lines:
            c.add(1, line)
        info.apply_lines = tuple(lines)
        self._tables_by_function[fn] = info
        c.add(1, "return e")
        c.add(0, "")

    def _attach_direct(self, value, scope: Scope, kind: str, table: str):
        """The spec of the direct counter or meter a table property (``counters``, ``meters``) names."""
        binding = scope.lookup(expression_text(value))
        if binding is None or binding.kind != "instance" or binding.info.type_name != kind:
            raise self.fail(
                value, f"{'counters' if kind == 'direct_counter' else 'meters'} = must name a {kind}"
            )
        spec = binding.info.spec
        if spec.table is not None:
            raise self.fail(value, f"{kind.replace('_', ' ')} {spec.name} is attached to two tables")
        spec.table = table
        return spec

    def _bound_action(self, spec: ActionSpec, bound: list, ref, scope: Scope, params, table: str) -> str:
        """``actions = { a(x); }``: a function running `a` with x bound and the entry's own parameters."""
        decl = self._action_decl_params(spec)
        directional = [p for p in decl if p[1] is not None]
        if len(bound) != len(directional):
            raise self.fail(
                ref, f"action {spec.name} takes {len(directional)} bound arguments, got {len(bound)}"
            )
        function = f"actb_{self.py_ident(table)}__{self.py_ident(spec.name)}"
        own = [f"a_{p.name}" for p in spec.params]
        self.code.add(0, f"def {function}({', '.join([*own, 'L'])}):")
        self.prologue(params, 1)
        exprs = ExpressionCompiler(self, scope)
        self.code.add(1, self.call_with_copies(spec.function, directional, bound, ref, exprs, (*own, "L")))
        self.code.add(0, "")
        return function

    def _key_name(self, node, exprs: ExpressionCompiler) -> str:
        """A key's P4Info name as p4c writes it (``$valid$`` for the isValid() of a union member)."""
        text = expression_text(node)
        callee = node.children[0] if isinstance(node, Tree) and node.data == "call" else None
        if isinstance(callee, Tree) and callee.data == "member" and text.endswith(".isValid()"):
            header = callee.children[0]
            if isinstance(header, Tree) and header.data == "member":
                parent = exprs.compile(header.children[0])
                if isinstance(parent.type, StructLikeT) and parent.type.kind == "header_union":
                    return f"{expression_text(header)}.$valid$"
        return text

    def _action_call(
        self, node, scope: Scope, allowed: dict[str, ActionSpec], bound_args: dict[str, list] | None = None
    ) -> tuple[ActionSpec, list[int]]:
        """An action call with constant arguments (default_action, const entries).

        For an action whose directional arguments the actions list binds (``a(hdr.x)``), the call
        gives them first, as written there (``default_action = a(hdr.x, 5)``).
        """
        if isinstance(node, Tree) and node.data == "call":
            callee, args_node = node.children
            args = [a for a in (args_node.children if args_node is not None else []) if a is not None]
        elif isinstance(node, Tree) and node.data == "action_ref_entry":
            callee, args_node = node.children
            args = [a for a in (args_node.children if args_node is not None else []) if a is not None]
        else:
            callee, args = node, []
        name = expression_text(callee)
        if name not in allowed:
            raise self.fail(node, f"action {name} is not in the table's actions list")
        spec = allowed[name]
        bound = (bound_args or {}).get(name, [])
        if bound and len(args) == len(bound) + len(spec.params):
            for given, listed in zip(args, bound, strict=False):
                if expression_text(given) != expression_text(listed):
                    raise self.fail(
                        given,
                        f"{expression_text(given)} is not the argument the actions list binds for {name}",
                    )
            args = args[len(bound) :]
        if len(args) != len(spec.params):
            raise self.fail(
                node, f"action {name} takes {len(spec.params)} control-plane arguments, got {len(args)}"
            )
        values = []
        exprs = ExpressionCompiler(self, scope)
        for arg, param in zip(args, spec.params, strict=True):
            expr = exprs.compile(arg)
            if expr.const is None:
                raise self.fail(arg, "action arguments here must be compile-time constants")
            values.append(int(expr.const) & mask(param.width))
        return spec, values

    def _const_entries(
        self, node: Tree, keys, key_types, scope: Scope, allowed, bound_args: dict[str, list] | None = None
    ) -> list[ConstEntrySpec]:
        """const entries in the control-plane match format, first entry highest priority."""
        entries_nodes = [e for e in node.children if isinstance(e, Tree) and e.data == "entry"]
        exprs = ExpressionCompiler(self, scope)
        result = []
        given = [self.annotations(entry.children[0]).get("priority") for entry in entries_nodes]
        priority = len(entries_nodes) + 1
        for index, entry in enumerate(entries_nodes):
            _, keyset, action_node = entry.children
            # @priority(N): larger wins (P4_16's largest_priority_wins); an entry without one
            # ranks just below the entry before it, the first entry highest when none has one
            if given[index]:
                priority = int(given[index][0])
            else:
                priority = max(priority - 1, 1) if any(given) else len(entries_nodes) - index
            if isinstance(keyset, Tree) and keyset.data in ("tuple_keyset_expression", "tuple_keyset_one"):
                elements = keyset.children
            else:
                elements = [keyset]
            if len(elements) != len(keys):
                raise self.fail(keyset, f"entry has {len(elements)} key values, table has {len(keys)} keys")
            match = {}
            for element, key, ktype in zip(elements, keys, key_types, strict=True):
                value = self._entry_key_value(element, key, ktype, exprs)
                if value is not None:
                    match[key.name] = value
            spec, args = self._action_call(action_node, scope, allowed, bound_args)
            result.append(ConstEntrySpec(match, spec.name, tuple(args), priority))
        return result

    def _entry_key_value(self, element, key: KeySpec, ktype: P4Type, exprs: ExpressionCompiler):
        """One key of a const entry in the match format of its kind (None = wildcard)."""
        wildcard = isinstance(element, Tree) and element.data in ("default_keyset", "dont_care_keyset")
        full = mask(key.width)
        if wildcard:
            if key.match_kind == "exact":
                raise self.fail(element, f"exact key {key.name} cannot be a wildcard")
            return None
        if isinstance(element, Tree) and element.data == "mask_keyset":
            value = self.keyset_value(element.children[0], ktype, exprs)
            msk = self.keyset_value(element.children[1], ktype, exprs)
            if key.match_kind == "ternary":
                return (value & msk, msk)
            if key.match_kind == "lpm":
                plen = bin(msk).count("1")
                if msk != (full ^ mask(key.width - plen)):
                    raise self.fail(element, f"mask of lpm key {key.name} is not a prefix")
                return (value & msk, plen)
            raise self.fail(element, f"a mask is not allowed for {key.match_kind} key {key.name}")
        if isinstance(element, Tree) and element.data == "range_keyset":
            if key.match_kind != "range":
                raise self.fail(element, f"a range is not allowed for {key.match_kind} key {key.name}")
            return (
                self.keyset_value(element.children[0], ktype, exprs),
                self.keyset_value(element.children[1], ktype, exprs),
            )
        value = self.keyset_value(element, ktype, exprs)
        if key.match_kind in ("exact", "optional"):
            return value
        if key.match_kind == "ternary":
            return (value, full)
        if key.match_kind == "lpm":
            return (value, key.width)
        return (value, value)

    def note_table_apply(self, info: TableInfo, node) -> None:
        """Record a place that applies a table: bmv2 (strict mode) allows one per table."""
        sites = self._table_applies.setdefault(info.spec.name, [])
        sites.append(node)
        if self.strict and len(sites) > 1:
            raise self.fail(
                node,
                f"table {info.spec.name} is applied more than once "
                "(p4c's bmv2 back end allows one apply per table)",
            )
