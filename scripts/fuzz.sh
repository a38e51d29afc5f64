#!/usr/bin/env bash
# Coverage-guided fuzzing of everything a user hands kgtrain (tests/fuzz/harnesses.h): builds the libFuzzer
# harnesses with clang + AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/, the folder scripts/sanitize.sh
# tests in), then runs each harness for SECONDS from its committed seeds (tests/fuzz/corpus/<h>) and past findings
# (tests/fuzz/regressions/<h>) and prints, per harness: executions, coverage (edges), features, corpus size, findings.
#   bash scripts/fuzz.sh [SECONDS] [HARNESS...]     (default 60 s each, every harness)
# A finding (crash, uncaught exception, sanitizer report, leak, timeout > 10 s, > 2 GB RSS) leaves its input in
# build-asan/fuzz/findings/<h>/ and makes the script exit 1; replay one with KG_FUZZ_HARNESS=<h> build-asan/kgtrain_fuzz FILE. Fix it, then
# commit the input to tests/fuzz/regressions/<h>/ so the ordinary test suite replays it forever.
# The corpus libFuzzer grows is kept in build-asan/fuzz/corpus/<h> (not committed) and reused by the next run.
# KGTRAIN_FUZZ_SEED=N fixes libFuzzer's random seed (CI does, so its short runs explore the same way each time).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
shift || true
[[ "$SECONDS_EACH" =~ ^[0-9]+$ ]] || { echo "fuzz.sh: SECONDS must be a whole number, got '$SECONDS_EACH'" >&2; exit 2; }
BUILD=${BUILD_DIR:-build-asan}
mapfile -t ALL < <(sed -n 's/^  X(\([a-z_]*\),.*/\1/p' tests/fuzz/harnesses.h)
HARNESSES=("$@")
[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=("${ALL[@]}")
for h in "${HARNESSES[@]}"; do
  [[ " ${ALL[*]} " == *" $h "* ]] || { echo "fuzz.sh: no harness '$h' (there are: ${ALL[*]})" >&2; exit 2; }
done

bash scripts/sanitize.sh --configure-only
export CCACHE_BASEDIR="$PWD"
cmake --build "$BUILD" -j "$(nproc)" --target kgtrain_fuzz

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1:detect_container_overflow=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMP_NUM_THREADS=1
status=0
rows=()
for h in "${HARNESSES[@]}"; do
  work="$BUILD/fuzz/corpus/$h" findings="$BUILD/fuzz/findings/$h" log="$BUILD/fuzz/$h.log"
  mkdir -p "$work" "$findings"
  seed=()
  [ -n "${KGTRAIN_FUZZ_SEED:-}" ] && seed=(-seed="$KGTRAIN_FUZZ_SEED")
  dict=()
  [ -f "tests/fuzz/$h.dict" ] && dict=(-dict="tests/fuzz/$h.dict")
  seeds=(tests/fuzz/corpus/"$h")
  [ -d "tests/fuzz/regressions/$h" ] && seeds+=(tests/fuzz/regressions/"$h")
  before=$(find "$findings" -type f | wc -l)
  set +e
  KG_FUZZ_HARNESS=$h "$BUILD/kgtrain_fuzz" "$work" "${seeds[@]}" "${dict[@]}" "${seed[@]}" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
    -max_len=131072 -print_final_stats=1 -artifact_prefix="$findings/" >"$log" 2>&1
  rc=$?
  set -e
  found=$(( $(find "$findings" -type f | wc -l) - before ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1)
  edges=$(echo "$cov" | awk '{print $2}') features=$(echo "$cov" | awk '{print $4}') corpus=$(echo "$cov" | awk '{print $6}')
  rows+=("$(printf '%-12s %6ss %12s %10s %10s %8s %9s' "$h" "$SECONDS_EACH" "${execs:-?}" "${edges:-?}" "${features:-?}" \
            "${corpus:-?}" "$found")")
  if [ "$rc" -ne 0 ] || [ "$found" -gt 0 ]; then
    status=1
    echo "fuzz.sh: $h found something (exit $rc): $log, inputs in $findings" >&2
    grep -m1 -E 'ERROR: |runtime error|uncaught|deadly signal|Timeout|out-of-memory' "$log" >&2 || tail -5 "$log" >&2
  fi
done
printf '%-12s %7s %12s %10s %10s %8s %9s\n' harness time executions edges features corpus findings
printf '%s\n' "${rows[@]}"
exit $status
