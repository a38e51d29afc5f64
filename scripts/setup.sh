#!/usr/bin/env bash
# Installs kgtrain's dependencies on Debian 12 and builds the kgtrain binary (Release, Ninja, ccache when present,
# precompiled LibTorch headers) -- only the binary: scripts/test.sh builds the tests. Idempotent: installs only
# what is missing, rebuilds only what changed.
#   bash scripts/setup.sh                   # LibTorch from PyPI's torch wheel in .venv-torch -> build/kgtrain
#   bash scripts/setup.sh --torch debian    # Debian's libtorch-dev 1.13 + OpenBLAS              -> build/kgtrain
# Options: --torch pip|debian (default pip: the faster on the CPU, docs/performance.md), --packages-only (install,
# do not build), --no-header-packages (leave toml++/CLI11/nlohmann-json/Catch2 to build_cuda.sh --fetch-deps),
# --print-python (the venv's python), anything else goes to cmake. BUILD_DIR=out to build elsewhere;
# TORCH_VERSION (2.11.0) and VENV (.venv-torch) for the pip LibTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
TORCH_VERSION=${TORCH_VERSION:-2.11.0}
VENV=${VENV:-.venv-torch}
FLAVOR=pip
BUILD=1
HEADERS=1
CMAKE_ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --torch) FLAVOR=${2:?--torch needs pip or debian}; shift 2 ;;
    --torch=*) FLAVOR=${1#--torch=}; shift ;;
    --packages-only) BUILD=0; shift ;;
    --no-header-packages) HEADERS=0; shift ;;
    --print-python) echo "$PWD/$VENV/bin/python"; exit 0 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) CMAKE_ARGS+=("$1"); shift ;;
  esac
done
case "$FLAVOR" in pip|debian) ;; *) echo "setup: --torch takes pip or debian, got '$FLAVOR'" >&2; exit 2 ;; esac
if [ -r /etc/os-release ]; then
  . /etc/os-release
  [ "${ID:-}" = debian ] && [ "${VERSION_ID:-}" = 12 ] ||
    echo "setup: warning: tested on Debian 12 only; this is ${PRETTY_NAME:-unknown} (docs/devices.md: Building with CUDA covers PyTorch-only machines)" >&2
fi

# clang: CMakeLists.txt prefers it (the precompiled LibTorch headers cost each file ~3x less than with GCC).
# An optimised BLAS always: without one, Debian's LibTorch calls the reference BLAS (convnext_tiny 0.4 img/s).
# libopenblas0-openmp shares LibTorch's OpenMP thread pool (docs/performance.md: openmp vs pthread).
# Images are decoded by libjpeg-turbo, libpng, libwebp and libtiff directly (lib/data/codecs); OpenCV's core and
# imgproc run the transforms. OpenCV's imgcodecs (which pulls GDAL and ~140 other libraries) is never linked by
# kgtrain: the Debian build installs it only so that the tests compare the decoders' pixels with OpenCV's.
PACKAGES=(build-essential clang cmake ninja-build ccache pkg-config libopencv-core-dev libopencv-imgproc-dev
          libjpeg62-turbo-dev libpng-dev libwebp-dev libtiff-dev zlib1g-dev libzstd-dev libopenblas0-openmp dataset-fashion-mnist)
[ "$HEADERS" = 1 ] && PACKAGES+=(libtomlplusplus-dev libcli11-dev nlohmann-json3-dev catch2)
# libgloo-dev: Gloo's headers, which multi-process CPU training (fit --nproc) compiles against; PyPI's wheel lacks them.
PACKAGES+=(libgloo-dev)
[ "$FLAVOR" = debian ] && PACKAGES+=(libtorch-dev libopencv-imgcodecs-dev)
# Debian's own python3 makes venvs only with python3-venv (its ensurepip is split out); another Python has its own.
if [ "$FLAVOR" = pip ] && { ! command -v python3 >/dev/null || [ "$(command -v python3)" = /usr/bin/python3 ]; }; then
  PACKAGES+=(python3-venv)
fi
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

PREFIX=()
if [ "$FLAVOR" = pip ]; then
  if ! "$VENV/bin/python" -c "import torch, sys; sys.exit(torch.__version__.split('+')[0] != '$TORCH_VERSION')" 2>/dev/null; then
    echo "setup: installing torch==$TORCH_VERSION from PyPI into $VENV"
    python3 -m venv "$VENV"
    # --no-compile: torch's ~10,000 .py files are not byte-compiled up front (Python does it for the modules it
    # imports): 25 s less of a 2-core machine's CPU.
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-compile "torch==$TORCH_VERSION"
  fi
  # The torch package's root first, so its lib/ wins over any system libtorch.so (TorchConfig's find_library).
  PREFIX=(-DCMAKE_PREFIX_PATH="$("$VENV/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__) + ";" + torch.utils.cmake_prefix_path)')")
  # The wheel's LibTorch is built with CUDA: its CMake files look for the CUDA toolkit, which compiles kgtrain's
  # CUDA backend when present (nvcc; no GPU needed to build).
  [ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
fi
[ "$BUILD" = 1 ] || exit 0

# A build folder configured for the other LibTorch is reconfigured, not mixed.
if [ -f "$BUILD_DIR/CMakeCache.txt" ] && ! grep -q "^KG_TORCH_FLAVOR:STRING=$FLAVOR$" "$BUILD_DIR/CMakeCache.txt"; then
  echo "setup: $BUILD_DIR was configured for another LibTorch; reconfiguring for --torch $FLAVOR"
  rm -f "$BUILD_DIR/CMakeCache.txt"
fi
# The full tool: OpenCV is installed above, so its absence is an error here, not a reduced build.
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKG_OPENCV=on -DKG_TORCH_FLAVOR="$FLAVOR" \
  "${PREFIX[@]}" "${CMAKE_ARGS[@]}"
cmake --build "$BUILD_DIR" -j "$(nproc)" --target kgtrain
echo "setup: built $BUILD_DIR/kgtrain (LibTorch: --torch $FLAVOR)"
