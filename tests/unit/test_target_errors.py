"""Compile errors of the embedded P4 target: constructs outside the subset name file, line and column."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch import P4CompileError, compile_program

TEMPLATE = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> x; bit<8> y; }
struct headers_t { h_t h; }
struct meta_t { bit<8> m; }
@@DECLS@@
parser P(packet_in pk, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @@PARSER_LOCALS@@
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @@LOCALS@@
    apply {
        @@BODY@@
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pk, in headers_t hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def write_program(tmp_path: Path, decls="", parser_locals="", locals_="", body="") -> Path:
    """The template program with snippets put in, written to tmp_path."""
    text = (
        TEMPLATE.replace("@@DECLS@@", decls)
        .replace("@@PARSER_LOCALS@@", parser_locals)
        .replace("@@LOCALS@@", locals_)
        .replace("@@BODY@@", body)
    )
    path = tmp_path / "prog.p4"
    path.write_text(text)
    return path


def position_of(path: Path, marker: str) -> tuple[int, int]:
    """1-based (line, column) of the first occurrence of marker in the file."""
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if marker in line:
            return number, line.index(marker) + 1
    raise AssertionError(f"{marker!r} not in program")


CASES = [
    # (where, snippet, construct that must be pointed at, words of the message)
    ("decls", "header_union u_t { bit<8> a; }", "bit<8> a", "header_union member a must be a header"),
    ("decls", "header v_t { varbit<32> opts; bit<8> x; }", "varbit<32> opts", "a header's last field"),
    ("body", "digest(1, hdr.h.x);", "hdr.h.x);", "digest data must be a struct or header, not bit<8>"),
    ("body", "clone3(CloneType.I2E, 5, {hdr.h.x});", "{hdr.h.x}", "clone3 with a non-empty data argument"),
    ("body", "resubmit(meta);", "meta);", "call resubmit_preserving_field_list"),
    ("locals", "action_profile(32w16) ap;", "action_profile", "extern action_profile is not supported"),
    ("body", "meta.m = hdr.h.x ++ hdr.h.y;", "hdr.h.x ++", "type mismatch: expected bit<8>, got bit<16>"),
    (
        "body",
        "meta.m = hdr.h.x + (bit<16>) 1;",
        "hdr.h.x +",
        "operands have different types: bit<8> and bit<16>",
    ),
    ("body", "meta.m = nosuch;", "nosuch", "unknown name nosuch"),
    ("body", "meta.m = ; /*syn*/", "; /*syn*/", "syntax error"),
    ("body", "meta.m = (bit<8>) ((int<4>) 3);", "(bit<8>) ((int<4>)", "cast to bit<4> first"),
    ("body", "meta.m = hdr.h.x[8:1];", "hdr.h.x[8:1]", "slice [8:1] out of range for bit<8>"),
    (
        "parser_locals",
        "value_set<bit<8>>(4) vs;",
        "value_set",
        "unsupported local declaration 'value_set_decl'",
    ),
    ("locals", "action a(bit<8> v) { v = 1; }", "v = 1", "v is an `in` (read-only) parameter"),
    (
        "locals",
        "table t { key = { hdr.h.x: exact; } actions = { NoAction; } }",
        "t.apply(); /*2*/",
        "table I.t is applied more than once",
    ),
]


@pytest.mark.parametrize("where,snippet,construct,message", CASES, ids=[c[3][:40] for c in CASES])
def test_unsupported_constructs_report_file_line_column(tmp_path, where, snippet, construct, message):
    """The error names the file, the line and the column of the construct."""
    kwargs = {"decls": "", "parser_locals": "", "locals_": "", "body": ""}
    kwargs[{"locals": "locals_"}.get(where, where)] = snippet
    if construct == "t.apply(); /*2*/":
        kwargs["body"] = "t.apply();\n        t.apply(); /*2*/"
    path = write_program(tmp_path, **kwargs)
    with pytest.raises(P4CompileError) as caught:
        compile_program(path, use_disk_cache=False)
    error = caught.value
    line, column = position_of(path, construct)
    assert message in error.message
    assert (Path(error.file).name, error.line) == ("prog.p4", line)
    assert error.column == column
    assert str(error) == f"{error.file}:{error.line}:{error.column}: error: {error.message}"


def test_error_in_an_included_file_names_that_file(tmp_path):
    """Positions go back through #include to the included file."""
    (tmp_path / "extra.p4").write_text("// helper\nconst bit<8> BAD = oops;\n")
    path = write_program(tmp_path, decls='#include "extra.p4"')
    with pytest.raises(P4CompileError) as caught:
        compile_program(path, use_disk_cache=False)
    assert Path(caught.value.file).name == "extra.p4" and caught.value.line == 2
    assert "unknown name oops" in caught.value.message


def test_missing_include_and_missing_file(tmp_path):
    """Preprocessor failures and missing files are compile errors too."""
    path = write_program(tmp_path, decls='#include "nowhere.p4"')
    with pytest.raises(P4CompileError, match="preprocessor"):
        compile_program(path, use_disk_cache=False)
    with pytest.raises(P4CompileError, match="no such P4 source file"):
        compile_program(tmp_path / "absent.p4", use_disk_cache=False)


def test_defines_reach_the_program(tmp_path):
    """-D defines are passed to the preprocessor."""
    path = write_program(
        tmp_path, decls="const bit<8> K = VALUE;", body="meta.m = K; hdr.h.y = meta.m; sm.egress_spec = 1;"
    )
    with pytest.raises(P4CompileError):
        compile_program(path, use_disk_cache=False)
    program = compile_program(path, defines={"VALUE": "42"}, use_disk_cache=False)
    assert program.new_pipeline().process(b"\x07\x00tail", 1) == [(1, b"\x07\x2atail")]


def test_strict_mode_can_be_relaxed_for_casts(tmp_path):
    """strict=False accepts a signed-to-unsigned cast with a width change."""
    path = write_program(tmp_path, body="hdr.h.y = (bit<8>) ((int<4>) 3); sm.egress_spec = 1;")
    with pytest.raises(P4CompileError):
        compile_program(path, use_disk_cache=False)
    program = compile_program(path, strict=False, use_disk_cache=False)
    assert program.new_pipeline().process(b"\x00\x00", 1) == [(1, b"\x00\x03")]
