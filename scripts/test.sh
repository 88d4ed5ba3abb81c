#!/usr/bin/env bash
# Set up (idempotent) and run the whole test suite: unit tests and, as root,
# the emulation tests on real network namespaces. Extra arguments go to pytest.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/scripts/setup.sh"
cd "$REPO"
"$REPO/.venv/bin/ruff" check .
exec "$REPO/.venv/bin/python" -m pytest "$@"
