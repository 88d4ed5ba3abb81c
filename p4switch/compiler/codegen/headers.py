"""Header and struct classes: slots, defaults, copy, and precompiled struct.Struct reads and writes."""

from __future__ import annotations

from dataclasses import dataclass

from p4switch.compiler.types import (
    BitT,
    BoolT,
    EnumT,
    ErrorT,
    InfIntT,
    IntT,
    P4Type,
    StackT,
    StructLikeT,
    TupleT,
    VarbitT,
    mask,
    width_of,
)

CODE_BITS = {"Q": 64, "I": 32, "H": 16, "B": 8}


@dataclass
class Chunk:
    """Byte-aligned bits of a header read by struct codes; fields as (name, type, width, shift in chunk)."""

    width: int
    codes: list[str]
    fields: list[tuple[str, P4Type, int, int]]


def header_chunks(t: StructLikeT) -> list[Chunk]:
    """Split a header into the shortest runs of fields that end on byte boundaries, with struct codes."""
    chunks: list[Chunk] = []
    pending: list[tuple[str, P4Type, int]] = []
    width = 0
    for fname, ftype in t.fields:
        if isinstance(ftype, VarbitT):  # the variable part: read and written as bytes after the chunks
            continue
        pending.append((fname, ftype, width_of(ftype)))
        width += width_of(ftype)
        if width % 8 == 0:
            fields = []
            shift = width
            for name, type_, w in pending:
                shift -= w
                fields.append((name, type_, w, shift))
            codes = []
            left = width // 8
            for code, size in (("Q", 8), ("I", 4), ("H", 2), ("B", 1)):
                while left >= size:
                    codes.append(code)
                    left -= size
            chunks.append(Chunk(width, codes, fields))
            pending, width = [], 0
    return chunks


def struct_name(t: StructLikeT) -> str:
    """Name of the precompiled struct.Struct of a header type in the generated module."""
    return f"U_S_{t.name}"


def packed_src(pairs: list[tuple[str, int]]) -> tuple[str, int]:
    """Source of the concatenation of (source, width) values (each already in range) and its width."""
    total = sum(width for _, width in pairs)
    parts = []
    offset = total
    for src, width in pairs:
        offset -= width
        parts.append(f"({src} << {offset})" if offset else src)
    return "(" + (" | ".join(parts) or "0") + ")", total


class HeaderGen:
    """Header and struct classes: slots, defaults, copy, and precompiled struct.Struct reads and writes."""

    @staticmethod
    def class_name(type_: StructLikeT) -> str:
        """Generated class name of a header/struct type."""
        return f"S_{type_.name}"

    def default_value_src(self, type_: P4Type) -> str:
        """Source of a fresh default value of a type (0, False, new object)."""
        if isinstance(type_, StructLikeT):
            return f"{self.class_name(type_)}()"
        if isinstance(type_, StackT):
            element = self.class_name(type_.element)
            return f"HeaderStack({element}, B_{element}, {type_.size})"
        if isinstance(type_, BoolT):
            return "False"
        if isinstance(type_, VarbitT):
            return 'b""'
        if isinstance(type_, TupleT):
            return "(" + "".join(f"{self.default_value_src(t)}, " for t in type_.elements) + ")"
        if isinstance(type_, EnumT) and type_.underlying is None:
            return "0"
        if isinstance(type_, BitT | IntT | ErrorT | EnumT | InfIntT):
            return "0"
        raise TypeError(f"no default for {type_}")

    def gen_class(self, t: StructLikeT) -> None:
        """A Python class for a header or struct type.

        Scalar fields (and a header's validity `_v`) are class attributes holding the
        default value, so creating an instance only builds its nested headers and stacks;
        writes go to the instance.
        """
        c = self.code
        name = self.class_name(t)
        composite = [(f, ft) for f, ft in t.fields if isinstance(ft, StructLikeT | StackT)]
        scalars = [(f, ft) for f, ft in t.fields if not isinstance(ft, StructLikeT | StackT)]
        c.add(0, f"class {name}:")
        c.add(1, f'"""P4 {t.kind} {t.name}."""')
        if t.kind == "header":
            c.add(1, "_v = False")
        for fname, ftype in scalars:
            c.add(1, f"f_{fname} = {self.default_value_src(ftype)}")
        if composite:
            c.add(1, "def __init__(self):")
            for fname, ftype in composite:
                c.add(2, f"self.f_{fname} = {self.default_value_src(ftype)}")
        c.add(1, "def copy(self):")
        c.add(2, f"o = {name}.__new__({name}); o.__dict__.update(self.__dict__)")
        for fname, _ in composite:
            c.add(2, f"o.f_{fname} = self.f_{fname}.copy()")
        c.add(2, "return o")
        c.add(1, "def assign(self, other):")
        if composite:
            for fname, _ in composite:
                c.add(2, f"self.f_{fname}.assign(other.f_{fname})")
            for fname, _ in scalars:
                c.add(2, f"self.f_{fname} = other.f_{fname}")
            if not scalars and t.kind == "header":
                c.add(2, "self._v = other._v")
        else:
            c.add(2, "self.__dict__ = other.__dict__.copy()  # right for self.assign(self) too")
        if t.kind == "header":
            self._gen_header_io(t)
            c.add(0, f"B_{name} = make_blank({name})")
            codes = "".join(code for chunk in header_chunks(t) for code in chunk.codes)
            c.add(0, f"{struct_name(t)} = Struct({'!' + codes!r})")
        elif t.kind == "header_union":  # the shared blank of a stack of unions
            c.add(0, f"B_{name} = make_blank({name})")
        c.add(0, "")

    def _gen_header_io(self, t: StructLikeT) -> None:
        """extract/pack/lookahead methods of a header class (fixed-size, whole bytes)."""
        c = self.code
        c.add(1, "def extract(self, pk):")
        for line in self.extract_lines(t, "self"):
            c.add(2, line)
        c.add(1, "def pack(self):")
        c.add(2, f"return {self.pack_expression(t, 'self')}")
        c.add(1, "@staticmethod")
        c.add(1, "def lookahead(pk, too_short):")
        c.add(2, f"h = {self.class_name(t)}(); o = pk.off; h.extract(pk); pk.off = o; return h")

    def extract_lines(self, t: StructLikeT, obj: str, varbit_bits: str | None = None) -> list[str]:
        """Python lines extracting header type t from the packet reader `pk` into object `obj`.

        One precompiled struct.unpack_from reads the header as byte-aligned chunks; fields
        narrower than a chunk are cut out of it with shifts on small ints.
        """
        total = t.bit_width()
        too_short = self.ir.errors.get("PacketTooShort", 1)
        chunks = header_chunks(t)
        names = [f"_u{i}" for i in range(sum(len(chunk.codes) for chunk in chunks))]
        varbit = t.varbit_field()
        # the size argument first: it may look ahead from where the header starts
        lines = [f"_b = {varbit_bits}"] if varbit is not None and varbit_bits is not None else []
        if names:  # the fixed part (a header may be a varbit field alone)
            lines += [
                f"_o = pk.off; _e = _o + {total // 8}",
                f"if _e > pk.n: raise ParserError({too_short})",
                f"{', '.join(names)}{',' if len(names) == 1 else ''} = "
                f"{struct_name(t)}.unpack_from(pk.data, _o)",
                "pk.off = _e",
            ]
        position = 0
        for chunk in chunks:
            parts = names[position : position + len(chunk.codes)]
            position += len(chunk.codes)
            value = parts[0]
            for part, code in zip(parts[1:], chunk.codes[1:], strict=True):
                value = f"(({value} << {CODE_BITS[code]}) | {part})"
            if len(chunk.fields) > 1 and len(parts) > 1:
                lines.append(f"_c = {value}")
                value = "_c"
            for fname, ftype, width, shift in chunk.fields:
                src = value
                if shift:
                    src = f"({src} >> {shift})"
                if width + shift < chunk.width:
                    src = f"({src} & {mask(width)})"
                if isinstance(ftype, IntT):
                    src = f"(({src}) ^ {1 << (width - 1)}) - {1 << (width - 1)}"
                elif isinstance(ftype, BoolT):
                    src = f"bool({src})"
                lines.append(f"{obj}.f_{fname} = {src}")
        if varbit is not None:  # `varbit_bits`: the source of extract's second argument
            fname, ftype = varbit
            too_long = self.ir.errors.get("HeaderTooShort", too_short)
            lines += [
                *([] if varbit_bits is not None else ["_b = 0"]),
                f"if _b > {ftype.max_width} or _b % 8: raise ParserError({too_long})",
                "_o = pk.off; _e = _o + (_b >> 3)",
                f"if _e > pk.n: raise ParserError({too_short})",
                f"{obj}.f_{fname} = bytes(pk.data[_o:_e])",
                "pk.off = _e",
            ]
        lines.append(f"{obj}._v = True")
        return lines

    @staticmethod
    def pack_expression(t: StructLikeT, obj: str) -> str:
        """Python expression giving the bytes of header object `obj` of type t (one struct.pack)."""
        values = []
        for chunk in header_chunks(t):
            parts = []
            for fname, ftype, width, shift in chunk.fields:
                value = f"{obj}.f_{fname}"
                if isinstance(ftype, IntT):
                    value = f"({value} & {mask(width)})"
                elif isinstance(ftype, BoolT):
                    value = f"int({value})"
                parts.append(f"({value} << {shift})" if shift else value)
            combined = parts[0] if len(parts) == 1 else "(" + " | ".join(parts) + ")"
            remaining = chunk.width
            for index, code in enumerate(chunk.codes):
                remaining -= CODE_BITS[code]
                piece = f"({combined} >> {remaining})" if remaining else combined
                if index:
                    piece = f"({piece} & {mask(CODE_BITS[code])})"
                values.append(piece)
        fixed = f"{struct_name(t)}.pack({', '.join(values)})"
        varbit = t.varbit_field()
        return fixed if varbit is None else f"({fixed} + {obj}.f_{varbit[0]})"
