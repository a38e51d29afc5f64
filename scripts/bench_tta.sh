#!/usr/bin/env bash
# TTA throughput on the Fashion-MNIST test set (10,000 images): tta-predict wall time and images/s through
# the model for 1 view, 2 views (identity + hflip), and an ensemble of 5 members x 2 views (the same checkpoint
# five times stands in for 5 fold models: same work).
# usage: scripts/bench_tta.sh CHECKPOINT_DIR [OVERRIDE...]     e.g. RUN/checkpoints/best device.precision=bf16
# Needs build/kgtrain and data/fashion_mnist (scripts/prepare_fashion_mnist.sh). Run it on a quiet machine.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
CK=${1:?usage: scripts/bench_tta.sh CHECKPOINT_DIR [OVERRIDE...]}
shift
PY=${PY:-python3}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kgtrain-bench-tta-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load $(cut -d' ' -f1-3 /proc/loadavg)"
run() {  # label, views, members
  local label=$1 views=$2 n=$3 args=()
  shift 3
  for ((i = 0; i < n; i++)); do args+=(--checkpoint "$CK"); done
  local t0 t1
  t0=$(date +%s.%N)
  build/kgtrain tta-predict recipes/fashion_mnist.toml data.test_csv=test_labels.csv "tta.views=$views" "$@" "${args[@]}" \
    --run-dir "$TMP/$label" --quiet > "$TMP/$label.log" 2>&1 || { tail -n 20 "$TMP/$label.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  "$PY" - "$TMP/$label/summary.json" "$t0" "$t1" "$label" <<'PYEOF'
import json, sys
s = json.load(open(sys.argv[1])); wall = float(sys.argv[3]) - float(sys.argv[2])
ips = [m["images_per_s"] for m in s["models"]]
n = s["rows"] * len(s["views"]) * len(s["models"])
print("%-22s views %-16s members %d  wall %6.1f s  %7d forward images at %6.0f images/s (model)  test accuracy %.4f" % (
    sys.argv[4], ",".join(s["views"]), len(s["models"]), wall, n, sum(ips) / len(ips), s["metric"]["value"]))
PYEOF
}
run one_view '["identity"]' 1 "$@"
run two_views '["identity","hflip"]' 1 "$@"
run five_members_two_views '["identity","hflip"]' 5 "$@"
