"""Semantic pass over the parse tree: declarations, types, constants, errors and the v1model package.

The result (ProgramIR) is what code generation and P4Info generation work from:
resolved types, the blocks of the V1Switch package in pipeline order, and the
positions needed for precise error messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lark import Token, Tree

from p4switch.compiler.preprocess import Preprocessed
from p4switch.compiler.types import (
    BitT,
    BoolT,
    EnumT,
    ErrorT,
    ExternT,
    InfIntT,
    IntT,
    MatchKindT,
    NamedBlockT,
    P4Type,
    StackT,
    StringT,
    StructLikeT,
    TupleT,
    VarbitT,
    VoidT,
)
from p4switch.errors import P4CompileError

V1SWITCH_BLOCKS = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")
SUPPORTED_EXTERN_OBJECTS = {"counter", "direct_counter", "register", "packet_in", "packet_out"}


@dataclass
class Const:
    """A compile-time constant: value and type."""

    value: int | bool
    type: P4Type


@dataclass
class ProgramIR:
    """Declarations of a whole program, resolved."""

    source: Preprocessed
    types: dict[str, P4Type] = field(default_factory=dict)
    constants: dict[str, Const] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    match_kinds: list[str] = field(default_factory=list)
    extern_objects: dict[str, Tree] = field(default_factory=dict)
    extern_functions: dict[str, Tree] = field(default_factory=dict)
    actions: dict[str, Tree] = field(default_factory=dict)
    functions: dict[str, Tree] = field(default_factory=dict)
    parsers: dict[str, Tree] = field(default_factory=dict)
    controls: dict[str, Tree] = field(default_factory=dict)
    package_blocks: dict[str, str] = field(default_factory=dict)  # role -> parser/control name
    struct_order: list[StructLikeT] = field(default_factory=list)
    global_instances: list = field(default_factory=list)  # instantiation nodes of top-level externs


def position(source: Preprocessed, node) -> tuple[str, int, int]:
    """(file, line, column) of a tree or token in the original sources."""
    line = column = 0
    if isinstance(node, Token):
        line, column = node.line or 0, node.column or 0
    elif isinstance(node, Tree) and not node.meta.empty:
        line, column = node.meta.line, node.meta.column
    elif isinstance(node, Tree):
        for child in node.children:
            if isinstance(child, Tree | Token):
                return position(source, child)
    file, orig_line = source.origin(line) if line else (source.line_map[0][0] if source.line_map else "?", 0)
    return file, orig_line, column


class Frontend:
    """Helpers shared by the semantic pass and code generation: errors, names, types, annotations."""

    def __init__(self, source: Preprocessed, strict: bool = True) -> None:
        """Start the semantic pass over a preprocessed source."""
        self.source = source
        self.strict = strict
        self.ir = ProgramIR(source)

    # ---------------------------------------------------------------- errors and names
    def fail(self, node, message: str) -> P4CompileError:
        """A P4CompileError at node's position (raise it)."""
        file, line, column = position(self.source, node)
        return P4CompileError(file, line, column, message)

    @staticmethod
    def name_of(node) -> str:
        """The identifier text of a name/decl_name/keyword node."""
        if isinstance(node, Token):
            return str(node)
        if node.data.startswith("kw_"):
            return node.data[3:]
        if node.data in ("name", "decl_name", "type_name", "prefixed_non_type_name", "var"):
            return Frontend.name_of(node.children[0])
        if node.data == "keyword_name":
            return Frontend.name_of(node.children[0])
        raise ValueError(f"not a name: {node.data}")

    def annotations(self, node) -> dict[str, list]:
        """Annotations of an `annotations` subtree as {name: [argument values]}."""
        result: dict[str, list] = {}
        if node is None:
            return result
        for ann in node.children:
            key = str(ann.children[0])[1:]
            values: list = []
            if len(ann.children) > 1 and ann.children[1] is not None:
                for arg in ann.children[1].children:
                    if isinstance(arg, Tree) and arg.data == "string_lit":
                        values.append(str(arg.children[0])[1:-1])
                    elif isinstance(arg, Tree) and arg.data == "integer":
                        values.append(parse_integer(str(arg.children[0]))[0])
                    else:
                        values.append(None)
            result[key] = values
        return result

    # ---------------------------------------------------------------- types
    def resolve_type(self, node, type_params: dict[str, P4Type] | None = None) -> P4Type:
        """The P4Type a type_ref subtree denotes."""
        kind = node.data
        if kind == "bool_type":
            return BoolT()
        if kind == "error_type":
            return ErrorT()
        if kind == "string_type":
            return StringT()
        if kind == "infint_type":
            return InfIntT()
        if kind == "bit1_type":
            return BitT(1)
        if kind in ("bit_type", "int_type"):
            width, _, _ = parse_integer(str(node.children[0]))
            if width <= 0:
                raise self.fail(node, f"type width must be positive, got {width}")
            return BitT(width) if kind == "bit_type" else IntT(width)
        if kind in ("bit_expr_type", "int_expr_type"):
            raise self.fail(node, "type widths given by expressions are not supported; use a literal width")
        if kind == "varbit_type":
            width, _, _ = parse_integer(str(node.children[0]))
            if width <= 0 or width % 8:
                raise self.fail(node, "varbit widths must be whole bytes in the embedded target (as bmv2)")
            return VarbitT(width)
        if kind == "void_type":
            return VoidT()
        if kind in ("type_name", "dot_type_name", "type_var"):
            name = str(node.children[0])
            if type_params and name in type_params:
                return type_params[name]
            found = self.ir.types.get(name)
            if found is None:
                raise self.fail(node, f"unknown type {name}")
            return found
        if kind == "specialized_type":
            base = self.resolve_type(node.children[0], type_params)
            args = tuple(self.resolve_type(a, type_params) for a in node.children[1].children)
            if isinstance(base, ExternT):
                return ExternT(base.name, args)
            if isinstance(base, NamedBlockT) and base.kind == "package":
                return base  # V1Switch<H, M>(...): the blocks' own parameter types say what H and M are
            raise self.fail(node, f"generic type {base} is not supported")
        if kind == "header_stack_type":
            element = self.resolve_type(node.children[0], type_params)
            if not (isinstance(element, StructLikeT) and element.kind in ("header", "header_union")):
                raise self.fail(node, "only stacks of headers or header unions are supported")
            size = self.constant_int(node.children[1])
            if size <= 0:
                raise self.fail(node, "header stack size must be positive")
            return StackT(element, size)
        if kind == "tuple_type":
            return TupleT([self.resolve_type(a, type_params) for a in node.children[0].children])
        if kind == "dont_care_type":
            raise self.fail(node, "type '_' is not supported here")
        raise self.fail(node, f"unsupported type construct '{kind}'")

    def constant_int(self, node) -> int:
        """Value of a compile-time integer expression (literals, constants, + - * << and casts)."""
        value = self.constant_value(node)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(node, "a compile-time integer constant is required here")
        return value

    def constant_value(self, node) -> int | bool:
        """Value of a compile-time constant expression; P4CompileError if it is not one."""
        from p4switch.compiler.expressions import (
            ExpressionCompiler,  # local import: expressions depends on this module
        )

        expr = ExpressionCompiler(self, scope=None).compile(node)
        if expr.const is None:
            raise self.fail(node, "a compile-time constant is required here")
        return expr.const

    # ---------------------------------------------------------------- declarations
    def collect(self, tree: Tree) -> ProgramIR:
        """Record every top-level declaration, in order, and find the V1Switch package."""
        ir = self.ir
        for decl in tree.children:
            if not isinstance(decl, Tree):
                continue
            handler = getattr(self, "_decl_" + decl.data, None)
            if handler is None:
                raise self.fail(decl, f"unsupported declaration '{decl.data}'")
            handler(decl)
        if not ir.package_blocks:
            raise self.fail(tree, "no V1Switch package instantiation named main")
        return ir

    def _decl_empty_decl(self, node: Tree) -> None:
        """Top-level declaration 'empty_decl'."""
        pass

    def _decl_error_decl(self, node: Tree) -> None:
        """Top-level declaration 'error_decl'."""
        self.ir.types["error"] = ErrorT()
        for child in node.children:
            if child is not None:
                name = self.name_of(child)
                if name not in self.ir.errors:
                    self.ir.errors[name] = len(self.ir.errors)

    def _decl_match_kind_decl(self, node: Tree) -> None:
        """Top-level declaration 'match_kind_decl'."""
        for child in node.children:
            if child is not None:
                self.ir.match_kinds.append(self.name_of(child))

    def _decl_typedef_decl(self, node: Tree) -> None:
        """Top-level declaration 'typedef_decl'."""
        _, type_node, name_node = node.children
        self.ir.types[self.name_of(name_node)] = self.resolve_type(type_node)

    def _decl_newtype_decl(self, node: Tree) -> None:
        """Top-level declaration 'newtype_decl'."""
        self._decl_typedef_decl(node)

    def _struct_like(self, node: Tree, kind: str) -> None:
        """A header or struct declaration: resolved fields, byte-aligned headers."""
        annotations, name_node, type_params, *fields = node.children
        if type_params is not None:
            raise self.fail(node, f"generic {kind} declarations are not supported")
        name = self.name_of(name_node)
        decl = StructLikeT(kind, name, [], self.annotations(annotations))
        self.ir.types[name] = decl
        for fnode in fields:
            ftype = self.resolve_type(fnode.children[1])
            fname = self.name_of(fnode.children[2])
            if isinstance(ftype, VarbitT) and (kind != "header" or fnode is not fields[-1]):
                raise self.fail(fnode, "a varbit field must be a header's last field in the embedded target")
            if kind == "header" and not isinstance(ftype, BitT | IntT | BoolT | EnumT | VarbitT):
                raise self.fail(
                    fnode, f"header field {fname} must be bit<W>, int<W>, bool or a serializable enum"
                )
            if kind == "header" and isinstance(ftype, EnumT) and ftype.underlying is None:
                raise self.fail(fnode, f"header field {fname}: only serializable enums may be header fields")
            if kind == "header_union" and not (isinstance(ftype, StructLikeT) and ftype.kind == "header"):
                raise self.fail(fnode, f"header_union member {fname} must be a header")
            decl.fields.append((fname, ftype))
            if fnode.children[0] is not None:
                decl.field_annotations[fname] = fnode.children[0]
        if kind == "header" and decl.bit_width() % 8:
            raise self.fail(
                node,
                f"header {name} is {decl.bit_width()} bits wide, not a multiple of 8 "
                "(bmv2 requires whole bytes)",
            )
        self.ir.struct_order.append(decl)

    def _decl_header_decl(self, node: Tree) -> None:
        """Top-level declaration 'header_decl'."""
        self._struct_like(node, "header")

    def _decl_header_union_decl(self, node: Tree) -> None:
        """Top-level declaration 'header_union_decl'."""
        self._struct_like(node, "header_union")

    def _decl_struct_decl(self, node: Tree) -> None:
        """Top-level declaration 'struct_decl'."""
        self._struct_like(node, "struct")

    def _decl_enum_decl(self, node: Tree) -> None:
        """Top-level declaration 'enum_decl'."""
        _, name_node, *members = node.children
        names = [self.name_of(m) for m in members if m is not None]
        self.ir.types[self.name_of(name_node)] = EnumT(
            self.name_of(name_node), {m: i for i, m in enumerate(names)}
        )

    def _decl_serializable_enum_decl(self, node: Tree) -> None:
        """Top-level declaration 'serializable_enum_decl'."""
        _, type_node, name_node, *members = node.children
        underlying = self.resolve_type(type_node)
        if not isinstance(underlying, BitT | IntT):
            raise self.fail(type_node, "serializable enums need a bit<W> or int<W> underlying type")
        values = {}
        for member in members:
            if member is not None:
                values[self.name_of(member.children[0])] = self.constant_int(member.children[1])
        name = self.name_of(name_node)
        self.ir.types[name] = EnumT(name, values, underlying)

    def _decl_constant_decl(self, node: Tree) -> None:
        """Top-level declaration 'constant_decl'."""
        _, type_node, name_node, value_node = node.children
        ctype = self.resolve_type(type_node)
        from p4switch.compiler.expressions import ExpressionCompiler

        expr = ExpressionCompiler(self, scope=None).compile(value_node, expected=ctype)
        if expr.const is None:
            raise self.fail(value_node, "constant initializer is not a compile-time constant")
        self.ir.constants[self.name_of(name_node)] = Const(expr.const, ctype)

    def _decl_extern_object_decl(self, node: Tree) -> None:
        """Top-level declaration 'extern_object_decl'."""
        name = str(node.children[1])
        self.ir.types[name] = ExternT(name)
        self.ir.extern_objects[name] = node

    def _decl_extern_function_decl(self, node: Tree) -> None:
        """Top-level declaration 'extern_function_decl'."""
        proto = node.children[1]
        self.ir.extern_functions[self.name_of(proto.children[1])] = node

    def _decl_function_decl(self, node: Tree) -> None:
        """Top-level declaration 'function_decl'."""
        proto = node.children[1]
        self.ir.functions[self.name_of(proto.children[1])] = node

    def _decl_action_decl(self, node: Tree) -> None:
        """Top-level declaration 'action_decl'."""
        self.ir.actions[self.name_of(node.children[1])] = node

    def _decl_parser_type_decl(self, node: Tree) -> None:
        """Top-level declaration 'parser_type_decl'."""
        name = self.name_of(node.children[1])
        self.ir.types[name] = NamedBlockT("parser", name)

    def _decl_control_type_decl(self, node: Tree) -> None:
        """Top-level declaration 'control_type_decl'."""
        name = self.name_of(node.children[1])
        self.ir.types[name] = NamedBlockT("control", name)

    def _decl_package_type_decl(self, node: Tree) -> None:
        """Top-level declaration 'package_type_decl'."""
        name = self.name_of(node.children[1])
        self.ir.types[name] = NamedBlockT("package", name)

    def _decl_parser_decl(self, node: Tree) -> None:
        """Top-level declaration 'parser_decl'."""
        name = self.name_of(node.children[1])
        if node.children[2] is not None:
            raise self.fail(node, "generic parser declarations are not supported")
        if node.children[4] is not None:
            raise self.fail(node, "parser constructor parameters are not supported")
        self.ir.types[name] = NamedBlockT("parser", name)
        self.ir.parsers[name] = node

    def _decl_control_decl(self, node: Tree) -> None:
        """Top-level declaration 'control_decl'."""
        name = self.name_of(node.children[1])
        if node.children[2] is not None:
            raise self.fail(node, "generic control declarations are not supported")
        if node.children[4] is not None:
            raise self.fail(node, "control constructor parameters are not supported")
        self.ir.types[name] = NamedBlockT("control", name)
        self.ir.controls[name] = node

    def _decl_instantiation_with_body(self, node: Tree) -> None:
        """Top-level declaration 'instantiation_with_body'."""
        raise self.fail(node, "instantiations with initializer blocks are not supported")

    def _decl_instantiation(self, node: Tree) -> None:
        """Top-level declaration 'instantiation'."""
        _, type_node, args, name_node = node.children
        type_ = self.resolve_type(type_node)
        name = self.name_of(name_node)
        if isinstance(type_, ExternT):  # an extern instance shared by all blocks (codegen makes it)
            self.ir.global_instances.append(node)
            return
        if not (isinstance(type_, NamedBlockT) and type_.kind == "package"):
            raise self.fail(
                node, "only the V1Switch package may be instantiated at top level in the embedded target"
            )
        if type_.name != "V1Switch":
            raise self.fail(
                node, f"package {type_.name} is not supported (the target runs v1model's V1Switch)"
            )
        if name != "main":
            raise self.fail(name_node, "the V1Switch instance must be named main")
        arguments = [a for a in (args.children if args is not None else []) if a is not None]
        if len(arguments) != len(V1SWITCH_BLOCKS):
            raise self.fail(node, f"V1Switch takes {len(V1SWITCH_BLOCKS)} blocks, got {len(arguments)}")
        for role, arg in zip(V1SWITCH_BLOCKS, arguments, strict=True):
            if not (isinstance(arg, Tree) and arg.data == "constructor_call"):
                raise self.fail(
                    arg, f"V1Switch argument {role} must be a constructor call such as MyIngress()"
                )
            block = self.name_of(arg.children[0])
            wanted = self.ir.parsers if role == "parser" else self.ir.controls
            if block not in wanted:
                raise self.fail(
                    arg,
                    f"V1Switch argument {role}: {block} is not a declared "
                    f"{'parser' if role == 'parser' else 'control'}",
                )
            self.ir.package_blocks[role] = block


def parse_integer(text: str) -> tuple[int, int | None, bool]:
    """(value, width or None, signed) of a P4 integer literal such as 8w0xFF, 16s3, 0b101, 42."""
    text = text.replace("_", "")
    width: int | None = None
    signed = False
    for sep in ("w", "s"):
        head, found, tail = text.partition(sep)
        if found and head.isdigit():
            width = int(head)
            signed = sep == "s"
            text = tail
            break
    lowered = text.lower()
    if lowered.startswith("0x"):
        value = int(lowered[2:], 16)
    elif lowered.startswith("0b"):
        value = int(lowered[2:], 2)
    elif lowered.startswith("0o"):
        value = int(lowered[2:], 8)
    elif lowered.startswith("0d"):
        value = int(lowered[2:], 10)
    else:
        value = int(lowered, 10)
    return value, width, signed


__all__ = [
    "BitT",
    "BoolT",
    "Const",
    "EnumT",
    "ErrorT",
    "ExternT",
    "Frontend",
    "InfIntT",
    "IntT",
    "MatchKindT",
    "ProgramIR",
    "StackT",
    "StructLikeT",
    "parse_integer",
    "position",
]
