#!/usr/bin/env bash
# Installs, builds and runs the whole test suite (unit + integration, CPU only; [gpu] tests skip
# themselves without a GPU). This is what CI runs: bash .ci/run -> bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --no-tests=error -j "$(nproc)" --timeout 900
