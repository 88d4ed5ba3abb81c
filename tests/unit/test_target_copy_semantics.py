"""P4_16's argument passing and the constructs added for p4c's STF tests, on both paths.

Each program writes what it computed into the frame; the expected bytes follow from the
specification's rules (copy-in/copy-out: P4_16 6.8; header equality: 8.17; header
unions: 8.20; ``@priority`` with largest_priority_wins: 14.2.1.4), worked out by hand
in each test's comment.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.compiler.compile import compile_program
from p4switch.stf.runner import run_stf
from p4switch.stf.script import read_stf

FRAME = "header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }"
TEMPLATE = """#include <core.p4>
#include <v1model.p4>
{frame}
{decls}
struct H {{ h_t h; {extra} }}
struct M {{ bit<8> m; }}
parser P(packet_in pk, out H hdr, inout M meta, inout standard_metadata_t sm) {{
    state start {{ pk.extract(hdr.h); transition accept; }}
}}
control V(inout H hdr, inout M meta) {{ apply {{ }} }}
control I(inout H hdr, inout M meta, inout standard_metadata_t sm) {{
    {locals_}
    apply {{ sm.egress_spec = 1; {body} }}
}}
control E(inout H hdr, inout M meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control C(inout H hdr, inout M meta) {{ apply {{ }} }}
control D(packet_out pk, in H hdr) {{ apply {{ pk.emit(hdr.h); }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def run(tmp_path: Path, frames: list[tuple[str, str]], fused: bool, **parts: str) -> None:
    """Compile the program, send each (in, expected out on port 1) frame, and require a pass."""
    fields = {"frame": FRAME, "decls": "", "extra": "", "locals_": "", "body": ""} | parts
    (tmp_path / "p.p4").write_text(TEMPLATE.format(**fields))
    (tmp_path / "t.stf").write_text("".join(f"packet 0 {i}\nexpect 1 {o}$\n" for i, o in frames))
    program = compile_program(tmp_path / "p.p4", use_disk_cache=False)
    result = run_stf(program, read_stf(tmp_path / "t.stf"), "t.stf", fused=fused)
    assert result.passed, result.report()


PATHS = pytest.mark.parametrize("fused", [False, True], ids=["general", "fused"])


@PATHS
def test_in_argument_is_a_copy(tmp_path: Path, fused: bool) -> None:
    """``a(hdr.h)`` with ``in h_t v``: writing hdr.h.a = 1 does not change v.a (0x10), so a ends 0x10."""
    locals_ = "action a(in h_t v) { hdr.h.a = 1; hdr.h.b = v.a; hdr.h.a = v.a; }"
    run(tmp_path, [("10 20 30 40", "10 10 30 40")], fused, locals_=locals_, body="a(hdr.h);")


@PATHS
def test_inout_copy_out_overwrites_writes_to_the_original(tmp_path: Path, fused: bool) -> None:
    """``a(hdr.h)``, ``inout h_t v``: the copy-out of v (c = 7) undoes hdr.h.d = 9 made in the call."""
    locals_ = "action a(inout h_t v) { hdr.h.d = 9; v.c = 7; }"
    run(tmp_path, [("10 20 30 40", "10 20 07 40")], fused, locals_=locals_, body="a(hdr.h);")


@PATHS
def test_out_and_inout_scalars_of_functions_and_actions(tmp_path: Path, fused: bool) -> None:
    """f doubles its inout and sets its out to 5, returning 3; a adds 1 to its inout: a=2*0x10+1, b=5, c=3."""
    decls = "bit<8> f(inout bit<8> x, out bit<8> y) { x = x + x; y = 5; return 3; }"
    locals_ = "action a(inout bit<8> z) { z = z + 1; }"
    body = "hdr.h.c = f(hdr.h.a, hdr.h.b); a(hdr.h.a);"
    run(tmp_path, [("10 20 30 40", "21 05 03 40")], fused, decls=decls, locals_=locals_, body=body)


@PATHS
def test_out_and_inout_scalars_of_an_applied_control(tmp_path: Path, fused: bool) -> None:
    """Fill(out o, inout io, in x): o = x + 1; its action adds x to io; a return when x == 7 skips
    io += 100. f.apply(b, c, a): a = 7 gives b = 8, c = 0x30 + 7; a = 1 gives b = 2, c = 0x30 + 101.
    f.apply(d, d, d) with d = 0x40: o = 0x41, io = 0x40 + 0x40 + 100 = 0xe4 (mod 256), copied out
    left to right, so d ends as io."""
    decls = """control Fill(out bit<8> o, inout bit<8> io, in bit<8> x) {
        action add_x() { io = io + x; }
        apply { o = x + 1; add_x(); if (x == 7) { return; } io = io + 100; }
    }"""
    frames = [("07 20 30 40", "07 08 37 e4"), ("01 20 30 40", "01 02 95 e4")]
    body = "f.apply(hdr.h.b, hdr.h.c, hdr.h.a); f.apply(hdr.h.d, hdr.h.d, hdr.h.d);"
    run(tmp_path, frames, fused, decls=decls, locals_="Fill() f;", body=body)


@PATHS
def test_default_action_with_the_arguments_the_actions_list_binds(tmp_path: Path, fused: bool) -> None:
    """``actions = { put(hdr.h.b); }`` and ``default_action = put(hdr.h.b, 5)``: the table is empty, so
    every packet misses and runs put(hdr.h.b, 5): b becomes 5."""
    locals_ = """action put(inout bit<8> x, bit<8> v) { x = v; }
    table t { key = { hdr.h.a : exact; } actions = { put(hdr.h.b); } default_action = put(hdr.h.b, 5); }"""
    run(tmp_path, [("10 20 30 40", "10 05 30 40")], fused, locals_=locals_, body="t.apply();")


@PATHS
def test_self_assignment_keeps_the_value(tmp_path: Path, fused: bool) -> None:
    """``sm = sm`` keeps egress_spec (the frame still leaves on port 1); ``hdr.h = hdr.h`` keeps h valid."""
    locals_ = "action a() { sm = sm; hdr.h = hdr.h; }"
    run(tmp_path, [("01 02 03 04", "01 02 03 04")], fused, locals_=locals_, body="a();")


@PATHS
def test_equality_of_headers(tmp_path: Path, fused: bool) -> None:
    """g = h: (h == g), a := 1; g.d changed: b := (h == g) = 0; two invalid headers are equal: c := 1."""
    extra = "h_t g; h_t g2; h_t g3;"
    body = (
        "hdr.g = hdr.h; if (hdr.h == hdr.g) { hdr.h.a = 1; } hdr.g = hdr.h; hdr.g.d = 0; "
        "hdr.h.b = (bit<8>)(bit<1>)(hdr.h == hdr.g); if (hdr.g2 == hdr.g3) { hdr.h.c = 1; }"
    )
    body = body.replace("(bit<8>)(bit<1>)(hdr.h == hdr.g)", "(hdr.h == hdr.g ? 8w1 : 8w0)")
    run(tmp_path, [("10 20 30 40", "01 00 01 40")], fused, extra=extra, body=body)


@PATHS
def test_header_union_members_exclude_each_other(tmp_path: Path, fused: bool) -> None:
    """u.x valid, then u.y.setValid(): x becomes invalid, u stays valid: a := 1 (u), b := 0 (x)."""
    decls = "header x_t { bit<8> v; } header y_t { bit<8> w; } header_union u_t { x_t x; y_t y; }"
    body = (
        "hdr.u.x.setValid(); hdr.u.y.setValid(); "
        "hdr.h.a = hdr.u.isValid() ? 8w1 : 8w0; hdr.h.b = hdr.u.x.isValid() ? 8w1 : 8w0;"
    )
    run(tmp_path, [("10 20 30 40", "01 00 30 40")], fused, decls=decls, extra="u_t u;", body=body)


@PATHS
def test_priority_annotation_on_const_entries(tmp_path: Path, fused: bool) -> None:
    """Both entries match a = 0x11; the larger @priority (20, d := 2) wins though listed second."""
    locals_ = """action s(bit<8> v) { hdr.h.d = v; }
    table t {
        key = { hdr.h.a : ternary; }
        actions = { s; NoAction; }
        const entries = { @priority(10) 0x01 &&& 0x0F : s(1); @priority(20) 0x11 &&& 0xFF : s(2); }
        default_action = NoAction();
    }"""
    run(
        tmp_path,
        [("11 00 00 00", "11 00 00 02"), ("21 00 00 00", "21 00 00 01")],
        fused,
        locals_=locals_,
        body="t.apply();",
    )


@PATHS
def test_switch_on_a_bit_value(tmp_path: Path, fused: bool) -> None:
    """switch (hdr.h.a) { 1: d := 0xA; 2: d := 0xB; default: d := 0xC }."""
    body = "switch (hdr.h.a) { 1: { hdr.h.d = 0xA; } 2: { hdr.h.d = 0xB; } default: { hdr.h.d = 0xC; } }"
    frames = [("01 00 00 00", "01 00 00 0a"), ("02 00 00 00", "02 00 00 0b"), ("07 00 00 00", "07 00 00 0c")]
    run(tmp_path, frames, fused, body=body)


@PATHS
def test_slice_of_a_slice_as_assignment_target(tmp_path: Path, fused: bool) -> None:
    """``a[7:4][1:0] = 3`` sets bits 5..4 of a, the others kept: 0x00 becomes 0x30, 0xCF becomes 0xFF."""
    body = "hdr.h.a[7:4][1:0] = 2w3;"
    run(tmp_path, [("00 00 00 00", "30 00 00 00"), ("cf 00 00 00", "ff 00 00 00")], fused, body=body)


@PATHS
def test_action_with_bound_arguments_in_an_action_list(tmp_path: Path, fused: bool) -> None:
    """``actions = { a(hdr.h.c); }``: an entry's a(v: 5) adds 5 to its bound inout c (0x30 + 5 = 0x35)."""
    locals_ = """action a(inout bit<8> x, bit<8> v) { x = x + v; }
    table t { key = { hdr.h.a : exact; } actions = { a(hdr.h.c); NoAction; } default_action = NoAction(); }"""
    fields = {"frame": FRAME, "decls": "", "extra": "", "locals_": locals_, "body": "t.apply();"}
    (tmp_path / "p.p4").write_text(TEMPLATE.format(**fields))
    (tmp_path / "t.stf").write_text(
        "add t hdr.h.a:1 a(v:5)\npacket 0 01 20 30 40\nexpect 1 01 20 35 40$\n"
        "packet 0 02 20 30 40\nexpect 1 02 20 30 40$\n"
    )
    program = compile_program(tmp_path / "p.p4", use_disk_cache=False)
    result = run_stf(program, read_stf(tmp_path / "t.stf"), "t.stf", fused=fused)
    assert result.passed, result.report()
