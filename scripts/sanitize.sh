#!/usr/bin/env bash
# The test suite under AddressSanitizer + UndefinedBehaviorSanitizer (clang; Debian's LibTorch): builds build-asan/
# (lib/ also carries libFuzzer's coverage instrumentation, so scripts/fuzz.sh links its harnesses from the same
# objects) and runs ctest there. Any sanitizer report fails the test it happens in (no recovery), leaks included.
#   bash scripts/sanitize.sh [CTEST ARGS...]     e.g. -R csv, -E integration; default: every test
#   bash scripts/sanitize.sh --unit              the [unit] test cases only, in one process (what CI runs)
#   bash scripts/sanitize.sh --configure-only    (what scripts/fuzz.sh calls)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build-asan}
# Dependencies and Debian's LibTorch as the ordinary build has them.
bash scripts/setup.sh --torch debian --packages-only
if ! command -v clang++ >/dev/null || ! dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "install ok installed"; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends clang libclang-rt-14-dev
fi
# -O1 keeps stack traces exact. NDEBUG as LibTorch was built (its headers lay structs out differently without it);
# CMake keeps nlohmann/json's and toml++'s assertions on in this build (KGTRAIN_SANITIZE). UBSan without its vptr
# check (a call through an object of the wrong dynamic type): the costliest of its checks to compile, a quarter of a
# sanitized file's compile time (32 s -> 25 s for lib/'s transforms batch); every other UBSan check stays on.
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG -fno-sanitize=vptr" -DKG_OPENCV=on \
  -DKG_TORCH_FLAVOR=debian \
  -DKGTRAIN_SANITIZE=address,undefined -DKGTRAIN_FUZZ=ON >/dev/null
[ "${1:-}" = --configure-only ] && exit 0

export CCACHE_BASEDIR="$PWD"
t0=$(date +%s)
cmake --build "$BUILD" -j "$(nproc)" --target kgtrain kgtrain_tests kgtrain_fake_nvml
t1=$(date +%s)
# Children (the kgtrain processes integration tests start) inherit these.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:detect_container_overflow=0:abort_on_error=0}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/fuzz/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [ "${1:-}" = --unit ]; then
  (cd "$BUILD" && ./kgtrain_tests "[unit]" -w NoTests)
else
  (cd "$BUILD" && ctest --output-on-failure --no-tests=error -j "$(nproc)" --timeout 1800 "$@")
fi
echo "sanitize.sh: ASan + UBSan build $((t1 - t0)) s, tests $(( $(date +%s) - t1 )) s"
