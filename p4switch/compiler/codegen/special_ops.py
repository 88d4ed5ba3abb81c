"""v1model's packet replication externs: clone, resubmit, recirculate (with @field_list) and truncate.

A call records a request in the standard metadata object (``_sm._clone``, ``_resub``,
``_recirc``, ``_trunc``); p4switch.runtime.traffic_manager acts on it at the end of
ingress or egress, as simple_switch does. The preserved metadata is a field list: the
user metadata fields annotated ``@field_list(N)``, copied by a generated function
``FL_N(src_meta, src_sm, dst_meta, dst_sm)`` with the values at the end of the pipeline
that made the request (as simple_switch copies them). The older forms ``clone3``,
``resubmit`` and ``recirculate`` with a data argument are accepted with an empty list
``{}`` only.
"""

from __future__ import annotations

from p4switch.compiler.expressions import ExpressionCompiler
from p4switch.compiler.types import BitT, EnumT, StackT, StructLikeT

SPECIAL_OPS = {
    "clone",
    "clone3",
    "clone_preserving_field_list",
    "resubmit",
    "resubmit_preserving_field_list",
    "recirculate",
    "recirculate_preserving_field_list",
    "truncate",
}
NO_FIELDS = "FL_none"


class SpecialOpsGen:
    """Code generation of the replication externs and of the driver parts they need."""

    def _special_op_call(self, name: str, args, node, exprs: ExpressionCompiler, indent: int) -> None:
        """One call of clone/clone3/clone_preserving_field_list/resubmit*/recirculate*/truncate."""
        c = self.code
        self.model.uses_special_ops = True
        self.model.uses_externs = True
        if name == "truncate":
            if len(args) != 1:
                raise self.fail(node, "truncate(length) takes one argument")
            length = exprs.compile(args[0], expected=BitT(32))
            c.add(indent, f"_sm._trunc = {length.src}")
            return
        if name.startswith("clone"):
            wanted = {"clone": 2, "clone3": 3, "clone_preserving_field_list": 3}[name]
            if len(args) != wanted:
                raise self.fail(node, f"{name} takes {wanted} arguments, got {len(args)}")
            kind = exprs.compile(args[0])
            if not (isinstance(kind.type, EnumT) and kind.type.name == "CloneType"):
                raise self.fail(args[0], "the first argument of clone must be CloneType.I2E or CloneType.E2E")
            self._check_role(node, name)
            session = exprs.compile(args[1], expected=BitT(32))
            if name == "clone":
                copier = NO_FIELDS
            elif name == "clone3":
                copier = self._empty_field_list(args[2], name, exprs)
            else:
                copier = self._field_list_copier(args[2])
            c.add(indent, f"_sm._clone = ({session.src}, {copier})")
            return
        request = "_resub" if name.startswith("resubmit") else "_recirc"
        if len(args) != 1:
            raise self.fail(node, f"{name} takes one argument")
        if name.endswith("_preserving_field_list"):
            copier = self._field_list_copier(args[0])
        else:
            copier = self._empty_field_list(args[0], name, exprs)
        self._check_role(node, name)
        c.add(indent, f"_sm.{request} = {copier}")

    def _check_role(self, node, name: str) -> None:
        """Only ingress and egress (and what they apply) can make requests: simple_switch acts on
        them at the end of those two (top-level actions are generated outside any role)."""
        if self.current_role in ("verify_checksum", "compute_checksum", "deparser"):
            raise self.fail(node, f"{name} is only possible in the ingress and egress controls")

    def _empty_field_list(self, node, name: str, exprs: ExpressionCompiler) -> str:
        """The copier of a data argument, which must be the empty list ``{}``."""
        data = exprs.compile(node)
        if isinstance(data.items, list) and not data.items:
            return NO_FIELDS
        preserving = name.rstrip("3") + "_preserving_field_list"
        raise self.fail(
            node,
            f"{name} with a non-empty data argument is not supported by the embedded target: "
            f"annotate the metadata fields with @field_list(N) and call {preserving}",
        )

    def _field_list_copier(self, node) -> str:
        """The generated copier of field list N (a compile-time constant)."""
        index = self.constant_int(node)
        if not 0 <= index <= 255:
            raise self.fail(node, f"field list index {index} out of 0..255 (bit<8>)")
        self._field_lists_used.add(index)
        return f"FL_{index}"

    # ----- module-level parts -----------------------------------------------------------------
    def gen_field_lists(self, metadata: StructLikeT) -> None:
        """FL_none and one FL_N per field list used: copy the annotated metadata fields."""
        c = self.code
        c.add(0, f"def {NO_FIELDS}(src_meta, src_sm, dst_meta, dst_sm):")
        c.add(1, "pass")
        c.add(0, "")
        for index in sorted(self._field_lists_used):
            paths = self._field_list_paths(metadata, "", index)
            self.model.field_lists[index] = [path for path, _ in paths]
            c.add(0, f"def FL_{index}(src_meta, src_sm, dst_meta, dst_sm):")
            if not paths:
                c.add(1, "pass")
            for path, composite in paths:
                value = f"src_meta{path}.copy()" if composite else f"src_meta{path}"
                c.add(1, f"dst_meta{path} = {value}")
            c.add(0, "")

    def _field_list_paths(self, struct: StructLikeT, prefix: str, index: int) -> list[tuple[str, bool]]:
        """(attribute path, composite) of every field of `struct` in field list `index`."""
        paths: list[tuple[str, bool]] = []
        for fname, ftype in struct.fields:
            path = f"{prefix}.f_{fname}"
            node = struct.field_annotations.get(fname)
            indices = []
            if node is not None:
                for ann in node.children:
                    if str(ann.children[0])[1:] != "field_list":
                        continue
                    arguments = ann.children[1].children if len(ann.children) > 1 and ann.children[1] else []
                    if not arguments:
                        raise self.fail(ann, "@field_list needs at least one field list index")
                    indices += [self.constant_int(arg) for arg in arguments]
            if index in indices:
                paths.append((path, isinstance(ftype, StructLikeT | StackT)))
            elif isinstance(ftype, StructLikeT) and ftype.kind == "struct":
                paths += self._field_list_paths(ftype, path, index)
        return paths

    def gen_special_drivers(self) -> None:
        """run_parser and run_ingress_again: the parser alone, and ingress with given metadata."""
        c = self.code
        c.add(0, "def run_parser(packet, port, ts):")
        self._parser_half()
        c.add(1, "return hdr, pk.data[pk.off:]")
        c.add(0, "")
        c.add(0, "def run_ingress_again(packet, port, ts, meta, sm):")
        self._ingress_half(given_metadata=True)
        c.add(1, "return hdr, meta, sm, pk.data[pk.off:]")
        c.add(0, "")
