"""standard_metadata.packet_length in egress: simple_switch reloads it from the packet (its length as
received), so a value ingress wrote does not reach egress. The expected field is the frame's length."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch import compile_program
from p4switch.stf.runner import run_stf
from p4switch.stf.script import read_stf

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<32> ingress_len; bit<32> egress_len; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        hdr.h.ingress_len = sm.packet_length;
        sm.packet_length = 3;
        sm.egress_spec = 1;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply { hdr.h.egress_len = sm.packet_length; }
}
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("length", [8, 64])
def test_egress_sees_the_length_as_received(tmp_path: Path, fused: bool, length: int) -> None:
    path = tmp_path / "len.p4"
    path.write_text(PROGRAM)
    program = compile_program(str(path), use_disk_cache=False)
    frame = bytes(length)
    field = length.to_bytes(4, "big")
    expected = (field + field + bytes(length - 8)).hex()
    stf = tmp_path / "len.stf"
    stf.write_text(f"packet 0 {frame.hex()}\nexpect 1 {expected}$\n")
    result = run_stf(program, read_stf(stf), str(stf), fused=fused)
    assert result.passed, result.report()
    pipeline = program.new_pipeline()
    assert pipeline.process(frame, 0) == [(1, bytes.fromhex(expected))]
