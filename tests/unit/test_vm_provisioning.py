"""The VM's provisioning script: valid, shellcheck clean, and installing the right packages.

A VM cannot boot on the machines that run this suite, so the script is checked in the
modes that change nothing: ``--dry-run`` (the plan: packages, repository, commands) and a
real run on a machine that is not Ubuntu 22.04, which must refuse before touching it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "provision-vm.sh"
SOURCES = Path("/etc/apt/sources.list.d/twinnet-p4lang.list")
OBS = "download.opensuse.org/repositories"


def require_tool(name: str) -> str:
    """Path of the command ``name``; skip (fail in CI) when it is missing."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed: sudo bash scripts/setup.sh installs it"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def run_script(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the provisioning script with ``args`` and extra environment ``env``."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TWINNET_")}
    full_env.update(env or {})
    return subprocess.run(
        ["bash", str(SCRIPT), *args], capture_output=True, text=True, env=full_env, timeout=60
    )


def plan(env: dict[str, str] | None = None) -> dict[str, str]:
    """The dry run's ``key: value`` lines (``setup>`` lines keyed ``setup> key``)."""
    result = run_script("--dry-run", env=env)
    assert result.returncode == 0, result.stderr
    lines: dict[str, str] = {}
    for line in result.stdout.splitlines():
        if line.startswith("== "):
            continue
        prefix = ""
        if line.startswith("setup> "):
            prefix, line = "setup> ", line.removeprefix("setup> ")
        key, sep, value = line.partition(": ")
        assert sep, f"unexpected dry-run line {line!r}"
        lines[prefix + key] = value
    return lines


def fake_os_release(tmp_path: Path, distro: str, version: str) -> Path:
    """An os-release file describing ``distro`` ``version``."""
    path = tmp_path / "os-release"
    path.write_text(f'NAME="{distro}"\nID={distro}\nVERSION_ID="{version}"\n')
    return path


def test_script_parses() -> None:
    """``bash -n``: the script is valid bash."""
    result = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_script_is_shellcheck_clean() -> None:
    """shellcheck reports nothing, at any severity."""
    shellcheck = require_tool("shellcheck")
    result = subprocess.run([shellcheck, str(SCRIPT)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dry_run_installs_p4c_bmv2_mininet_and_python311() -> None:
    """The plan installs p4lang's p4c and bmv2, Mininet and Python 3.11 with venv support."""
    steps = plan()
    packages = steps["apt"].split()
    for package in ("p4lang-p4c", "p4lang-bmv2", "mininet", "python3.11", "python3.11-venv", "curl", "gnupg"):
        assert package in packages
    assert len(packages) == len(set(packages))
    commands = steps["check"].split()
    for command in ("p4c", "p4c-bm2-ss", "simple_switch_grpc", "simple_switch_CLI", "mn"):
        assert command in commands
    assert steps["venv"].startswith(f"{REPO}/.venv from /usr/bin/python3.11 (with system site-packages;")
    assert steps["switch-venv"].startswith(f"{REPO}/.venv/switch from /usr/bin/python3.11 ")


def test_dry_run_uses_p4lang_repository_for_ubuntu_2204() -> None:
    """Default project home:p4lang, Ubuntu 22.04, key over https, key bound to the source."""
    steps = plan()
    assert steps["release"].startswith("ubuntu 22.04 ")
    keyring = "/usr/share/keyrings/twinnet-home-p4lang.gpg"
    assert steps["apt-key"] == f"https://{OBS}/home:/p4lang/xUbuntu_22.04/Release.key -> {keyring}"
    assert steps["apt-source"] == (
        f"deb [signed-by={keyring}] http://{OBS}/home:/p4lang/xUbuntu_22.04/ / -> {SOURCES}"
    )


def test_dry_run_follows_the_chosen_p4lang_project() -> None:
    """TWINNET_P4LANG_REPO=home:p4lang:latest switches the key, its keyring and the source."""
    steps = plan({"TWINNET_P4LANG_REPO": "home:p4lang:latest"})
    keyring = "/usr/share/keyrings/twinnet-home-p4lang-latest.gpg"
    assert steps["apt-key"] == f"https://{OBS}/home:/p4lang:/latest/xUbuntu_22.04/Release.key -> {keyring}"
    assert steps["apt-source"] == (
        f"deb [signed-by={keyring}] http://{OBS}/home:/p4lang:/latest/xUbuntu_22.04/ / -> {SOURCES}"
    )


def test_dry_run_then_runs_twinnets_own_setup() -> None:
    """The plan ends with scripts/setup.sh, whose own plan (Mininet, the launcher) it shows."""
    steps = plan()
    assert steps["setup"] == f"bash {REPO}/scripts/setup.sh"
    assert "mininet" in steps["setup> apt"].split()
    assert steps["setup> launcher"] == "/usr/local/bin/twinnet"
    assert "import mininet.net" in steps["smoke"] and "twinnet --help" in steps["smoke"]
    assert steps["compile-check"].startswith(f"p4c --target bmv2 --arch v1model {REPO}/p4src/card.p4 ")


def test_dry_run_changes_nothing() -> None:
    """A dry run leaves the apt sources and the virtual environment as they were."""
    had_sources = SOURCES.exists()
    venv_python = REPO / ".venv" / "bin" / "python"
    before = venv_python.resolve() if venv_python.exists() else None
    plan()
    assert SOURCES.exists() == had_sources
    assert (venv_python.resolve() if venv_python.exists() else None) == before


def test_unknown_p4lang_project_is_refused() -> None:
    """Any other project name is an error naming the accepted ones."""
    result = run_script("--dry-run", env={"TWINNET_P4LANG_REPO": "home:someone"})
    assert result.returncode == 2
    assert "home:p4lang or home:p4lang:latest" in result.stderr


def test_unknown_argument_is_refused() -> None:
    """A mistyped option is an error, never a real run."""
    result = run_script("--dryrun")
    assert result.returncode == 2
    assert "unknown argument '--dryrun'" in result.stderr


def test_real_run_refuses_other_releases_before_changing_anything(tmp_path: Path) -> None:
    """On Debian 12 or Ubuntu 24.04 the script stops first, saying why, and changes nothing."""
    had_sources = SOURCES.exists()
    for distro, version in (("debian", "12"), ("ubuntu", "24.04")):
        os_release = fake_os_release(tmp_path, distro, version)
        result = run_script(env={"TWINNET_OS_RELEASE": str(os_release)})
        assert result.returncode == 1
        assert f"this machine is {distro} {version}" in result.stderr
        assert "Ubuntu 22.04" in result.stderr
        assert result.stdout == ""
    assert SOURCES.exists() == had_sources


def test_dry_run_reports_the_machine_release(tmp_path: Path) -> None:
    """The plan names the release the script would find, from TWINNET_OS_RELEASE."""
    os_release = fake_os_release(tmp_path, "ubuntu", "22.04")
    steps = plan({"TWINNET_OS_RELEASE": str(os_release)})
    assert steps["release"] == "ubuntu 22.04 (this machine: ubuntu 22.04)"


def test_help_describes_the_settings() -> None:
    """``--help`` prints the header: usage and both environment settings."""
    result = run_script("--help")
    assert result.returncode == 0
    assert "--dry-run" in result.stdout
    assert "TWINNET_P4LANG_REPO" in result.stdout and "TWINNET_OS_RELEASE" in result.stdout
    assert "set -euo" not in result.stdout
