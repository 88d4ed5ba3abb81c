#!/usr/bin/env bash
# Set up (idempotent) and run twinnet's main job: emulate a twin fat tree and a
# twin torus on the embedded P4 target, send probes between every pair of hosts,
# compare every measured path with the model's, and write the reports.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/scripts/setup.sh"
OUT="${TWINNET_OUT:-$REPO/out}"
mkdir -p "$OUT"

echo "== twin 4-ary 2-tree, DESTRO, a probe between every pair of hosts"
twinnet run fattree --k 4 --n 2 --twin --routing destro --traffic all-to-all --out "$OUT/fattree-destro"

echo "== 3DT 2x4x2 (CBest), TS-DOR, a probe between every pair of hosts"
twinnet run ndt --dims 2x4x2 --config cbest --routing ts-dor --traffic all-to-all --out "$OUT/ndt-tsdor"

echo "== reports: $OUT/fattree-destro/report.json and $OUT/ndt-tsdor/report.json (pictures beside them)"
