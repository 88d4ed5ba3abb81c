"""The project's own shell scripts (set-up, tests, demo, CI): valid bash, shellcheck clean, plan printable."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = sorted([*REPO.glob("scripts/*.sh"), REPO / ".ci" / "run"])


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: str(path.relative_to(REPO)))
def test_script_parses_and_is_shellcheck_clean(script: Path) -> None:
    """bash -n accepts it and shellcheck reports nothing, at any severity."""
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (scripts/setup.sh installs it)")
    result = subprocess.run([shellcheck, str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_setup_plan_names_mininet_and_both_environments() -> None:
    """--print-plan changes nothing and names the Debian packages, the environment and the launcher."""
    result = subprocess.run(
        ["bash", str(REPO / "scripts" / "setup.sh"), "--print-plan"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    apt_line = next(line for line in result.stdout.splitlines() if line.startswith("apt:"))
    for package in ("mininet", "iproute2", "ethtool", "cpp", "python3-venv"):
        assert package in apt_line.split()
    assert "/usr/local/bin/twinnet" in result.stdout
    assert "/usr/local/bin/twinnet-switch" in result.stdout


def test_ci_calls_the_readme_test_command() -> None:
    """.ci/run runs scripts/test.sh, the test command README gives."""
    readme = (REPO / "README.md").read_text()
    assert "bash scripts/test.sh" in readme
    assert "scripts/test.sh" in (REPO / ".ci" / "run").read_text()
