"""The Vagrantfile: valid Ruby, valid for Vagrant, and carrying the settings it documents.

A VM cannot boot on the machines that run this suite. The checks are ``ruby -c``,
``vagrant validate`` (Debian's vagrant, with the vagrant-libvirt plugin so that a provider's
settings are validated too), and an evaluation of the Vagrantfile under a stand-in for
Vagrant's configuration objects that records what it sets, with and without the
environment variables that override its defaults.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
VAGRANTFILE = REPO / "Vagrantfile"

# Stand-in for Vagrant's configuration API: records what the Vagrantfile sets, as JSON.
RECORDER_RB = r"""
require "json"

class TwinnetSettings
  def initialize
    @values = {}
  end

  def method_missing(name, *args)
    key = name.to_s
    return @values[key.chomp("=")] = args[0] if key.end_with?("=") && args.size == 1
    return @values["vmx"] ||= {} if key == "vmx" && args.empty?
    super
  end

  def respond_to_missing?(_name, _private = false)
    true
  end

  def to_h
    @values
  end
end

class TwinnetVM
  attr_reader :record

  def initialize
    @record = { "synced_folders" => [], "providers" => {}, "provisioners" => [] }
  end

  def box=(value)
    @record["box"] = value
  end

  def hostname=(value)
    @record["hostname"] = value
  end

  def synced_folder(src, dst, **opts)
    @record["synced_folders"] << { "src" => src, "dst" => dst, "opts" => opts }
  end

  def provider(name)
    settings = TwinnetSettings.new
    yield settings
    @record["providers"][name] = settings.to_h
  end

  def provision(kind, **opts)
    @record["provisioners"] << opts.merge("kind" => kind)
  end
end

class TwinnetConfig
  attr_reader :vm

  def initialize
    @vm = TwinnetVM.new
  end
end

module Vagrant
  def self.require_version(*requirements)
    $twinnet_required = requirements
  end

  def self.configure(version)
    raise "unexpected configuration version #{version}" unless version == "2"
    config = TwinnetConfig.new
    yield config
    puts JSON.generate(config.vm.record.merge("required" => $twinnet_required))
  end
end

load ARGV[0]
"""


def require_tool(name: str) -> str:
    """Path of the command ``name``; skip (fail in CI) when it is missing."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed: sudo bash scripts/setup.sh installs it"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This environment without TWINNET_* settings, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TWINNET_")}
    env.update(extra or {})
    return env


def evaluate(tmp_path: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Evaluate the Vagrantfile under the recorder, with extra environment ``env``."""
    ruby = require_tool("ruby")
    recorder = tmp_path / "recorder.rb"
    recorder.write_text(RECORDER_RB)
    return subprocess.run(
        [ruby, str(recorder), str(VAGRANTFILE)],
        capture_output=True, text=True, env=clean_env(env), cwd=tmp_path, timeout=60,
    )


def settings(tmp_path: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """What the Vagrantfile sets, as recorded."""
    result = evaluate(tmp_path, env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def vagrant_validate(tmp_path: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``vagrant validate`` on the Vagrantfile, keeping Vagrant's state out of the tree."""
    vagrant = require_tool("vagrant")
    full_env = clean_env({
        "VAGRANT_CWD": str(REPO),
        "VAGRANT_HOME": str(tmp_path / "vagrant-home"),
        "VAGRANT_DOTFILE_PATH": str(tmp_path / "dot-vagrant"),
        "VAGRANT_CHECKPOINT_DISABLE": "1",
        "VAGRANT_DEFAULT_PROVIDER": "libvirt",
    })
    full_env.update(env or {})
    return subprocess.run(
        [vagrant, "validate"], capture_output=True, text=True, env=full_env, cwd=tmp_path, timeout=120
    )


def test_vagrantfile_is_valid_ruby() -> None:
    """``ruby -c Vagrantfile`` says Syntax OK."""
    ruby = require_tool("ruby")
    result = subprocess.run([ruby, "-c", str(VAGRANTFILE)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "Syntax OK" in result.stdout


def test_defaults_ubuntu_2204_two_cpus_4_gib(tmp_path: Path) -> None:
    """Box bento/ubuntu-22.04 (p4lang packages bmv2 for 22.04), 2 CPUs and 4096 MiB everywhere."""
    record = settings(tmp_path)
    assert record["box"] == "bento/ubuntu-22.04"
    assert record["hostname"] == "twinnet"
    providers = record["providers"]
    assert set(providers) == {"virtualbox", "libvirt", "vmware_desktop", "parallels"}
    for name in ("virtualbox", "libvirt", "parallels"):
        assert (providers[name]["cpus"], providers[name]["memory"]) == (2, 4096), name
    assert providers["vmware_desktop"]["vmx"] == {"numvcpus": "2", "memsize": "4096"}


def test_environment_overrides_cpus_memory_box(tmp_path: Path) -> None:
    """TWINNET_VM_CPUS, TWINNET_VM_MEMORY and TWINNET_VM_BOX reach every provider."""
    record = settings(tmp_path, {
        "TWINNET_VM_CPUS": "6", "TWINNET_VM_MEMORY": "12288", "TWINNET_VM_BOX": "generic/ubuntu2204",
    })
    assert record["box"] == "generic/ubuntu2204"
    for name in ("virtualbox", "libvirt", "parallels"):
        assert (record["providers"][name]["cpus"], record["providers"][name]["memory"]) == (6, 12288)
    assert record["providers"]["vmware_desktop"]["vmx"] == {"numvcpus": "6", "memsize": "12288"}


@pytest.mark.parametrize(("name", "value"), [
    ("TWINNET_VM_CPUS", "lots"), ("TWINNET_VM_CPUS", "0"), ("TWINNET_VM_CPUS", "-2"),
    ("TWINNET_VM_MEMORY", "4G"), ("TWINNET_VM_MEMORY", "512"), ("TWINNET_P4LANG_REPO", "home:nobody"),
])
def test_bad_settings_stop_with_the_variable_named(tmp_path: Path, name: str, value: str) -> None:
    """A value that is not usable stops the Vagrantfile with a message naming the variable."""
    result = evaluate(tmp_path, {name: value})
    assert result.returncode != 0
    assert name in result.stderr and value in result.stderr
    assert result.stdout == ""


def test_project_synced_to_twinnet_without_host_venv(tmp_path: Path) -> None:
    """The project goes to /twinnet by rsync, without the host's .venv, outputs or .vagrant."""
    folders = settings(tmp_path)["synced_folders"]
    by_dest = {folder["dst"]: folder for folder in folders}
    assert by_dest["/vagrant"]["opts"] == {"disabled": True}
    twinnet = by_dest["/twinnet"]
    assert twinnet["src"] == "."
    assert twinnet["opts"]["type"] == "rsync"
    excluded = twinnet["opts"]["rsync__exclude"]
    for path in (".venv/", ".vagrant/", "out/", "*.egg-info/"):
        assert path in excluded


def test_provisioning_runs_the_script_from_the_synced_copy(tmp_path: Path) -> None:
    """One privileged shell provisioner runs scripts/provision-vm.sh from /twinnet."""
    record = settings(tmp_path, {"TWINNET_P4LANG_REPO": "home:p4lang:latest"})
    (provisioner,) = record["provisioners"]
    assert provisioner["kind"] == "shell"
    assert provisioner["privileged"] is True
    assert provisioner["inline"] == "bash /twinnet/scripts/provision-vm.sh"
    assert provisioner["env"] == {"TWINNET_P4LANG_REPO": "home:p4lang:latest"}
    assert (REPO / "scripts" / "provision-vm.sh").is_file()
    assert settings(tmp_path)["provisioners"][0]["env"] == {"TWINNET_P4LANG_REPO": "home:p4lang"}


def test_box_release_matches_the_provisioning_script(tmp_path: Path) -> None:
    """The default box is the release the provisioning script accepts (22.04)."""
    box = settings(tmp_path)["box"]
    result = subprocess.run(
        ["bash", str(REPO / "scripts" / "provision-vm.sh"), "--dry-run"],
        capture_output=True, text=True, env=clean_env(), timeout=60,
    )
    release = next(line for line in result.stdout.splitlines() if line.startswith("release: "))
    version = release.split()[2]
    assert box.endswith(f"-{version}"), (box, release)


def test_vagrant_validates_the_vagrantfile(tmp_path: Path) -> None:
    """``vagrant validate`` accepts it, libvirt provider settings included."""
    result = vagrant_validate(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "validated successfully" in result.stdout


def test_vagrant_validate_rejects_a_bad_setting(tmp_path: Path) -> None:
    """The same command fails on a bad TWINNET_VM_MEMORY, so the check above can fail."""
    result = vagrant_validate(tmp_path, {"TWINNET_VM_MEMORY": "lots"})
    assert result.returncode != 0
    assert "TWINNET_VM_MEMORY" in result.stdout + result.stderr
