"""A pipeline config from the network is program text from a stranger: checked, then compiled in a child.

What a P4Runtime client may send as ``p4_device_config`` (see program.py):

- program text only: a ``file:`` reference is refused (it would make the switch read, and
  its errors reveal, files the client could not read);
- preprocessor directives that cannot reach the file system: ``#include`` of exactly
  ``<core.p4>`` or ``<v1model.p4>`` (the switch's own include folder), ``#define``,
  ``#undef``, conditionals, ``#error``, ``#line``; no ``#include`` of anything else,
  ``#include_next``, ``#import``, ``#embed``, ``#pragma`` (``GCC dependency`` reads a file),
  ``__has_include`` or ``_Pragma`` anywhere. Directives are read as cpp reads them: after
  joining backslash-continued lines and removing comments;
- the preprocessor and the compiler run in a child interpreter with limits
  (``resource.setrlimit``: :data:`MEMORY_LIMIT_BYTES` of address space, :data:`CPU_LIMIT_SECONDS`
  of CPU time; the wall clock :data:`WALL_LIMIT_SECONDS`), so a macro bomb or a huge program
  costs the child, not the switch; the child's errors name the program as
  ``<p4_device_config>`` and the switch's own include files only.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

MEMORY_LIMIT_BYTES = 1 << 30
CPU_LIMIT_SECONDS = 20
WALL_LIMIT_SECONDS = 60
ALLOWED_INCLUDES = ("<core.p4>", "<v1model.p4>")
ALLOWED_DIRECTIVES = frozenset(
    {
        "define",
        "undef",
        "if",
        "ifdef",
        "ifndef",
        "elif",
        "else",
        "endif",
        "error",
        "warning",
        "line",
        "include",
    }
)
FORBIDDEN_WORDS = re.compile(r"\b(__has_include|__has_include_next|__has_embed|_Pragma)\b")
PROGRAM_NAME = "<p4_device_config>"
#: programs compiled from text, by the text's SHA-256 (the newest few)
MAX_REMEMBERED = 8
_COMPILED: dict[str, Any] = {}
_DIRECTIVE = re.compile(r"^[ \t\f\v]*#[ \t\f\v]*([A-Za-z_]\w*)?(.*)$")


class UntrustedProgramError(ValueError):
    """The program text is refused or does not compile; the message is safe to send to the client."""


def without_comments(text: str) -> str:
    """``text`` with backslash-newlines joined and comments replaced by a space, as cpp's first phases do.

    String and character literals are kept whole (a ``//`` inside one is not a comment).
    """
    text = text.replace("\\\r\n", "").replace("\\\n", "")
    out: list[str] = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char in "\"'":
            end = index + 1
            while end < length and text[end] != char and text[end] != "\n":
                end += 2 if text[end] == "\\" else 1
            out.append(text[index : end + 1])
            index = end + 1
        elif text.startswith("//", index):
            end = text.find("\n", index)
            out.append(" ")
            index = length if end < 0 else end
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            out.append(" " + "\n" * text.count("\n", index, length if end < 0 else end))
            index = length if end < 0 else end + 2
        else:
            out.append(char)
            index += 1
    return "".join(out)


def check_program_text(text: str) -> None:
    """UntrustedProgramError naming the first directive or word that could reach the file system."""
    cleaned = without_comments(text)
    forbidden = FORBIDDEN_WORDS.search(cleaned)
    if forbidden:
        raise UntrustedProgramError(f"{forbidden[1]} is not allowed in a program sent over P4Runtime")
    for number, line in enumerate(cleaned.split("\n"), start=1):
        match = _DIRECTIVE.match(line)
        if match is None or match[1] is None:
            continue
        name, rest = match[1], match[2].strip()
        if name not in ALLOWED_DIRECTIVES:
            raise UntrustedProgramError(
                f"line {number}: #{name} is not allowed in a program sent over P4Runtime"
            )
        if name == "include" and rest not in ALLOWED_INCLUDES:
            raise UntrustedProgramError(
                f"line {number}: a program sent over P4Runtime may include only "
                f"{' and '.join(ALLOWED_INCLUDES)}, not {rest[:60]!r}"
            )


def _text_key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def remember(text: str, program: Any) -> None:
    """Note that ``text`` compiles to ``program`` (e.g. the command line's program), if the text would pass
    ``check_program_text``: the same text sent over P4Runtime then needs no child (it resolves the
    same includes, the switch's own folder coming first)."""
    try:
        check_program_text(text)
    except UntrustedProgramError:
        return
    _COMPILED[_text_key(text)] = program
    while len(_COMPILED) > MAX_REMEMBERED:
        _COMPILED.pop(next(iter(_COMPILED)))


def compile_untrusted(text: str) -> Any:
    """Check ``text`` and compile it in a limited child; the CompiledProgram, or UntrustedProgramError.

    A text compiled (or remembered) before passed the check then: it is not checked again (a
    process hosting many cards is sent the same program once per card).
    """
    known = _COMPILED.get(_text_key(text))
    if known is not None:
        return known
    check_program_text(text)
    from p4switch.compiler.compile import CompiledProgram

    package_root = str(Path(__file__).resolve().parents[2])
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, environment.get("PYTHONPATH")]))
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "p4switch.daemon.compile_child",
                str(MEMORY_LIMIT_BYTES),
                str(CPU_LIMIT_SECONDS),
            ],
            input=text.encode(),
            capture_output=True,
            timeout=WALL_LIMIT_SECONDS,
            env=environment,
        )
    except subprocess.TimeoutExpired:
        raise UntrustedProgramError(f"compiling took longer than {WALL_LIMIT_SECONDS} s: stopped") from None
    if done.returncode != 0:
        if done.returncode < 0:  # killed: SIGXCPU/SIGKILL at the CPU limit
            raise UntrustedProgramError(
                f"the compiler was stopped by signal {-done.returncode} (limits: {CPU_LIMIT_SECONDS} CPU-s, "
                f"{MEMORY_LIMIT_BYTES >> 20} MiB)"
            )
        raise UntrustedProgramError(f"the compiler failed (exit code {done.returncode})")
    result = pickle.loads(done.stdout)
    if not result["ok"]:
        raise UntrustedProgramError(result["error"])
    program = CompiledProgram(
        result["key"], result["model"], result["source"], marshal.loads(result["code"]), result["p4info"]
    )
    remember(text, program)
    return program
