"""LALR parsing of preprocessed P4 text into lark trees, with a lexer stage that knows type names.

The P4_16 grammar needs to tell type names from other identifiers. The post-lexer
collects every type the program (and its includes) declares, then re-types those
identifiers as TYPE_IDENTIFIER; it also marks the '<' that opens the type
arguments of a generic call such as ``pkt.lookahead<bit<16>>()``.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from p4switch.compiler.preprocess import Preprocessed
from p4switch.errors import P4CompileError

GRAMMAR_FILE = Path(__file__).resolve().parent / "p4.lark"
_TYPE_DECL_KEYWORDS = {"header", "header_union", "struct", "parser", "control", "package"}
_BASE_TYPE_KEYWORDS = {"bit", "int", "bool", "varbit", "tuple", "error"}


class TypeNamePostLexer:
    """Re-types identifiers declared as types (and type parameters) to TYPE_IDENTIFIER."""

    always_accept = ("IDENTIFIER",)

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        """Collect the declared type names from the whole token list, then re-type the tokens.

        Also joins two adjacent '>' outside type argument lists into one SHR token, so that
        ``bit<bit<8>>`` closes two lists while ``a >> 2`` shifts.
        """
        tokens = list(stream)
        type_names = collect_type_names(tokens)
        previous: Token | None = None
        angle_depth = 0
        skip_next = False
        for i, tok in enumerate(tokens):
            if skip_next:
                skip_next = False
                continue
            if tok.type == "IDENTIFIER" and tok.value in type_names:
                declared_extern = (
                    previous is not None and previous.value == "extern" and previous.type != "IDENTIFIER"
                )
                if declared_extern and i + 1 < len(tokens) and tokens[i + 1].value in ("{", "<"):
                    tok.type = "EXTERN_TYPE_NAME"
                else:
                    tok.type = "TYPE_IDENTIFIER"
            elif tok.value == "<" and tok.type != "STRING_LITERAL":
                if _opens_generic_call(tokens, i, type_names):
                    tok.type = "_GENERIC_LT"
                    angle_depth += 1
                elif previous is not None and (
                    previous.type in ("TYPE_IDENTIFIER", "EXTERN_TYPE_NAME")
                    or (previous.value in _BASE_TYPE_KEYWORDS and previous.type != "IDENTIFIER")
                ):
                    angle_depth += 1
            elif tok.value == ">" and tok.type != "STRING_LITERAL":
                if angle_depth > 0:
                    angle_depth -= 1
                elif (
                    i + 1 < len(tokens)
                    and tokens[i + 1].value == ">"
                    and tokens[i + 1].start_pos == tok.end_pos
                ):
                    tok = Token.new_borrow_pos("_SHR", ">>", tok)
                    skip_next = True
            previous = tok
            yield tok


def _opens_generic_call(tokens: list[Token], i: int, type_names: set[str]) -> bool:
    """True if tokens[i] ('<') follows a method/function name and starts a type argument list."""
    if i == 0 or i + 1 >= len(tokens) or tokens[i - 1].type != "IDENTIFIER":
        return False
    if tokens[i - 1].value in type_names:
        return False
    if i >= 2 and (tokens[i - 2].value in type_names or tokens[i - 2].value in (">", "void")):
        return False  # a declaration such as `void extract<T>(...)`
    nxt = tokens[i + 1]
    if nxt.value in _BASE_TYPE_KEYWORDS and nxt.type != "IDENTIFIER":
        return True
    if nxt.type == "IDENTIFIER" and nxt.value in type_names and i + 2 < len(tokens):
        return tokens[i + 2].value in {">", ",", "<", "["}
    return False


def collect_type_names(tokens: list[Token]) -> set[str]:
    """Names declared as types: headers, structs, enums, typedefs, externs, blocks, type parameters."""
    names: set[str] = set()
    count = len(tokens)
    for i, tok in enumerate(tokens):
        value = tok.value
        if tok.type == "IDENTIFIER" or tok.type == "STRING_LITERAL" or i + 1 >= count:
            pass
        elif value in _TYPE_DECL_KEYWORDS and tokens[i + 1].type == "IDENTIFIER":
            names.add(tokens[i + 1].value)
        elif value == "extern" and tokens[i + 1].type == "IDENTIFIER" and i + 2 < count:
            if tokens[i + 2].value in ("{", "<"):
                names.add(tokens[i + 1].value)
        elif value in ("typedef", "type") and tok.type != "IDENTIFIER":
            j = i + 1
            while j < count and tokens[j].value != ";":
                j += 1
            if tokens[j - 1].type == "IDENTIFIER":
                names.add(tokens[j - 1].value)
        elif value == "enum":
            j = i + 1
            while j < count and tokens[j].value != "{":
                j += 1
            if tokens[j - 1].type == "IDENTIFIER":
                names.add(tokens[j - 1].value)
        # type parameters: NAME '<' A, B, ... '>' followed by '(' or '{' in a declaration
        if (
            tok.type == "IDENTIFIER"
            and i + 2 < count
            and tokens[i + 1].value == "<"
            and (i == 0 or tokens[i - 1].value != ".")
        ):
            j = i + 2
            params = []
            while j + 1 < count and tokens[j].type == "IDENTIFIER" and tokens[j + 1].value in (",", ">"):
                params.append(tokens[j].value)
                if tokens[j + 1].value == ">":
                    break
                j += 2
            else:
                params = []
            if params and j + 2 < count and tokens[j + 2].value in ("(", "{"):
                names.update(params)
    return names


def _grammar_cache_file() -> str | bool:
    """Where lark keeps the built LALR tables between processes (it checks the grammar's hash itself)."""
    from p4switch.compiler.compile import cache_dir  # at call time: compile imports this module

    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return str(folder / "p4-grammar.lark-cache")


@lru_cache(maxsize=1)
def _lark() -> Lark:
    """The LALR parser for the P4 grammar (built once per process, tables cached on disk)."""
    options = dict(
        parser="lalr",
        lexer="basic",
        postlex=TypeNamePostLexer(),
        propagate_positions=True,
        maybe_placeholders=True,
    )
    try:
        return Lark(GRAMMAR_FILE.read_text(), cache=_grammar_cache_file(), **options)
    except Exception:  # an unreadable or foreign cache file: build without it
        return Lark(GRAMMAR_FILE.read_text(), cache=False, **options)


def parse(source: Preprocessed) -> Tree:
    """Parse preprocessed P4 text into a lark tree; syntax errors name the original file and line."""
    try:
        return _lark().parse(source.text)
    except UnexpectedInput as exc:
        file, line = source.origin(exc.line if isinstance(exc.line, int) and exc.line > 0 else 1)
        column = exc.column if isinstance(exc.column, int) and exc.column > 0 else 1
        if isinstance(exc, UnexpectedToken):
            shown = "end of input" if exc.token.type == "$END" else repr(str(exc.token))
            message = f"syntax error at {shown}"
        elif isinstance(exc, UnexpectedCharacters):
            message = f"unexpected character {exc.char!r}"
        elif isinstance(exc, UnexpectedEOF):
            message = "unexpected end of input"
        else:
            message = "syntax error"
        raise P4CompileError(file, line, column, message) from None
