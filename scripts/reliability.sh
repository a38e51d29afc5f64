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
python3 - "$OUT" "$(( $(date +%s) - t0 ))" <<'EOF' | tee "$OUT/table.md"
import json, os, platform, sys
out, seconds = sys.argv[1], sys.argv[2]
r = {m: json.load(open(os.path.join(out, m + ".json"))) for m in ("hostile", "faults", "kills", "sigterm", "locks")}
h, f, k, t, l = r["hostile"], r["faults"], r["kills"], r["sigterm"], r["locks"]
calls = f["calls"]
rows = [
    ("hostile inputs tried / refused cleanly (exit 2/3, message naming the limit)",
     f"{h['hostile_tried']} / {h['hostile_refused_cleanly']}, peak RSS at most {h['max_peak_rss_mb']} MB"),
    (f"faults injected (ENOSPC sticky / EIO once at the N-th of a fit's {calls['write']} writes, {calls['fsync']} "
     f"fsyncs, {calls['rename']} renames) / clear error naming the file, exit 3",
     f"{f['faults_injected']} / {f['clean_errors']}" +
     (f" ({f['recovered_without_error']} needed none: a failed rename of a rotated-out checkpoint before its "
      "deletion, which then deletes it in place)" if f["recovered_without_error"] else "")),
    ("corrupt checkpoints loaded", str(f["corrupt_loads"])),
    ("checkpoints lost", str(f["checkpoints_lost"])),
    ("faulted runs resumed to the uninterrupted run's weights", f"{f['resumed_identical']} / {f['faults_injected']}"),
    ("SIGKILLs (mid-step, mid-checkpoint, fold switches, --nproc 2) / bit-identical after --resume",
     f"{k['kills']} / {k['bit_identical']}"),
    ("SIGTERM at a random moment: exit 143 with a complete checkpoint (or, arriving during a finished run's last "
     "writes, exit 0 with everything saved)", f"{t['saved']} / {t['sigterms']} "
     f"({100 * t['saved'] // max(1, t['sigterms'])}%; {t['finished_first']} had finished), "
     f"{t['resumed_identical']} resumed to identical weights"),
    ("a second writer or reader of a run in use: refused at once (exit 2)",
     f"{l['refused']} / {l['attempts']}; resume after SIGKILL of the holder: {'yes' if l['resume_after_kill'] else 'NO'}"),
]
print(f"| check ({platform.machine()}, {os.cpu_count()} cores, {seconds} s) | result |")
print("|---|---|")
for a, b in rows:
    print(f"| {a} | {b} |")
EOF
exit $status
