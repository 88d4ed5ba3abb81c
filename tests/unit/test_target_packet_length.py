"""standard_metadata.packet_length in egress: simple_switch reloads it from the packet (its length as
received), so a value ingress wrote does not reach egress. The expected field is the frame's length."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4switch import compile_program
from p4switch.stf.runner import run_stf
from p4switch.stf.script import read_stf

PROGRAM_FILE = Path(__file__).resolve().parents[1] / "p4progs" / "packet_length.p4"


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("length", [8, 64])
def test_egress_sees_the_length_as_received(tmp_path: Path, fused: bool, length: int) -> None:
    program = compile_program(str(PROGRAM_FILE), use_disk_cache=False)
    frame = bytes(length)
    field = length.to_bytes(4, "big")
    expected = (field + field + bytes(length - 8)).hex()
    stf = tmp_path / "len.stf"
    stf.write_text(f"packet 0 {frame.hex()}\nexpect 1 {expected}$\n")
    result = run_stf(program, read_stf(stf), str(stf), fused=fused)
    assert result.passed, result.report()
    pipeline = program.new_pipeline()
    assert pipeline.process(frame, 0) == [(1, bytes.fromhex(expected))]
