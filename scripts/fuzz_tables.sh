#!/usr/bin/env bash
# The parquet and arrow fuzz harnesses (tests/fuzz/harnesses_tables.cpp) built alone: clang, libFuzzer, ASan and
# UBSan over the table readers' few files (lib/data/{parquet*,arrow*,table_*,csv}.cpp and two of lib/core), in
# minutes instead of scripts/fuzz.sh's sanitized build of all of lib/ and LibTorch. The harnesses are the same
# functions kgtrain_fuzz runs (scripts/fuzz.sh parquet arrow does too, given build-asan).
#   bash scripts/fuzz_tables.sh [SECONDS] [parquet|arrow...]     (default 60 s each, both)
# Findings land in build-fuzz-tables/findings/<h>/ (commit a fixed one to tests/fuzz/regressions/<h>/); exit 1 then.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-60}
shift || true
HARNESSES=("$@")
[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=(parquet arrow)
B=build-fuzz-tables
mkdir -p "$B/obj"
CXX=${CXX:-clang++}
FLAGS=(-std=c++17 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -Ilib -Itests)
ZSTD=()
if [ -f /usr/include/zstd.h ]; then FLAGS+=(-DKG_WITH_ZSTD=1); ZSTD=(-lzstd); else FLAGS+=(-DKG_WITH_ZSTD=0); fi
cat >"$B/entry.cpp" <<'CPP'
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include "fuzz/harnesses.h"
static int (*harness)(const uint8_t*, size_t) = nullptr;
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* n = std::getenv("KG_FUZZ_HARNESS");
  if (n && !std::strcmp(n, "parquet")) harness = kg::fuzz::parquet;
  if (n && !std::strcmp(n, "arrow")) harness = kg::fuzz::arrow;
  if (!harness) { std::fprintf(stderr, "KG_FUZZ_HARNESS=parquet|arrow\n"); std::exit(2); }
  return 0;
}
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* d, size_t s) { return harness(d, s); }
CPP
objs=()
for f in lib/data/{parquet,parquet_meta,parquet_pages,arrow_ipc,arrow_columns,table_codecs,table_read,table_text,csv}.cpp \
         lib/core/strings.cpp lib/core/fs.cpp tests/fuzz/harnesses_tables.cpp "$B/entry.cpp"; do
  o="$B/obj/$(basename "$f" .cpp).o"
  newer=""
  [ -f "$o" ] && newer=$(find lib/data -name '*_format.h' -newer "$o" | head -1)
  if [ ! -f "$o" ] || [ "$f" -nt "$o" ] || [ -n "$newer" ]; then "$CXX" "${FLAGS[@]}" -fsanitize=fuzzer-no-link -c "$f" -o "$o"; fi
  objs+=("$o")
done
"$CXX" -fsanitize=fuzzer,address,undefined "${objs[@]}" -lz "${ZSTD[@]}" -o "$B/fuzz_tables"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for h in "${HARNESSES[@]}"; do
  mkdir -p "$B/corpus/$h" "$B/findings/$h"
  seeds=(tests/fuzz/corpus/"$h")
  [ -d "tests/fuzz/regressions/$h" ] && seeds+=(tests/fuzz/regressions/"$h")
  set +e
  KG_FUZZ_HARNESS=$h "$B/fuzz_tables" "$B/corpus/$h" "${seeds[@]}" -max_total_time="$SECONDS_EACH" -timeout=10 \
    -rss_limit_mb=2048 -max_len=131072 -print_final_stats=1 -artifact_prefix="$B/findings/$h/" >"$B/$h.log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$B/$h.log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$B/$h.log" | tail -1)
  echo "fuzz_tables: $h ${SECONDS_EACH}s: ${execs:-?} executions, $cov, exit $rc"
  if [ "$rc" -ne 0 ]; then
    status=1
    grep -m3 -E 'ERROR: |runtime error|uncaught|deadly signal|Timeout|out-of-memory' "$B/$h.log" >&2 || tail -5 "$B/$h.log" >&2
  fi
done
exit $status
