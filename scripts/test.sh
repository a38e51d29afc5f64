#!/usr/bin/env bash
# Installs, builds and runs the whole test suite (unit + integration, CPU only; [gpu] tests skip themselves
# without a GPU) against both LibTorch builds (CI's .ci/run runs the same suite once, on Debian's LibTorch under
# ASan + UBSan: scripts/sanitize.sh):
#   1. Debian's libtorch-dev 1.13 with OpenBLAS                  -> build-debian/ (setup.sh --torch debian)
#   2. PyPI's torch wheel (2.x, CUDA compiled in, CPU tests run) -> build-cuda/ (scripts/test_pip_torch.sh: the
#      Kaggle/Colab route, header-only dependencies fetched, Debian's header packages hidden)
#   bash scripts/test.sh [debian|pip|both]      (default both)
set -euo pipefail
cd "$(dirname "$0")/.."
WHICH=${1:-both}
case "$WHICH" in debian|pip|both) ;; *) echo "test.sh: expected debian, pip or both, got '$WHICH'" >&2; exit 2 ;; esac
t0=$(date +%s)
# The docs' links and the code's shape (files <= 400 lines, functions <= 120) before anything is built.
python3 scripts/check_docs.py
python3 scripts/check_code_shape.py
if [ "$WHICH" != pip ]; then
  BUILD_DIR=build-debian bash scripts/setup.sh --torch debian
  cmake --build build-debian -j "$(nproc)"
  t1=$(date +%s)
  build-debian/kgtrain --version
  (cd build-debian && ctest --output-on-failure --no-tests=error -j "$(nproc)" --timeout 900)
  echo "test.sh: Debian LibTorch: build $((t1 - t0)) s, tests $(( $(date +%s) - t1 )) s"
fi
if [ "$WHICH" != debian ]; then
  bash scripts/test_pip_torch.sh
fi
echo "test.sh: $WHICH done in $(( $(date +%s) - t0 )) s"
