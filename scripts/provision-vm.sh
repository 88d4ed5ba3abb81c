#!/usr/bin/env bash
# Provision twinnet's VM (see the Vagrantfile), idempotently: p4lang's packaged p4c
# (p4c-bm2-ss back end) and bmv2 (simple_switch_grpc, simple_switch_CLI) from p4lang's
# repository on the openSUSE Build Service, Mininet, a Python >= 3.11, then twinnet
# itself through scripts/setup.sh, exactly as on a machine without a VM.
#
#   sudo bash scripts/provision-vm.sh            # what `vagrant up` runs inside the VM
#   bash scripts/provision-vm.sh --dry-run       # print the packages and steps, change nothing
#
# Environment:
#   TWINNET_P4LANG_REPO  p4lang's package project: home:p4lang (default, the one p4c's and
#                        bmv2's READMEs document) or home:p4lang:latest (newer releases)
#   TWINNET_OS_RELEASE   os-release file describing this machine (default /etc/os-release)
#
# Only Ubuntu 22.04 is accepted: it is the Ubuntu LTS release for which p4lang packages
# both p4c and bmv2 (there is no p4lang-bmv2 for 24.04). Its python3 is 3.10, older than
# twinnet's minimum, so the virtual environments are made from Ubuntu's python3.11
# before scripts/setup.sh runs (setup.sh keeps existing ones and installs into them).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO/.venv"
SWITCH_VENV="$VENV/switch"         # scripts/setup.sh's environment for twinnet-switch
LAUNCHER=/usr/local/bin/twinnet    # written by scripts/setup.sh
OS_RELEASE="${TWINNET_OS_RELEASE:-/etc/os-release}"

# The one release this script provisions, and the interpreter for .venv there.
UBUNTU_RELEASE=22.04
VENV_PYTHON=/usr/bin/python3.11
MIN_PYTHON=3.11

# p4lang's package repository. The package list goes over plain http as p4lang documents
# it (download.opensuse.org redirects to mirrors, some http only, and apt refuses an
# https -> http redirect); apt checks every package against the key, fetched over https,
# and trusts that key for this repository only (signed-by).
OBS_PROJECT="${TWINNET_P4LANG_REPO:-home:p4lang}"
case "$OBS_PROJECT" in
    home:p4lang | home:p4lang:latest) ;;
    *)
        echo "TWINNET_P4LANG_REPO must be home:p4lang or home:p4lang:latest, not '$OBS_PROJECT'" >&2
        exit 2
        ;;
esac
OBS_PATH="${OBS_PROJECT//:/:\/}"    # home:p4lang:latest -> home:/p4lang:/latest
APT_REPO_URL="http://download.opensuse.org/repositories/$OBS_PATH/xUbuntu_$UBUNTU_RELEASE/"
KEY_URL="https://download.opensuse.org/repositories/$OBS_PATH/xUbuntu_$UBUNTU_RELEASE/Release.key"
# One keyring per project, so that a key kept after a failed fetch is never used for
# another project's packages.
KEYRING="/usr/share/keyrings/twinnet-${OBS_PROJECT//:/-}.gpg"
SOURCES=/etc/apt/sources.list.d/twinnet-p4lang.list
SOURCE_LINE="deb [signed-by=$KEYRING] $APT_REPO_URL /"

# Packages: what the repository set-up needs, p4lang's tools (p4lang-bmv2 brings
# p4lang-pi, the P4Runtime server of simple_switch_grpc), Mininet and Python 3.11.
REPO_TOOL_PACKAGES=(ca-certificates curl gnupg)
P4_PACKAGES=(p4lang-p4c p4lang-bmv2)
VM_PACKAGES=(mininet python3.11 python3.11-venv python3.11-dev)
ALL_PACKAGES=("${REPO_TOOL_PACKAGES[@]}" "${P4_PACKAGES[@]}" "${VM_PACKAGES[@]}")

# Commands the bmv2 target needs, checked after installation.
REQUIRED_COMMANDS=(p4c p4c-bm2-ss simple_switch_grpc simple_switch_CLI mn)

# The card program, compiled once by the VM's p4c as a check (a failure is reported,
# not fatal: it is the program's problem, not the VM's).
CARD_PROGRAM="$REPO/p4src/card.p4"

# Imports that prove the virtual environment sees Mininet (system site-packages) and
# twinnet's own packages with their dependencies.
SMOKE_IMPORTS="import mininet.net, grpc, numpy, networkx, matplotlib, topologies, controller, emulation.cli"

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

# "ID VERSION_ID" of the machine described by $OS_RELEASE ("unknown" for what it lacks).
machine_release() {
    (
        ID="" VERSION_ID=""
        # shellcheck source=/dev/null
        [[ -r "$OS_RELEASE" ]] && . "$OS_RELEASE"
        echo "${ID:-unknown} ${VERSION_ID:-unknown}"
    )
}

missing_packages() {
    local pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
    done
}

# Version "X.Y" of a Python interpreter, empty if it does not run.
python_version() {
    "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true
}

# True if version $1 (X.Y) is at least $2 (X.Y).
version_at_least() {
    [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" == "$2" ]]
}

# Make the virtual environment $1 (venv options in $2...) from $VENV_PYTHON unless it
# exists with a Python >= $MIN_PYTHON; an older one is removed first. True if it made one.
ensure_venv() {
    local dir="$1" current=""
    shift
    if [[ -x "$dir/bin/python" ]]; then
        current="$(python_version "$dir/bin/python")"
    fi
    if [[ -n "$current" ]] && version_at_least "$current" "$MIN_PYTHON"; then
        return 1
    fi
    # Called as an `if` condition, where set -e does not apply: failures exit here.
    if [[ -e "$dir" ]]; then
        echo "== removing $dir (Python ${current:-unusable}, twinnet needs $MIN_PYTHON or newer)"
        rm -rf "$dir" || exit 1
    fi
    echo "== creating $dir from $VENV_PYTHON"
    "$VENV_PYTHON" -m venv "$@" "$dir" || exit 1
}

print_plan() {
    local release
    read -r -a release < <(machine_release)
    echo "== twinnet VM provisioning plan (dry run: nothing is changed)"
    echo "release: ubuntu $UBUNTU_RELEASE (this machine: ${release[0]} ${release[1]})"
    echo "apt-key: $KEY_URL -> $KEYRING"
    echo "apt-source: $SOURCE_LINE -> $SOURCES"
    echo "apt: ${ALL_PACKAGES[*]}"
    echo "check: ${REQUIRED_COMMANDS[*]}"
    echo "venv: $VENV from $VENV_PYTHON (with system site-packages; remade if its Python is older than $MIN_PYTHON;" \
         "a new one gets its packages with PIP_IGNORE_INSTALLED=1)"
    echo "switch-venv: $SWITCH_VENV from $VENV_PYTHON (remade if its Python is older than $MIN_PYTHON)"
    echo "setup: bash $REPO/scripts/setup.sh"
    bash "$REPO/scripts/setup.sh" --print-plan | sed 's/^/setup> /'
    echo "smoke: $VENV/bin/python -c '$SMOKE_IMPORTS'; $LAUNCHER --help"
    echo "compile-check: p4c --target bmv2 --arch v1model $CARD_PROGRAM (reported, not fatal)"
}

case "${1:-}" in
    --dry-run) print_plan; exit 0 ;;
    -h | --help) usage; exit 0 ;;
    "") ;;
    *) echo "unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

# Refuse before changing anything: the release first (p4lang's packages exist for it
# only), then root.
read -r -a release < <(machine_release)
if [[ "${release[0]}" != ubuntu || "${release[1]}" != "$UBUNTU_RELEASE" ]]; then
    echo "provision-vm.sh provisions Ubuntu $UBUNTU_RELEASE, the release p4lang packages p4c and bmv2 for;" \
         "this machine is ${release[0]} ${release[1]} ($OS_RELEASE). Use the Vagrantfile's box," \
         "or scripts/setup.sh alone for the embedded P4 target." >&2
    exit 1
fi
if [[ $(id -u) -ne 0 ]]; then
    echo "provision-vm.sh installs system packages: run it as root (sudo bash scripts/provision-vm.sh)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive

# 1. Tools to add the repository.
mapfile -t missing < <(missing_packages "${REPO_TOOL_PACKAGES[@]}")
if (( ${#missing[@]} )); then
    echo "== installing ${missing[*]}"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. p4lang's signing key. Fetched again on every run, since the build service renews
#    its keys; an existing key is kept if the fetch fails.
tmpdir="$(mktemp -d)"
trap 'rm -rf "$tmpdir"' EXIT
if curl -fsSL --retry 3 "$KEY_URL" -o "$tmpdir/Release.key" \
        && gpg --batch --yes --dearmor -o "$tmpdir/keyring.gpg" "$tmpdir/Release.key"; then
    if ! cmp -s "$tmpdir/keyring.gpg" "$KEYRING"; then
        echo "== installing p4lang's key ($OBS_PROJECT) as $KEYRING"
        install -m 644 "$tmpdir/keyring.gpg" "$KEYRING"
    fi
elif [[ -s "$KEYRING" ]]; then
    echo "warning: could not fetch $KEY_URL; keeping $KEYRING" >&2
else
    echo "could not fetch p4lang's key from $KEY_URL" >&2
    exit 1
fi

# 3. The repository itself (rewritten only when it changes, e.g. another project).
if [[ "$(cat "$SOURCES" 2>/dev/null)" != "$SOURCE_LINE" ]]; then
    echo "== adding p4lang's repository: $SOURCES"
    echo "$SOURCE_LINE" > "$SOURCES"
    need_update=1
fi

# 4. p4c, bmv2, Mininet, Python 3.11: only what is missing.
mapfile -t missing < <(missing_packages "${ALL_PACKAGES[@]}")
if (( ${#missing[@]} )) || [[ -n "${need_update:-}" ]]; then
    apt-get update -qq
fi
if (( ${#missing[@]} )); then
    echo "== installing ${missing[*]}"
    if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
        echo "installing ${missing[*]} failed; if p4lang's packages have no installation candidate," \
             "try the other project: TWINNET_P4LANG_REPO=home:p4lang:latest (or home:p4lang)" >&2
        exit 1
    fi
fi

# 5. The bmv2 target's commands must now be on PATH.
absent=()
for cmd in "${REQUIRED_COMMANDS[@]}"; do
    command -v "$cmd" >/dev/null || absent+=("$cmd")
done
if (( ${#absent[@]} )); then
    echo "missing after installation: ${absent[*]} (packages: ${P4_PACKAGES[*]} mininet)" >&2
    exit 1
fi

# 6. The virtual environment from Python 3.11; setup.sh keeps it and installs into it.
#    The repository copy in the VM excludes .venv, so this one belongs to the VM.
#    Its system site-packages (for Mininet) are Ubuntu's, built for python3 3.10: the
#    first installation into a new environment ignores them (PIP_IGNORE_INSTALLED), so
#    that no compiled module for 3.10 stands in for one of twinnet's dependencies.
#    setup.sh's second environment, $SWITCH_VENV (the embedded switch, its own
#    packages only), is made from Python 3.11 the same way.
if ensure_venv "$VENV" --system-site-packages; then
    new_venv=1
fi
if ensure_venv "$SWITCH_VENV"; then
    new_venv=1
fi

# 7. twinnet itself, the same way as without a VM.
if [[ -n "${new_venv:-}" ]]; then
    PIP_IGNORE_INSTALLED=1 bash "$REPO/scripts/setup.sh"
else
    bash "$REPO/scripts/setup.sh"
fi

# 8. Smoke checks: the environment imports, the launcher runs, the tools answer.
(cd / && "$VENV/bin/python" -c "$SMOKE_IMPORTS")
"$LAUNCHER" --help >/dev/null
echo "== p4c: $(p4c --version 2>&1 | tail -n 1)"
echo "== simple_switch_grpc: $(simple_switch_grpc --version 2>&1 | tail -n 1)"

# 9. The card program through the VM's p4c (bmv2 JSON and P4Info, thrown away).
if [[ -f "$CARD_PROGRAM" ]]; then
    if p4c --target bmv2 --arch v1model --p4runtime-files "$tmpdir/card.p4info.txt" \
            -o "$tmpdir" "$CARD_PROGRAM" > "$tmpdir/p4c.log" 2>&1; then
        echo "== p4c compiles $CARD_PROGRAM for bmv2"
    else
        echo "warning: p4c does not compile $CARD_PROGRAM for bmv2:" >&2
        tail -n 20 "$tmpdir/p4c.log" >&2
    fi
else
    echo "== no $CARD_PROGRAM yet: compile check skipped"
fi
echo "== the VM is ready: cd $REPO && sudo bash scripts/demo.sh"
