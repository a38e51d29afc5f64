#!/usr/bin/env bash
# The second build CI runs: LibTorch 2.x from PyPI's torch wheel (CUDA 13), the way Kaggle and Colab have it.
#   - a venv (.venv-torch) with torch==$TORCH_VERSION from PyPI, nothing else from Python;
#   - toml++, CLI11, nlohmann/json and Catch2 from `build_cuda.sh --fetch-deps` (pinned .debs, SHA-256 checked),
#     never from Debian's -dev packages: where those are installed (a developer's machine), the build runs in a
#     private mount namespace with their folders hidden, and a compile check proves they are out of sight;
#   - `build_cuda.sh --tests` compiles every CUDA path against the CUDA toolkit (nvcc, no GPU needed) and links;
#   - the CPU tests run (the [gpu] ones skip themselves without a GPU). With PIP_TESTS=0 only kgtrain is built and no
#     test runs: .ci/run does that while the PyPI build's tests cost more than its 90-minute limit allows (a cold
#     build of them is ~20 min here; scripts/check_wheel.sh then trains, predicts and checks --version with this build).
#   bash scripts/test_pip_torch.sh            (BUILD_DIR=build-cuda, TORCH_VERSION=2.11.0, VENV=.venv-torch)
# Needs the system packages of `scripts/setup.sh --packages-only --torch pip --no-header-packages` (compiler,
# cmake, ninja, OpenCV for the tests' fixtures, zlib) and nvcc on PATH or in /usr/local/cuda/bin.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-cuda}
PIP_TESTS=${PIP_TESTS:-1}
TESTS_FLAG=(--tests)
[ "$PIP_TESTS" = 1 ] || TESTS_FLAG=()
DEPS=${DEPS:-.deps/hdr}
t0=$(date +%s)

bash scripts/setup.sh --packages-only --torch pip --no-header-packages
PY=$(bash scripts/setup.sh --print-python)
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
command -v nvcc >/dev/null || { echo "test_pip_torch: nvcc not found: the CUDA toolkit compiles kgtrain's CUDA code" >&2; exit 3; }
bash scripts/build_cuda.sh --fetch-deps "$DEPS"

# Debian's header-only packages, where installed, are hidden from the build.
HIDE=()
for d in /usr/include/toml++ /usr/include/CLI /usr/include/nlohmann /usr/include/catch2 \
         /usr/lib/x86_64-linux-gnu/cmake/tomlplusplus /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json \
         /usr/lib/cmake/Catch2; do
  [ -e "$d" ] && HIDE+=("$d")
done
build() {
  for d in "${HIDE[@]}"; do mount -t tmpfs -o size=1m,ro kg-hidden "$d"; done
  for h in toml++/toml.h CLI/CLI.hpp nlohmann/json.hpp catch2/catch.hpp; do
    if echo "#include <$h>" | g++ -std=c++17 -fsyntax-only -x c++ - 2>/dev/null; then
      echo "test_pip_torch: <$h> is still visible outside $DEPS" >&2
      exit 1
    fi
  done
  echo "test_pip_torch: Debian's header-only packages are out of sight (${#HIDE[@]} folders hidden)"
  PATH="$(dirname "$PY"):$PATH" bash scripts/build_cuda.sh --deps "$DEPS" "${TESTS_FLAG[@]}" --build-dir "$BUILD_DIR" \
    -- -DKG_TORCH_CUDA=on
}
if [ ${#HIDE[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || { echo "test_pip_torch: hiding Debian's header packages needs root (unshare -m)" >&2; exit 3; }
  export -f build
  export DEPS BUILD_DIR PY TESTS_FLAG_LIST="${TESTS_FLAG[*]}"
  HIDE_LIST="${HIDE[*]}" unshare -m bash -c 'HIDE=($HIDE_LIST); TESTS_FLAG=($TESTS_FLAG_LIST); set -euo pipefail; build'
else
  build
fi
t1=$(date +%s)
"$BUILD_DIR/kgtrain" --version
if [ "$PIP_TESTS" != 1 ]; then
  echo "test_pip_torch: build $((t1 - t0)) s; tests not built (PIP_TESTS=0)"
  exit 0
fi
cd "$BUILD_DIR"
ctest --output-on-failure --no-tests=error -j "$(nproc)" --timeout 900
echo "test_pip_torch: build $((t1 - t0)) s, tests $(( $(date +%s) - t1 )) s"
