"""P4 types as the target's front end sees them, with the Python value each one runs as."""

from __future__ import annotations

from dataclasses import dataclass, field


class P4Type:
    """Base of all P4 types."""

    def is_scalar(self) -> bool:
        """True for types held in one Python value (int or bool)."""
        return False


@dataclass(frozen=True)
class BitT(P4Type):
    """bit<W>: unsigned, runs as an int in [0, 2**W)."""

    width: int

    def is_scalar(self) -> bool:
        """True: held in one Python value."""
        return True

    def __str__(self) -> str:
        """P4 spelling of the type."""
        return f"bit<{self.width}>"


@dataclass(frozen=True)
class IntT(P4Type):
    """int<W>: signed two's complement, runs as an int in [-2**(W-1), 2**(W-1))."""

    width: int

    def is_scalar(self) -> bool:
        """True: held in one Python value."""
        return True

    def __str__(self) -> str:
        """P4 spelling of the type."""
        return f"int<{self.width}>"


@dataclass(frozen=True)
class InfIntT(P4Type):
    """int: the arbitrary-precision type of integer literals without width (compile time only)."""

    def is_scalar(self) -> bool:
        """True: held in one Python value."""
        return True

    def __str__(self) -> str:
        """P4 spelling of the type."""
        return "int"


@dataclass(frozen=True)
class BoolT(P4Type):
    """bool: runs as a Python bool."""

    def is_scalar(self) -> bool:
        """True: held in one Python value."""
        return True

    def __str__(self) -> str:
        """P4 spelling of the type."""
        return "bool"


@dataclass(frozen=True)
class StringT(P4Type):
    """string: only for annotations and log messages."""

    def __str__(self) -> str:
        """P4 spelling of the type."""
        return "string"


@dataclass(frozen=True)
class VarbitT(P4Type):
    """varbit<W>: a header's last field, of up to W bits; runs as the bytes extracted (b"" when unset)."""

    max_width: int

    def is_scalar(self) -> bool:
        """True: held in one Python value."""
        return True

    def __str__(self) -> str:
        """P4 spelling of the type."""
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True)
class VoidT(P4Type):
    """void: the result of calls without a value."""

    def __str__(self) -> str:
        """P4 spelling of the type."""
        return "void"


@dataclass(frozen=True)
class ErrorT(P4Type):
    """error: runs as the int code of the error (declaration order, as bmv2 numbers them)."""

    def is_scalar(self) -> bool:
        """True: held in one Python value."""
        return True

    def __str__(self) -> str:
        """P4 spelling of the type."""
        return "error"


@dataclass(frozen=True)
class MatchKindT(P4Type):
    """match_kind."""

    def __str__(self) -> str:
        """P4 spelling of the type."""
        return "match_kind"


@dataclass(eq=False)
class EnumT(P4Type):
    """enum: plain enums run as member index, serializable enums as their underlying value."""

    name: str
    members: dict[str, int]
    underlying: BitT | IntT | None = None

    def is_scalar(self) -> bool:
        """True: held in one Python value."""
        return True

    def __str__(self) -> str:
        """P4 spelling of the type."""
        return self.name


@dataclass(eq=False)
class StructLikeT(P4Type):
    """header, struct or header_union: runs as an instance of a generated Python class."""

    kind: str  # "header" | "struct" | "header_union"
    name: str
    fields: list[tuple[str, P4Type]] = field(default_factory=list)
    annotations: dict = field(default_factory=dict)
    #: field name -> its `annotations` parse tree (read where needed, e.g. @field_list)
    field_annotations: dict = field(default_factory=dict, compare=False, repr=False)

    def field_type(self, name: str) -> P4Type | None:
        """Type of field `name`, or None."""
        for fname, ftype in self.fields:
            if fname == name:
                return ftype
        return None

    def bit_width(self) -> int:
        """Total width of a header's fields (a varbit field counts 0: the fixed part)."""
        return sum(width_of(t) for _, t in self.fields if not isinstance(t, VarbitT))

    def varbit_field(self) -> tuple[str, VarbitT] | None:
        """The header's varbit field (its last), if it has one."""
        if self.fields and isinstance(self.fields[-1][1], VarbitT):
            return self.fields[-1]  # type: ignore[return-value]
        return None

    def __str__(self) -> str:
        """P4 spelling of the type."""
        return self.name


@dataclass(eq=False)
class StackT(P4Type):
    """A header stack h[N]: runs as p4switch.runtime.support.HeaderStack."""

    element: StructLikeT
    size: int

    def __str__(self) -> str:
        """P4 spelling of the type."""
        return f"{self.element.name}[{self.size}]"


@dataclass(eq=False)
class ExternT(P4Type):
    """An extern object type (counter, register, ...), with its type arguments."""

    name: str
    type_args: tuple = ()

    def __str__(self) -> str:
        """P4 spelling of the type."""
        return self.name


@dataclass(eq=False)
class TupleT(P4Type):
    """tuple<...> and list expressions."""

    elements: list[P4Type]

    def __str__(self) -> str:
        """P4 spelling of the type."""
        return "tuple<" + ", ".join(map(str, self.elements)) + ">"


@dataclass(eq=False)
class NamedBlockT(P4Type):
    """Parser, control or package types (only used as constructor results)."""

    kind: str
    name: str

    def __str__(self) -> str:
        """P4 spelling of the type."""
        return self.name


def width_of(t: P4Type) -> int:
    """Bit width of a type that can live in a header or a table key."""
    if isinstance(t, BitT | IntT):
        return t.width
    if isinstance(t, BoolT):
        return 1
    if isinstance(t, EnumT) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, StructLikeT):
        return t.bit_width()
    raise TypeError(f"type {t} has no fixed bit width")


def mask(width: int) -> int:
    """All-ones value of `width` bits."""
    return (1 << width) - 1


def same_type(a: P4Type | None, b: P4Type | None) -> bool:
    """Whether two composite types are the same: one header/struct type, or stacks of one type and size."""
    if isinstance(a, StackT) and isinstance(b, StackT):
        return a.element is b.element and a.size == b.size
    return a is b
