"""compile_program: preprocess, parse, generate and compile a P4 program once, cached by source hash."""

from __future__ import annotations

import hashlib
import logging
import marshal
import os
import pickle
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import CodeType

from p4.config.v1 import p4info_pb2

from p4switch.compiler.codegen import CodeGenerator
from p4switch.compiler.fusion import FusionError, fuse, hoist_stack_element_writes
from p4switch.compiler.model import ProgramModel
from p4switch.compiler.p4info import build_p4info
from p4switch.compiler.parser import parse
from p4switch.compiler.preprocess import preprocess
from p4switch.errors import P4CompileError
from p4switch.runtime.pipeline import Pipeline

log = logging.getLogger("twinnet.target.compiler")
_PACKAGE_DIR = Path(__file__).resolve().parent
_MEMORY_CACHE: dict[str, CompiledProgram] = {}
MAX_CACHED_PROGRAMS = 64  # compiled programs kept on disk


@dataclass
class CompiledProgram:
    """A compiled P4 program: P4Info, control-plane model, generated code; makes pipelines."""

    source_hash: str
    model: ProgramModel
    python_source: str
    code: CodeType
    p4info_bytes: bytes
    from_cache: str = ""  # "" (compiled now), "memory" or "disk"

    @property
    def p4info(self) -> p4info_pb2.P4Info:
        """The P4Info message (a fresh copy each time)."""
        info = p4info_pb2.P4Info()
        info.ParseFromString(self.p4info_bytes)
        return info

    def new_pipeline(self) -> Pipeline:
        """A pipeline with fresh state: empty tables (except const entries), zero counters and registers."""
        return Pipeline(self)


@lru_cache(maxsize=1)
def _target_version() -> str:
    """Hash of the target's own sources, so a changed compiler never reuses stale cache files."""
    digest = hashlib.sha256(sys.version.encode())
    # every module of the compiler, its subpackages (codegen/, fusion/) included
    for path in sorted(_PACKAGE_DIR.rglob("*.py")) + sorted(_PACKAGE_DIR.glob("*.lark")):
        digest.update(str(path.relative_to(_PACKAGE_DIR)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_dir() -> Path:
    """Folder of the on-disk caches: ``p4`` under $TWINNET_CACHE (twinnet's one cache variable), else
    ~/.cache/twinnet/p4. p4switch reads the variable itself: it imports nothing of twinnet."""
    env = os.environ.get("TWINNET_CACHE")
    return (Path(env) if env else Path.home() / ".cache" / "twinnet") / "p4"


def compile_program(
    path: str | os.PathLike,
    include_dirs=(),
    defines: dict | None = None,
    strict: bool = True,
    use_disk_cache: bool = True,
) -> CompiledProgram:
    """Compile a P4_16 v1model program; raises P4CompileError("file:line:col: error: message")."""
    source = preprocess(path, tuple(str(d) for d in include_dirs), defines)
    key = hashlib.sha256(f"{_target_version()}|strict={strict}|".encode() + source.text.encode()).hexdigest()
    cached = _MEMORY_CACHE.get(key)
    if cached is not None:
        cached.from_cache = "memory"
        return cached
    disk_file = cache_dir() / f"{key}.pickle"
    if use_disk_cache and disk_file.is_file():
        try:
            data = pickle.loads(disk_file.read_bytes())
            program = CompiledProgram(
                key, data["model"], data["source"], marshal.loads(data["code"]), data["p4info"], "disk"
            )
            _MEMORY_CACHE[key] = program
            return program
        except Exception:  # a damaged or incompatible cache file: compile again
            pass
    tree = parse(source)
    generator = CodeGenerator(source, strict=strict)
    try:
        python_source, model = generator.generate(tree)
        python_source = fused_or_plain(python_source, model)
        code = compile(python_source, f"<p4 {Path(path).name}>", "exec")
        p4info_bytes = build_p4info(model).SerializeToString()
    except P4CompileError:
        raise
    except Exception as exc:  # a compiler bug: still reported against the program, never half-compiled
        message = f"internal compiler error: {type(exc).__name__}: {exc}"
        raise P4CompileError(str(path), 0, 0, message) from exc
    program = CompiledProgram(key, model, python_source, code, p4info_bytes)
    _MEMORY_CACHE[key] = program
    if use_disk_cache:
        _store(disk_file, program)
    return program


def fused_or_plain(python_source: str, model: ProgramModel) -> str:
    """The module optimised by p4switch.compiler.fusion: stack element writes everywhere, then run_fused.

    If the fusion of run_fused declines, run_fused stays as generated.
    """
    python_source = hoist_stack_element_writes(python_source)
    if model.uses_special_ops:  # run_fused only hands every packet to the traffic manager
        return python_source
    if model.meters or model.direct_meters:  # meter colours pass through the standard metadata object
        return python_source
    if model.digests:  # a digest passes through the standard metadata object too
        return python_source
    table_actions = {
        table.global_name: list(
            dict.fromkeys(
                table.bound_functions.get(name, model.actions[name].function)
                for name in [ref.action for ref in table.actions] + [table.default_action]
            )
        )
        for table in model.tables.values()
    }
    try:
        return fuse(python_source, table_actions)
    except FusionError as error:
        log.debug("run_fused kept as generated: %s", error)
        return python_source


def _store(disk_file: Path, program: CompiledProgram) -> None:
    """Write a program to the disk cache; failures only cost a recompilation later."""
    try:
        disk_file.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "model": program.model,
            "source": program.python_source,
            "code": marshal.dumps(program.code),
            "p4info": program.p4info_bytes,
        }
        temp = disk_file.with_suffix(f".tmp{os.getpid()}")
        temp.write_bytes(pickle.dumps(data))
        temp.replace(disk_file)
        _prune(disk_file.parent)
    except OSError:
        pass


def _prune(folder: Path, keep: int = MAX_CACHED_PROGRAMS) -> None:
    """Remove the least recently written cache files beyond `keep`."""
    files = sorted(folder.glob("*.pickle"), key=lambda f: f.stat().st_mtime, reverse=True)
    for stale in files[keep:]:
        stale.unlink(missing_ok=True)


def clear_memory_cache() -> None:
    """Forget programs compiled in this process (tests use it)."""
    _MEMORY_CACHE.clear()
