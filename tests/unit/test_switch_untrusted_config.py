"""A pipeline config from the network is program text: refused when it could reach files, compiled in a child.

``file:`` references, includes other than ``<core.p4>``/``<v1model.p4>``, and preprocessor
features that open or probe files are refused before any preprocessor runs, however the
directive is spelled (comments, continued lines). What passes is compiled in a child with
an address-space and CPU limit: a macro bomb costs the child. Errors name the program as
``<p4_device_config>`` and never carry a file's contents.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from google.rpc import code_pb2

from p4switch import compile_program
from p4switch.daemon.program import compile_device_config, default_compile
from p4switch.daemon.untrusted import (
    PROGRAM_NAME,
    UntrustedProgramError,
    check_program_text,
    compile_untrusted,
)
from p4switch.p4runtime.info import P4RuntimeError

BASIC = Path(__file__).resolve().parents[1] / "p4progs" / "basic.p4"

REFUSED = [
    '#include "/dev/zero"\n',
    "#include </etc/passwd>\n",
    "#include <../../../../etc/passwd>\n",
    '  #  include "x.p4"\n',
    '#/* comment */include "/etc/shadow"\n',
    '#inc\\\nlude "/etc/shadow"\n',
    '#define F "/etc/shadow"\n#include F\n',
    '#include_next "/etc/shadow"\n',
    '#import "/etc/shadow"\n',
    '#embed "/etc/shadow"\n',
    '#pragma GCC dependency "/etc/shadow"\n',
    '#if __has_include("/root/.bashrc")\n#endif\n',
    "#if defined(X) || __has_include_next(<x>)\n#endif\n",
    '_Pragma("GCC dependency \\"/etc/shadow\\"")\n',
]


@pytest.mark.parametrize("text", REFUSED)
def test_directives_that_reach_files_are_refused(text: str) -> None:
    with pytest.raises(UntrustedProgramError, match="not allowed|may include only"):
        check_program_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "#include <core.p4>\n#include <v1model.p4>\n",
        '// #include "/etc/shadow" in a comment\n',
        '/* #include "/etc/shadow"\n   still a comment */\n',
        'const bit<8> X = 1; // "#include"\n#define Y 2\n#ifdef Y\n#endif\n',
    ],
)
def test_harmless_text_passes_the_check(text: str) -> None:
    check_program_text(text)


@pytest.mark.parametrize("reference", ["file:/etc/passwd", "file:/root/.bashrc", "file:/nonexistent"])
def test_file_references_are_refused_without_a_look_at_the_file(reference: str) -> None:
    with pytest.raises(P4RuntimeError) as refused:
        compile_device_config(reference.encode(), default_compile, ())
    assert refused.value.code == code_pb2.INVALID_ARGUMENT
    assert "file: references are not accepted" in str(refused.value)
    assert "not a file" not in str(refused.value)  # the old answer told whether the path existed


def test_a_program_compiles_in_the_child_as_it_does_in_process() -> None:
    text = BASIC.read_text()
    program = compile_untrusted(text + "\n// sent over P4Runtime\n")
    assert program.p4info == compile_program(BASIC).p4info
    assert program.new_pipeline() is not None


def test_compile_errors_name_the_config_not_a_path() -> None:
    with pytest.raises(P4RuntimeError) as refused:
        compile_device_config(
            b"#include <core.p4>\n#include <v1model.p4>\nthis is not P4;\n", default_compile, ()
        )
    message = str(refused.value)
    assert f"{PROGRAM_NAME}:3:" in message and "/tmp" not in message


def test_a_macro_bomb_is_stopped_by_the_childs_limits() -> None:
    bomb = (
        "#define A(x) x x x x x x x x x x\n#define B(x) A(A(A(x)))\n#define C(x) B(B(B(x)))\n"
        "#define D(x) C(C(C(x)))\nD(1)\n"
    )
    with pytest.raises(UntrustedProgramError, match="memory|limit|signal"):
        compile_untrusted(bomb)
