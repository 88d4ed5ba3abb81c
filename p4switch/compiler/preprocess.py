"""C preprocessing of P4 sources (as p4c does with cpp), keeping a map back to the original lines."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from p4switch.errors import P4CompileError

INCLUDE_DIR = Path(__file__).resolve().parent / "include"
CPP = "/usr/bin/cpp"
#: include files of P4 architectures other than v1model, and the architecture each names
_ARCHITECTURES = {"psa.p4": "PSA", "pna.p4": "PNA", "tna.p4": "TNA", "ebpf_model.p4": "eBPF"}
_LINEMARKER = re.compile(r'^#\s*(?:line\s+)?(\d+)\s+"((?:\\.|[^"\\])*)"')


@dataclass(frozen=True)
class Preprocessed:
    """Preprocessed text and, for each of its lines (0-based), the original (file, line)."""

    text: str
    line_map: tuple[tuple[str, int], ...]

    def origin(self, line: int) -> tuple[str, int]:
        """Original (file, line) of a 1-based line of the preprocessed text."""
        if 1 <= line <= len(self.line_map):
            return self.line_map[line - 1]
        return (self.line_map[-1][0] if self.line_map else "<input>", line)


def preprocess(
    path: str | Path, include_dirs: tuple[str, ...] = (), defines: dict | None = None
) -> Preprocessed:
    """Run cpp on a P4 file with the target's own include folder first; line markers become the line map."""
    path = Path(path)
    if not path.is_file():
        raise P4CompileError(str(path), 0, 0, "no such P4 source file")
    args = [CPP, "-undef", "-nostdinc", "-x", "c", "-I", str(INCLUDE_DIR)]
    for folder in include_dirs:
        args += ["-I", str(folder)]
    for name, value in (defines or {}).items():
        args.append(f"-D{name}" if value is None else f"-D{name}={value}")
    args.append(str(path))
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        first = next((ln for ln in run.stderr.splitlines() if "error" in ln), run.stderr.strip())
        match = re.match(r"^(.*?):(\d+):(\d+): (?:fatal )?error: (.*)$", first)
        if match:
            architecture = _ARCHITECTURES.get(Path(match[4].split(":")[0]).name)
            if architecture is not None and "No such file" in match[4]:
                message = f"the {architecture} architecture is not supported (the target runs v1model)"
                raise P4CompileError(match[1], int(match[2]), int(match[3]), message)
            raise P4CompileError(match[1], int(match[2]), int(match[3]), "preprocessor: " + match[4])
        raise P4CompileError(str(path), 0, 0, "preprocessor: " + first)
    return split_linemarkers(run.stdout, str(path))


def split_linemarkers(output: str, default_file: str) -> Preprocessed:
    """Remove cpp line markers from its output and record where every remaining line came from."""
    lines: list[str] = []
    line_map: list[tuple[str, int]] = []
    current_file, current_line = default_file, 1
    for raw in output.split("\n"):
        marker = _LINEMARKER.match(raw)
        if marker:
            current_line = int(marker[1])
            current_file = marker[2].replace('\\"', '"')
            continue
        lines.append(raw)
        line_map.append((current_file, current_line))
        current_line += 1
    return Preprocessed("\n".join(lines), tuple(line_map))
