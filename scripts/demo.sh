#!/usr/bin/env bash
# Set up (idempotent) and run twinnet's main job on this machine.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/scripts/setup.sh"
OUT="${TWINNET_OUT:-$REPO/out}"
mkdir -p "$OUT"
twinnet topo fattree --k 4 --n 2 --twin --draw "$OUT/twin-fattree-4-2.png"
echo "picture: $OUT/twin-fattree-4-2.png"
