"""The child that compiles a program sent over P4Runtime (see untrusted.py): limits first, then compile.

    python -m p4switch.daemon.compile_child ADDRESS_SPACE_BYTES CPU_SECONDS  < program text

Writes one pickle to stdout: {"ok": True, key, model, source, code (marshal), p4info} or
{"ok": False, "error": message}. The limits bind the preprocessor too (a grandchild inherits them).
"""

from __future__ import annotations

import marshal
import os
import pickle
import resource
import sys
import tempfile


def limit(address_space: int, cpu_seconds: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def compile_text(text: str) -> dict:
    from p4switch.compiler.compile import compile_program
    from p4switch.daemon.untrusted import PROGRAM_NAME

    with tempfile.TemporaryDirectory(prefix="twinnet-config-") as folder:
        path = os.path.join(folder, "program.p4")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        try:
            program = compile_program(path, include_dirs=())
        except MemoryError:
            return {"ok": False, "error": "the compiler ran out of its memory limit"}
        except Exception as error:  # P4CompileError and anything else: a message, never a traceback
            return {"ok": False, "error": str(error).replace(path, PROGRAM_NAME).replace(folder, "")}
    return {
        "ok": True,
        "key": program.source_hash,
        "model": program.model,
        "source": program.python_source,
        "code": marshal.dumps(program.code),
        "p4info": program.p4info_bytes,
    }


def main() -> int:
    limit(int(sys.argv[1]), int(sys.argv[2]))
    try:
        text = sys.stdin.buffer.read().decode("utf-8")
        result = compile_text(text)
    except MemoryError:
        result = {"ok": False, "error": "the compiler ran out of its memory limit"}
    sys.stdout.buffer.write(pickle.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
