#!/usr/bin/env bash
# Installs kgtrain's dependencies (Debian 12, Ubuntu 22.04/24.04 packages) and builds it (Release,
# Ninja, ccache when present). Idempotent: installs only what is missing, rebuilds only what changed.
#   bash scripts/setup.sh            # build into ./build
#   BUILD_DIR=out bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}

PACKAGES=(build-essential cmake ninja-build ccache pkg-config
          libtorch-dev libgloo-dev libopencv-dev libtomlplusplus-dev libcli11-dev nlohmann-json3-dev catch2 zlib1g-dev
          dataset-fashion-mnist)
missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The full tool: OpenCV is installed above, so its absence is an error here, not a reduced build.
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKG_OPENCV=on "$@"
cmake --build "$BUILD_DIR" -j "$(nproc)"
echo "setup: built $BUILD_DIR/kgtrain"
