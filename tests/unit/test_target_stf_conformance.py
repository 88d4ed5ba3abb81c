"""p4c's own STF packet tests (../shared/conformance, p4c v1.2.4.9) on the embedded target, both paths.

Every program either passes its STF file on the general path (``ingress``/``egress``)
and on the fused driver, or is refused with an error located in the source (never an
internal error, a wrong frame or a crash); PSA programs are refused naming PSA. For the
programs p4c compiled (``p4c-p4info/``), the P4Info the target derives equals p4c's
after canonical ordering. The corpus is read where it is (never copied); without it
these tests are skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from p4switch.compiler.compile import compile_program
from p4switch.errors import P4CompileError
from p4switch.stf.command import PASSED, REFUSED, run_stf_file

CONFORMANCE = Path(__file__).resolve().parents[2].parent / "shared" / "conformance"
STF_FOLDER = CONFORMANCE / "p4c-stf"
P4INFO_FOLDER = CONFORMANCE / "p4c-p4info"
STF_FILES = sorted(STF_FOLDER.glob("*.stf")) if STF_FOLDER.is_dir() else []
P4INFO_FILES = sorted(P4INFO_FOLDER.glob("*.p4info.txtpb")) if P4INFO_FOLDER.is_dir() else []
ABSENT = f"the conformance corpus is not at {CONFORMANCE}"
REPEATED = (
    "tables",
    "actions",
    "counters",
    "direct_counters",
    "meters",
    "direct_meters",
    "registers",
    "digests",
)


def is_psa(program: Path) -> bool:
    """Whether a program is written for PSA (it includes psa.p4)."""
    return any("psa.p4" in line for line in program.read_text().splitlines() if line.startswith("#include"))


@pytest.mark.skipif(not STF_FILES, reason=ABSENT)
@pytest.mark.parametrize("stf", STF_FILES, ids=[f.stem for f in STF_FILES])
def test_stf_passes_or_the_program_is_refused_at_a_construct(stf: Path) -> None:
    """Both paths pass, or both refuse at a file:line:column that is not an internal error."""
    program = stf.with_suffix(".p4")
    general = run_stf_file(stf, program)
    fused = run_stf_file(stf, program, fused=True)
    assert general.status in (PASSED, REFUSED), general.text
    assert fused.status == general.status, fused.text
    if general.status == REFUSED:
        location, _, message = general.text.partition(": error: ")
        assert int(location.split(":")[-2]) > 0, general.text
        assert "internal compiler error" not in message, general.text
        if is_psa(program):
            assert "PSA" in message, general.text
    else:
        assert not is_psa(program)


def canonical(info: p4info_pb2.P4Info) -> p4info_pb2.P4Info:
    """A copy with every list of P4 objects in id order (P4Info's order carries no meaning)."""
    copy = p4info_pb2.P4Info.FromString(info.SerializeToString())
    for name in REPEATED:
        items = sorted(getattr(copy, name), key=lambda item: item.preamble.id)
        del getattr(copy, name)[:]
        getattr(copy, name).extend(items)
    return copy


@pytest.mark.skipif(not P4INFO_FILES, reason=ABSENT)
@pytest.mark.parametrize("reference", P4INFO_FILES, ids=[f.name.split(".")[0] for f in P4INFO_FILES])
def test_p4info_equals_p4cs_for_every_program_both_accept(reference: Path) -> None:
    """Same tables, actions, ids, annotations, type_info as p4c-bm2-ss writes."""
    program = STF_FOLDER / reference.name.replace(".p4info.txtpb", ".p4")
    try:
        compiled = compile_program(program, (program.parent,), use_disk_cache=False)
    except P4CompileError as error:
        pytest.skip(f"refused by the target: {error}")
    expected = text_format.Parse(reference.read_text(), p4info_pb2.P4Info())
    got = p4info_pb2.P4Info.FromString(compiled.p4info_bytes)
    assert text_format.MessageToString(canonical(got)) == text_format.MessageToString(canonical(expected))
