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
SYSTEM_PYTHON=/usr/bin/python3

# Debian packages: the emulator (mininet, iproute2, ethtool, iperf), the C
# preprocessor the embedded P4 target runs like p4c does (cpp), venv support.
APT_PACKAGES=(mininet iproute2 ethtool iperf iputils-ping net-tools procps cpp
              python3-venv python3-dev gcc)

missing_apt_packages() {
    local pkg
    for pkg in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
    done
}

if [[ "${1:-}" == "--print-plan" ]]; then
    echo "apt: ${APT_PACKAGES[*]}"
    echo "venv: $VENV (from $SYSTEM_PYTHON, with system site-packages)"
    echo "pip: -e $REPO[test]"
    echo "launcher: $LAUNCHER"
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
    "$VENV/bin/python" -m pip install -q -e "$REPO[test]"
    touch "$stamp"
fi

cat > "$LAUNCHER" <<LAUNCH
#!/bin/sh
# twinnet launcher written by $REPO/scripts/setup.sh
exec "$VENV/bin/twinnet" "\$@"
LAUNCH
chmod 755 "$LAUNCHER"
echo "== twinnet is ready: $LAUNCHER -> $VENV/bin/twinnet"
