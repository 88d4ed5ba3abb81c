"""The compile step, one interface for both targets: a card program -> (P4Info, device config).

    p4info, device_config = compile_card_program("p4src/card.p4", "embedded")

* ``bmv2``: runs ``p4c --target bmv2 --arch v1model --p4runtime-files ...``; the
  device config is bmv2's JSON. Needs p4c on PATH (the Vagrant VM).
* ``embedded``: the embedded target's own front end (``p4switch``,
  imported here lazily, only for this step: the controller needs nothing else
  of the emulation). Its device config is the P4 source text, which the switch
  compiles itself (p4switch/daemon/program.py); ``-D`` defines are
  written in front of the source so that the switch compiles the same program.

Results are cached by a hash of the source text, the defines, the include
directories and the target (p4c's outputs also on disk, under
``$TWINNET_CACHE`` or ``~/.cache/twinnet/p4c/<hash>/``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

from topologies.errors import TwinnetError

TARGETS = ("bmv2", "embedded")
_CACHE: dict[str, CompiledCard] = {}


class CompileError(TwinnetError, RuntimeError):
    """The card program does not compile for the target (the compiler's message is included)."""


@dataclass(frozen=True)
class CompiledCard:
    """A compiled card program: what SetForwardingPipelineConfig sends. Unpacks as (p4info, device_config)."""

    p4info: p4info_pb2.P4Info
    device_config: bytes
    target: str
    source: Path
    source_hash: str

    def __iter__(self) -> Iterator:
        return iter((self.p4info, self.device_config))


def source_hash(
    path: Path,
    target: str,
    defines: Mapping[str, str | int] | None = None,
    include_dirs: Sequence[str | Path] = (),
) -> str:
    """Cache key: the program text, the defines, the include directories and the target."""
    digest = hashlib.sha256(path.read_bytes())
    digest.update(f"\0{target}\0{sorted((defines or {}).items())}\0{[str(d) for d in include_dirs]}".encode())
    return digest.hexdigest()


def compile_card_program(
    path: str | Path,
    target: str = "embedded",
    *,
    defines: Mapping[str, str | int] | None = None,
    include_dirs: Sequence[str | Path] = (),
) -> CompiledCard:
    """Compile `path` for `target` ("bmv2" or "embedded"); cached by source hash. Raises CompileError."""
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    source = Path(path).resolve()
    if not source.is_file():
        raise CompileError(f"card program {source} does not exist")
    key = source_hash(source, target, defines, include_dirs)
    if key not in _CACHE:
        compile_function = _compile_bmv2 if target == "bmv2" else _compile_embedded
        p4info, device_config = compile_function(
            source, key, dict(defines or {}), [str(d) for d in include_dirs]
        )
        _CACHE[key] = CompiledCard(p4info, device_config, target, source, key)
    return _CACHE[key]


def _compile_embedded(
    source: Path, key: str, defines: dict, include_dirs: list[str]
) -> tuple[p4info_pb2.P4Info, bytes]:
    from p4switch import P4CompileError, compile_program

    text = source.read_text()
    if defines:
        text = "".join(f"#define {name} {value}\n" for name, value in defines.items()) + text
    include = (*include_dirs, str(source.parent))
    compiled_path = source
    if defines:  # compile exactly the text the switch will get
        compiled_path = cache_dir() / "embedded" / f"{key}.p4"
        compiled_path.parent.mkdir(parents=True, exist_ok=True)
        compiled_path.write_text(text)
    try:
        program = compile_program(str(compiled_path), include_dirs=include)
    except P4CompileError as error:
        raise CompileError(f"{source} does not compile for the embedded target: {error}") from error
    return program.p4info, text.encode()


def cache_dir() -> Path:
    """Where compiled programs are kept: $TWINNET_CACHE, else ~/.cache/twinnet."""
    return Path(os.environ.get("TWINNET_CACHE", Path.home() / ".cache" / "twinnet"))


def p4c_outputs(source: Path, out_dir: Path) -> tuple[Path, Path]:
    """Where p4c_command's compile leaves bmv2's JSON and the P4Info (text format, ``.txt``:
    p4c picks the P4Info format from the suffix and knows .txt, .bin and .json)."""
    return out_dir / f"{source.stem}.json", out_dir / f"{source.stem}.p4info.txt"


def p4c_command(
    source: Path,
    out_dir: Path,
    defines: Mapping[str, str | int] | None = None,
    include_dirs: Sequence[str] = (),
) -> list[str]:
    """The p4c command line that compiles `source` for bmv2 (v1model) into `out_dir`."""
    command = [
        "p4c",
        "--target",
        "bmv2",
        "--arch",
        "v1model",
        "--p4runtime-files",
        str(p4c_outputs(source, out_dir)[1]),
        "-o",
        str(out_dir),
    ]
    command += [f"-D{name}={value}" for name, value in (defines or {}).items()]
    command += [f"-I{directory}" for directory in include_dirs]
    command.append(str(source))
    return command


def _compile_bmv2(
    source: Path, key: str, defines: dict, include_dirs: list[str]
) -> tuple[p4info_pb2.P4Info, bytes]:
    if shutil.which("p4c") is None:
        raise CompileError(
            "p4c is not on PATH: the bmv2 target needs it (use the embedded target, or the VM)"
        )
    out_dir = cache_dir() / "p4c" / key
    json_path, p4info_path = p4c_outputs(source, out_dir)
    if not (p4info_path.is_file() and json_path.is_file()):
        out_dir.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(
            p4c_command(source, out_dir, defines, include_dirs), capture_output=True, text=True, check=False
        )
        if result.returncode != 0:
            raise CompileError(
                f"p4c failed on {source} (exit {result.returncode}): "
                f"{(result.stderr or result.stdout).strip()[-2000:]}"
            )
    return read_p4info(p4info_path), json_path.read_bytes()


def read_p4info(path: str | Path) -> p4info_pb2.P4Info:
    """A P4Info from a file: text format (.txt, .txtpb, as p4c writes it) or binary (.bin, .pb)."""
    path = Path(path)
    info = p4info_pb2.P4Info()
    if path.suffix in (".bin", ".pb"):
        info.ParseFromString(path.read_bytes())
    else:
        text_format.Merge(path.read_text(), info, allow_unknown_field=True)
    return info
