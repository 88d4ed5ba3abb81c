#!/usr/bin/env bash
# Install everything twinnet needs on a Debian/Ubuntu machine, idempotently:
# Debian packages (Mininet and friends), a virtual environment in .venv that sees
# Debian's Mininet through system site-packages, and a `twinnet` launcher on the
# system PATH so that `sudo twinnet ...` works.
#
#   sudo bash scripts/setup.sh            # install (again: only what is missing)
#   bash scripts/setup.sh --print-plan    # print what would be installed, change nothing
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO/.venv"
LAUNCHER=/usr/local/bin/twinnet
# The interpreter the environments are made from (3.11 or newer); TWINNET_PYTHON overrides it.
SYSTEM_PYTHON="${TWINNET_PYTHON:-/usr/bin/python3}"

# Debian packages: the emulator (mininet, iproute2, ethtool, iperf), the C
# preprocessor the embedded P4 target runs like p4c does (cpp), venv support, the
# compiler and headers that build the analysis's loops and the switch's request reader and packet
# I/O (gcc, python3-dev: controller/_kernels.c, p4switch/p4runtime/_wire.c,
# p4switch/daemon/_packet_io.c, built in place by `pip install -e`), and
# what the VM's checks use (tests/unit/test_vm_*.py: ruby, shellcheck, vagrant with
# its libvirt plugin, which makes `vagrant validate` check provider settings too).
APT_PACKAGES=(mininet iproute2 ethtool iperf iputils-ping net-tools procps cpp
              python3-venv python3-dev gcc
              ruby shellcheck vagrant vagrant-libvirt)

missing_apt_packages() {
    local pkg
    for pkg in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
    done
}

# One P4Runtime stack for the controller (.venv) and the switch (.venv/switch): a current
# grpcio and protobuf (upb, in C) with the P4Runtime modules regenerated for them by
# p4switch/p4runtime/protos.py (the ones on PyPI load only on protobuf < 3.21 or its slow
# pure-Python implementation). Pinned: the modules are generated with this grpcio-tools for
# this protobuf.
P4RUNTIME_STACK=(grpcio==1.85.1 grpcio-tools==1.85.1 protobuf==7.36.2 p4runtime==1.6.0
                 googleapis-common-protos==1.76.0)
# p4runtime-shell 0.0.6 (only for `twinnet shell`) pins protobuf < 3.21: an environment of its own.
SHELL_PACKAGES=(p4runtime-shell==0.0.6)
SHELL_VENV="$VENV/shell"  # inside .venv: ignored by git and ruff like it

if [[ "${1:-}" == "--print-plan" ]]; then
    echo "apt: ${APT_PACKAGES[*]}"
    echo "venv: $VENV (from $SYSTEM_PYTHON, with system site-packages)"
    echo "pip: ${P4RUNTIME_STACK[*]}; -e ${REPO}[test]; P4Runtime modules regenerated"
    echo "launcher: $LAUNCHER"
    echo "switch-venv: $VENV/switch (from $SYSTEM_PYTHON: ${P4RUNTIME_STACK[*]}, lark; twinnet --no-deps)"
    echo "switch-launcher: /usr/local/bin/twinnet-switch"
    echo "shell-venv: $SHELL_VENV (from $SYSTEM_PYTHON: ${SHELL_PACKAGES[*]}, for twinnet shell)"
    exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
    echo "setup.sh installs Debian packages and $LAUNCHER: run it as root (sudo bash scripts/setup.sh)" >&2
    exit 1
fi

mapfile -t missing < <(missing_apt_packages)
if (( ${#missing[@]} )); then
    echo "== installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [[ ! -x "$VENV/bin/python" ]]; then
    echo "== creating $VENV"
    "$SYSTEM_PYTHON" -m venv --system-site-packages "$VENV"
fi

stamp="$VENV/.twinnet-installed"
if [[ ! -f "$stamp" || "$REPO/pyproject.toml" -nt "$stamp" || "$REPO/scripts/setup.sh" -nt "$stamp" \
      || "$REPO/p4switch/p4runtime/protos.py" -nt "$stamp" || "$REPO/setup.py" -nt "$stamp" \
      || -n "$(find "$REPO/controller" "$REPO/p4switch" -name '_*.c' -newer "$stamp")" \
      || -z "$(compgen -G "$REPO/controller/_kernels*.so")" \
      || -z "$(compgen -G "$REPO/p4switch/p4runtime/_wire*.so")" \
      || -z "$(compgen -G "$REPO/p4switch/daemon/_packet_io*.so")" ]]; then
    echo "== installing Python packages into $VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    # an environment made before p4runtime-shell moved to $SHELL_VENV: its pins would conflict
    if "$VENV/bin/python" -m pip show -q p4runtime-shell >/dev/null 2>&1; then
        "$VENV/bin/python" -m pip uninstall -q -y p4runtime-shell
    fi
    # one resolution: the pins hold even with PIP_IGNORE_INSTALLED (scripts/provision-vm.sh)
    "$VENV/bin/python" -m pip install -q "${P4RUNTIME_STACK[@]}" -e "${REPO}[test]"
    "$VENV/bin/python" "$REPO/p4switch/p4runtime/protos.py"
    touch "$stamp"
fi

cat > "$LAUNCHER" <<LAUNCH
#!/bin/sh
# twinnet launcher written by $REPO/scripts/setup.sh
exec "$VENV/bin/twinnet" "\$@"
LAUNCH
chmod 755 "$LAUNCHER"
echo "== twinnet is ready: $LAUNCHER -> $VENV/bin/twinnet"

# ---- embedded switch environment (twinnet-switch) ------------------------------------
# The switch is a program of its own (it needs no Mininet, matplotlib, ...): the same
# P4Runtime stack as the controller, and lark for its compiler. emulation.switch_launcher
# finds $SWITCH_VENV/bin/twinnet-switch; /usr/local/bin/twinnet-switch points to it.
SWITCH_VENV="$VENV/switch"  # inside .venv: ignored by git and ruff like it
SWITCH_LAUNCHER=/usr/local/bin/twinnet-switch
switch_stamp="$SWITCH_VENV/.twinnet-switch-installed"
if [[ ! -f "$switch_stamp" || "$REPO/pyproject.toml" -nt "$switch_stamp" \
      || "$REPO/scripts/setup.sh" -nt "$switch_stamp" \
      || "$REPO/p4switch/p4runtime/protos.py" -nt "$switch_stamp" ]]; then
    echo "== installing the switch environment $SWITCH_VENV"
    [[ -x "$SWITCH_VENV/bin/python" ]] || "$SYSTEM_PYTHON" -m venv "$SWITCH_VENV"
    "$SWITCH_VENV/bin/python" -m pip install -q --upgrade pip
    "$SWITCH_VENV/bin/python" -m pip install -q "${P4RUNTIME_STACK[@]}" "lark>=1.1.9"
    "$SWITCH_VENV/bin/python" -m pip install -q --no-deps -e "$REPO"
    "$SWITCH_VENV/bin/python" "$REPO/p4switch/p4runtime/protos.py"
    touch "$switch_stamp"
fi
cat > "$SWITCH_LAUNCHER" <<LAUNCH
#!/bin/sh
# twinnet-switch launcher written by $REPO/scripts/setup.sh
exec "$SWITCH_VENV/bin/twinnet-switch" "\$@"
LAUNCH
chmod 755 "$SWITCH_LAUNCHER"
echo "== twinnet-switch is ready: $SWITCH_LAUNCHER -> $SWITCH_VENV/bin/twinnet-switch"

# ---- p4runtime-shell's environment (twinnet shell) -----------------------------------
# p4runtime-shell 0.0.6 pins protobuf < 3.21, which the controller's fast stack cannot share;
# `twinnet shell` runs `python -m p4runtime_sh` from here (emulation.shell_cli).
shell_stamp="$SHELL_VENV/.twinnet-shell-installed"
if [[ ! -f "$shell_stamp" || "$REPO/scripts/setup.sh" -nt "$shell_stamp" ]]; then
    echo "== installing p4runtime-shell's environment $SHELL_VENV"
    [[ -x "$SHELL_VENV/bin/python" ]] || "$SYSTEM_PYTHON" -m venv "$SHELL_VENV"
    "$SHELL_VENV/bin/python" -m pip install -q --upgrade pip
    "$SHELL_VENV/bin/python" -m pip install -q "${SHELL_PACKAGES[@]}"
    touch "$shell_stamp"
fi
echo "== twinnet shell is ready: $SHELL_VENV/bin/python -m p4runtime_sh"
