#!/usr/bin/env bash
# The reliability figures of docs/reliability.md and the README, from one run against a built kgtrain (CPU):
# hostile sizes, ENOSPC/EIO injected at the N-th write/fsync/rename, SIGKILL anywhere + --resume, SIGTERM, and two
# processes on one run. Prints one line per trial, then the table (markdown) and writes it with the totals as JSON.
#   bash scripts/reliability.sh [BUILD_DIR] [KILLS]      (default build-debian, 40 kills; about 15 minutes on 2 cores)
# Each part alone: python3 scripts/reliability.py MODE ... (see its header).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-debian}
KILLS=${2:-40}
KG="$PWD/$BUILD/kgtrain"
SHIM="$PWD/$BUILD/libkgtrain_fault_inject.so"
[ -x "$KG" ] || { echo "reliability.sh: no $KG: build first (bash scripts/test.sh debian, or cmake --build $BUILD)" >&2; exit 2; }
[ -f "$SHIM" ] || cmake --build "$BUILD" --target kgtrain_fault_inject
WORK=$(mktemp -d "${TMPDIR:-/tmp}/kgtrain-reliability-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
OUT="$PWD/$BUILD/reliability"
mkdir -p "$OUT"
status=0
t0=$(date +%s)
part() {  # part NAME ARGS...: runs one mode, keeps its last line (the JSON totals)
  local name=$1
  shift
  echo "== $name"
  python3 scripts/reliability.py "$name" "$KG" "$WORK/$name" "$@" | tee "$OUT/$name.log" || status=1
  tail -1 "$OUT/$name.log" >"$OUT/$name.json"
}
part hostile
part faults "$SHIM"
part kills "$KILLS"
part sigterm 10
part locks
python3 scripts/reliability.py table "$KG" "$OUT" "$(( $(date +%s) - t0 ))" | tee "$OUT/table.md"
exit $status
