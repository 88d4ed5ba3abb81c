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
# preprocessor the embedded P4 target runs like p4c does (cpp), venv support, and
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

if [[ "${1:-}" == "--print-plan" ]]; then
    echo "apt: ${APT_PACKAGES[*]}"
    echo "venv: $VENV (from $SYSTEM_PYTHON, with system site-packages)"
    echo "pip: -e ${REPO}[test]"
    echo "launcher: $LAUNCHER"
    echo "switch-venv: $VENV/switch (from $SYSTEM_PYTHON: grpcio, protobuf (upb), p4runtime, lark; twinnet --no-deps)"
    echo "switch-launcher: /usr/local/bin/twinnet-switch"
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
if [[ ! -f "$stamp" || "$REPO/pyproject.toml" -nt "$stamp" ]]; then
    echo "== installing Python packages into $VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    "$VENV/bin/python" -m pip install -q -e "${REPO}[test]"
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
# The switch serves P4Runtime; with p4runtime-shell's pinned pure-Python protobuf a
# Write of 100 entries costs ~40 ms of parsing alone. The switch therefore runs in its
# own environment with a current protobuf (upb) and P4Runtime modules regenerated for it
# (p4switch/p4runtime/protos.py; same wire format). emulation.switch_launcher
# finds $SWITCH_VENV/bin/twinnet-switch; /usr/local/bin/twinnet-switch points to it.
SWITCH_VENV="$VENV/switch"  # inside .venv: ignored by git and ruff like it
SWITCH_LAUNCHER=/usr/local/bin/twinnet-switch
switch_stamp="$SWITCH_VENV/.twinnet-switch-installed"
if [[ ! -f "$switch_stamp" || "$REPO/pyproject.toml" -nt "$switch_stamp" \
      || "$REPO/p4switch/p4runtime/protos.py" -nt "$switch_stamp" ]]; then
    echo "== installing the switch environment $SWITCH_VENV"
    [[ -x "$SWITCH_VENV/bin/python" ]] || "$SYSTEM_PYTHON" -m venv "$SWITCH_VENV"
    "$SWITCH_VENV/bin/python" -m pip install -q --upgrade pip
    # Pinned: the P4Runtime modules are regenerated with this grpcio-tools for this protobuf.
    "$SWITCH_VENV/bin/python" -m pip install -q grpcio==1.85.1 grpcio-tools==1.85.1 protobuf==7.36.2 \
        p4runtime==1.6.0 googleapis-common-protos==1.76.0 "lark>=1.1.9"
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
