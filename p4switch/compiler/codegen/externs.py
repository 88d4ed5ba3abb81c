"""v1model externs: instance methods (counters, registers) and extern functions (hash, checksums)."""

from __future__ import annotations

from p4switch.compiler.codegen.common import (
    SUPPORTED_HASHES,
    UNSUPPORTED_EXTERN_FUNCTIONS,
    InstanceInfo,
    int_src,
)
from p4switch.compiler.codegen.headers import packed_src
from p4switch.compiler.codegen.special_ops import SPECIAL_OPS
from p4switch.compiler.expressions import Expr, ExpressionCompiler, wrap_src
from p4switch.compiler.types import (
    BitT,
    BoolT,
    EnumT,
    ErrorT,
    InfIntT,
    IntT,
    StackT,
    StructLikeT,
    VarbitT,
    mask,
    width_of,
)


class ExternGen:
    """v1model externs: instance methods (counters, registers) and extern functions (hash, checksums)."""

    def _instance_call(
        self, base: Expr, method: str, args, node, exprs: ExpressionCompiler, ctx, indent
    ) -> None:
        """A method of a counter, direct counter or register instance."""
        c = self.code
        info: InstanceInfo = base.info
        if info.type_name == "control":
            if method != "apply":
                raise self.fail(node, f"a control instance has no method {method}")
            if len(args) != len(info.spec):
                raise self.fail(node, f"apply takes {len(info.spec)} arguments, got {len(args)}")
            call = self.call_with_copies(info.global_name, info.spec, args, node, exprs, leading=("_sm",))
            c.add(indent, call)
            return
        if info.type_name == "counter" and method == "count":
            if len(args) != 1:
                raise self.fail(node, "count(index) takes one argument")
            index = exprs.compile(args[0], expected=BitT(32))
            g = info.global_name
            c.add(indent, f"_ci = {index.src}")
            c.add(indent, f"if _ci < {g}.size: {g}.packets[_ci] += 1; {g}.bytes[_ci] += _sm.f_packet_length")
            return
        if info.type_name == "direct_counter" and method == "count":
            return  # counted by the table on every hit
        if info.type_name == "meter" and method == "execute_meter":
            if len(args) != 2:
                raise self.fail(node, "execute_meter(index, result) takes two arguments")
            index = exprs.compile(args[0], expected=BitT(32))
            target = self._meter_target(args[1], exprs)
            amount = "_sm.f_packet_length" if info.spec.unit == "bytes" else "1"
            value = f"{info.global_name}.execute({index.src}, _sm.f_ingress_global_timestamp, {amount})"
            c.add(indent, f"{target.src} = {value}")
            return
        if info.type_name == "direct_meter" and method == "read":
            if len(args) != 1:
                raise self.fail(node, "read(result) takes one argument")
            target = self._meter_target(args[0], exprs)
            c.add(indent, "_mc = getattr(_sm, '_dm', None)  # set when the table's entry was hit")
            c.add(indent, f"if _mc is not None: {target.src} = _mc")
            return
        if info.type_name == "register" and method == "read":
            if len(args) != 2:
                raise self.fail(node, "read(result, index) takes two arguments")
            target = self._lvalue(args[0], exprs)
            (cell,) = info.type_args
            if target.type != cell:
                raise self.fail(args[0], f"register cells are {cell}, result is {target.type}")
            index = exprs.compile(args[1], expected=BitT(32))
            c.add(indent, f"{target.src} = {info.global_name}.read({index.src})")
            return
        if info.type_name == "register" and method == "write":
            if len(args) != 2:
                raise self.fail(node, "write(index, value) takes two arguments")
            (cell,) = info.type_args
            index = exprs.compile(args[0], expected=BitT(32))
            value = exprs.compile(args[1], expected=cell)
            c.add(indent, f"{info.global_name}.write({index.src}, {value.src})")
            return
        raise self.fail(node, f"{info.type_name}.{method} is not supported")

    def _meter_target(self, node, exprs: ExpressionCompiler) -> Expr:
        """Where a meter's colour goes: a bit<W> lvalue wide enough for RED (2)."""
        target = self._lvalue(node, exprs)
        if not isinstance(target.type, BitT) or target.type.width < 2:
            raise self.fail(node, f"a meter's colour goes to a bit<W> of at least 2 bits, not {target.type}")
        return target

    def _data_list(self, node, exprs: ExpressionCompiler) -> list[tuple[str, int]]:
        """(source, width) pairs of a field list for checksums and hashes."""
        expr = exprs.compile(node)
        items = expr.items if isinstance(expr.items, list) else [expr]
        pairs = []
        for item in items:
            if isinstance(item.type, StructLikeT):
                for fname, ftype in item.type.fields:
                    if isinstance(ftype, StructLikeT | StackT):
                        raise self.fail(node, "nested structures in a field list are not supported")
                    if isinstance(ftype, VarbitT):  # its width is known when the packet is
                        field = f"{item.src}.f_{fname}"
                        pairs.append((f"int.from_bytes({field}, 'big')", f"len({field}) * 8"))
                        continue
                    src = int_src(Expr(f"{item.src}.f_{fname}", ftype))
                    if isinstance(ftype, IntT):
                        src = f"({src} & {mask(ftype.width)})"
                    pairs.append((src, width_of(ftype)))
            elif isinstance(item.type, VarbitT):
                pairs.append((f"int.from_bytes({item.src}, 'big')", f"len({item.src}) * 8"))
            elif isinstance(item.type, BitT | IntT | BoolT):
                src = int_src(item)
                if isinstance(item.type, IntT):
                    src = f"({src} & {mask(item.type.width)})"
                pairs.append((src, width_of(item.type)))
            else:
                raise self.fail(
                    node, f"field lists may hold bit<W>, int<W>, bool and headers, not {item.type}"
                )
        return pairs

    def _packed(self, pairs: list, indent: int) -> tuple[str, object]:
        """(value source, width) of a field list; with a varbit field both are computed per packet."""
        if all(isinstance(width, int) for _, width in pairs):
            return packed_src(pairs)
        items = ", ".join(f"({src}, {width})" for src, width in pairs)
        self.code.add(indent, f"_pv, _pw = concat_bits(({items},))")
        return "_pv", "_pw"

    def _algorithm(self, node, exprs: ExpressionCompiler) -> str:
        """The HashAlgorithm member named by an argument (supported ones only)."""
        algo = exprs.compile(node)
        if not (isinstance(algo.type, EnumT) and algo.type.name == "HashAlgorithm" and algo.info):
            raise self.fail(node, "expected a constant HashAlgorithm member")
        if algo.info not in SUPPORTED_HASHES:
            raise self.fail(node, f"HashAlgorithm.{algo.info} is not supported by the embedded target")
        return algo.info

    def _extern_function_call(self, name: str, args, node, exprs: ExpressionCompiler, ctx, indent) -> None:
        """A v1model/core extern function call statement."""
        c = self.code
        if name in SPECIAL_OPS:
            self._special_op_call(name, args, node, exprs, indent)
            return
        if name == "digest":
            self._digest_call(args, node, exprs, ctx, indent)
            return
        if name in UNSUPPORTED_EXTERN_FUNCTIONS:
            raise self.fail(
                node, f"{UNSUPPORTED_EXTERN_FUNCTIONS[name]} is not supported by the embedded target"
            )
        if name != "verify":  # as p4c: any extern function but verify makes P4Info carry type_info
            self.model.uses_externs = True
        if name == "mark_to_drop":
            if len(args) != 1:
                raise self.fail(node, "mark_to_drop(standard_metadata) takes one argument")
            sm = self._lvalue(args[0], exprs)
            if not (isinstance(sm.type, StructLikeT) and sm.type.name == "standard_metadata_t"):
                raise self.fail(args[0], "mark_to_drop needs standard_metadata")
            c.add(indent, f"{sm.src}.f_egress_spec = {self.model.drop_port}; {sm.src}.f_mcast_grp = 0")
            return
        if name == "verify":
            if ctx.kind not in ("state", "parser"):
                raise self.fail(node, "verify() is only allowed in parsers")
            if len(args) != 2:
                raise self.fail(node, "verify(condition, error) takes two arguments")
            cond = exprs.compile(args[0], expected=BoolT())
            err = exprs.compile(args[1], expected=ErrorT())
            c.add(indent, f"if not {cond.src}: raise ParserError({err.src})")
            return
        if name in (
            "verify_checksum",
            "update_checksum",
            "verify_checksum_with_payload",
            "update_checksum_with_payload",
        ):
            if len(args) != 4:
                raise self.fail(node, f"{name}(condition, data, checksum, algorithm) takes four arguments")
            cond = exprs.compile(args[0], expected=BoolT())
            pairs = self._data_list(args[1], exprs)
            if name.endswith("_with_payload"):  # the packet after its parsed headers, as bmv2 (see drivers)
                self.uses_payload = True
                pairs.append(("int.from_bytes(_sm._pl, 'big')", "len(_sm._pl) * 8"))
            if name.startswith("verify_checksum"):
                checksum = exprs.compile(args[2])
            else:
                checksum = self._lvalue(args[2], exprs)
            if not isinstance(checksum.type, BitT):
                raise self.fail(args[2], "the checksum field must be bit<W>")
            algo = self._algorithm(args[3], exprs)
            packed, nbits = self._packed(pairs, indent)
            if algo == "csum16":
                value = f"csum16_value({packed}, {nbits})"
            else:
                value = f"(checksum_value({algo!r}, {packed}, {nbits}) & {mask(checksum.type.width)})"
            if name.startswith("verify_checksum"):
                c.add(indent, f"if {cond.src} and {value} != {checksum.src}: _sm.f_checksum_error = 1")
            else:
                c.add(indent, f"if {cond.src}: {checksum.src} = {value}")
            return
        if name == "hash":
            if len(args) != 5:
                raise self.fail(node, "hash(result, algorithm, base, data, max) takes five arguments")
            result = self._lvalue(args[0], exprs)
            if not isinstance(result.type, BitT):
                raise self.fail(args[0], "hash result must be bit<W>")
            algo = self._algorithm(args[1], exprs)
            base = exprs.compile(args[2])
            pairs = self._data_list(args[3], exprs)
            maximum = exprs.compile(args[4])
            for part, pnode in ((base, args[2]), (maximum, args[4])):
                if not isinstance(part.type, BitT | InfIntT):
                    raise self.fail(pnode, "hash base and max must be bit<W> values")
            packed, nbits = self._packed(pairs, indent)
            value = f"v1model_hash({algo!r}, {base.src}, {packed}, {nbits}, {maximum.src})"
            c.add(indent, f"{result.src} = {wrap_src(value, result.type)}")
            return
        if name == "random":
            if len(args) != 3:
                raise self.fail(node, "random(result, lo, hi) takes three arguments")
            result = self._lvalue(args[0], exprs)
            low = exprs.compile(args[1], expected=result.type)
            high = exprs.compile(args[2], expected=result.type)
            c.add(indent, f"{result.src} = random_between({low.src}, {high.src})")
            return
        if name == "log_msg":
            return
        if name in ("assert", "assume"):
            if len(args) != 1:
                raise self.fail(node, f"{name}(condition) takes one argument")
            cond = exprs.compile(args[0], expected=BoolT())
            c.add(indent, f"if not {cond.src}: raise PacketError('{name} failed')")
            return
        raise self.fail(node, f"extern function {name}() is not supported by the embedded target")
