"""``twinnet-switch --stf``: exit status 0, 1 (with the differences) or 2, on a small program."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch.daemon.cli import main
from p4switch.stf.script import Expected

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action bump(bit<8> by, bit<9> port) { hdr.h.a = hdr.h.a + by; sm.egress_spec = port; }
    table t { key = { hdr.h.b : exact; } actions = { bump; NoAction; } default_action = NoAction(); }
    apply { sm.egress_spec = 511; t.apply(); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def write(tmp_path: Path, stf: str, program: str = PROGRAM) -> list[str]:
    (tmp_path / "p.p4").write_text(program)
    (tmp_path / "t.stf").write_text(stf)
    return ["--stf", str(tmp_path / "t.stf"), str(tmp_path / "p.p4")]


@pytest.mark.parametrize("fused", [False, True])
def test_expected_frames_pass(tmp_path: Path, fused: bool, capsys: pytest.CaptureFixture) -> None:
    """An entry adds 3 to byte a and sends to port 2; b = 9 has no entry: dropped (511)."""
    a, by = 0x40, 3
    stf = f"add t hdr.h.b:7 bump(by:{by}, port:2)\npacket 1 {a:02x} 07\n"
    stf += f"expect 2 {a + by:02x} 07$\npacket 1 00 09\n"
    assert main([*write(tmp_path, stf), *(["--fused"] if fused else [])]) == 0


def test_a_wrong_frame_is_shown_with_what_came(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Status 1, and the report names the port, the expected pattern and the frame received."""
    stf = "add t b:7 bump(by:1, port:2)\npacket 1 40 07\nexpect 2 40 07\n"
    assert main(write(tmp_path, stf)) == 1
    report = capsys.readouterr().err
    assert "port 2 frame 1: expected 4007, received 4107" in report


def test_a_missing_and_an_unexpected_frame_fail(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A frame on a port named in the script but not expected there fails, as does a missing one."""
    stf = "add t b:7 bump(by:1, port:2)\npacket 1 40 07\nexpect 1 41 07\n"
    assert main(write(tmp_path, stf)) == 1
    report = capsys.readouterr().err
    assert "port 1 frame 1: expected 4107, received nothing" in report
    assert "port 2" not in report  # port 2 is named nowhere: its frames are not checked


def test_a_refused_program_exits_2_with_its_location(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A program the target refuses: status 2 and the located error."""
    program = PROGRAM.replace("t.apply();", "t.apply(); digest(1, hdr.h.a);")
    line = next(n for n, text in enumerate(program.split("\n"), start=1) if "digest" in text)
    assert main(write(tmp_path, "packet 1 00\n", program)) == 2
    assert f"p.p4:{line}:" in capsys.readouterr().err


def test_expected_patterns_follow_bmv2stf() -> None:
    """'*' nibbles match anything, a pattern is a prefix unless it ends in '$'."""
    assert Expected(0, "4*07", False).matches(bytes([0x41, 0x07, 0xFF]))
    assert not Expected(0, "4*07", True).matches(bytes([0x41, 0x07, 0xFF]))
    assert not Expected(0, "4*08", False).matches(bytes([0x41, 0x07]))
    assert not Expected(0, "410700", False).matches(bytes([0x41, 0x07]))
