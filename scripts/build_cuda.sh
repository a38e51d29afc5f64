#!/usr/bin/env bash
# Builds kgtrain against the LibTorch inside an installed PyTorch (2.x, with CUDA): Kaggle, Colab, a GPU
# workstation or cluster node. Needs python3 with torch, cmake >= 3.18, a C++17 compiler, zlib, and the
# header-only dependencies (toml++, CLI11, nlohmann/json; Catch2 for the tests) either installed or
# unpacked into a folder. OpenCV's C++ files are optional: without them kgtrain trains from IDX files
# and raw packs only (README: Building with CUDA), and the tests are not built.
#
#   bash scripts/build_cuda.sh                           # -> build-cuda/kgtrain
#   bash scripts/build_cuda.sh --fetch-deps .deps/hdr    # on a machine with apt: unpack the header-only packages
#   bash scripts/build_cuda.sh --deps .deps/hdr          # on the GPU machine (no package registry needed)
#                                                        # (--deps again for more prefixes, e.g. DIR/include + DIR/lib)
#   bash scripts/build_cuda.sh --tests                   # also build kgtrain_tests (GPU tests run when a GPU is there)
#   bash scripts/build_cuda.sh -- -DCMAKE_CUDA_ARCHITECTURES=90   # anything after -- goes to cmake
#
# Options: --build-dir DIR (default build-cuda), --torch-prefix DIR (a LibTorch's cmake prefix instead of
# python's torch), --jobs N, --configure-only. Exit codes: 0 built, 2 bad usage, 3 a dependency is missing
# (the message says which and how to get it), 1 the build failed.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=build-cuda
DEPS=""
FETCH=""
TORCH_PREFIX=""
TESTS=OFF
JOBS=$(nproc 2>/dev/null || echo 4)
CONFIGURE_ONLY=0
EXTRA=()
# libtomlplusplus3: Debian builds toml++ as a shared library (libtomlplusplus-dev links it).
HEADER_PACKAGES=(libtomlplusplus-dev libtomlplusplus3 libcli11-dev nlohmann-json3-dev catch2)

usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
missing() { echo "build_cuda: $*" >&2; exit 3; }

while [ $# -gt 0 ]; do
  case "$1" in
    --deps) DEPS="$DEPS${DEPS:+ }${2:?--deps needs a folder}"; shift 2 ;;
    --fetch-deps) FETCH=${2:?--fetch-deps needs a folder}; shift 2 ;;
    --build-dir) BUILD_DIR=${2:?--build-dir needs a folder}; shift 2 ;;
    --torch-prefix) TORCH_PREFIX=${2:?--torch-prefix needs a folder}; shift 2 ;;
    --jobs) JOBS=${2:?--jobs needs a number}; shift 2 ;;
    --tests) TESTS=ON; shift ;;
    --configure-only) CONFIGURE_ONLY=1; shift ;;
    --) shift; EXTRA=("$@"); break ;;
    -h|--help) usage ;;
    *) echo "build_cuda: unknown option $1" >&2; usage ;;
  esac
done

if [ -n "$FETCH" ]; then
  # apt-get download needs no root; dpkg -x unpacks without installing. The folder can then be copied
  # (or carried) to a machine without a package registry and given to --deps.
  command -v apt-get >/dev/null || missing "--fetch-deps needs apt-get (Debian/Ubuntu); elsewhere install ${HEADER_PACKAGES[*]} your own way"
  mkdir -p "$FETCH/debs"
  (cd "$FETCH/debs" && apt-get download "${HEADER_PACKAGES[@]}") || missing "apt-get download ${HEADER_PACKAGES[*]} failed (run apt-get update?)"
  for deb in "$FETCH"/debs/*.deb; do dpkg -x "$deb" "$FETCH"; done
  echo "build_cuda: header-only dependencies unpacked into $FETCH (use --deps $FETCH)"
  exit 0
fi

if [ -z "$TORCH_PREFIX" ]; then
  command -v python3 >/dev/null || missing "python3 not found; give --torch-prefix DIR (a LibTorch's cmake prefix)"
  TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null) ||
    missing "python3 cannot import torch; install PyTorch (pip install torch) or give --torch-prefix DIR"
  python3 - <<'PY' >&2
import torch
cuda = torch.version.cuda
print(f"build_cuda: PyTorch {torch.__version__}, " + (f"CUDA {cuda}" if cuda else "CPU-only (kgtrain will have no CUDA backend)")
      + f", C++11 ABI {int(torch.compiled_with_cxx11_abi())}")
PY
fi
[ -d "$TORCH_PREFIX" ] || missing "no LibTorch cmake prefix at $TORCH_PREFIX"

PREFIXES="$TORCH_PREFIX"
for dir in $DEPS; do
  # A --fetch-deps folder (DIR/usr/include) or a plain prefix (DIR/include, DIR/lib: an OpenCV
  # without CMake files, say). Given folders come before any system prefix.
  if [ -d "$dir/usr/include" ]; then PREFIXES="$(cd "$dir/usr" && pwd);$PREFIXES"
  elif [ -d "$dir/include" ]; then PREFIXES="$(cd "$dir" && pwd);$PREFIXES"
  else missing "$dir has no usr/include or include: make it with --fetch-deps $dir on a machine with apt"
  fi
done
command -v cmake >/dev/null || missing "cmake not found (pip install cmake, or apt-get install cmake)"
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)

cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIXES" \
  -DKGTRAIN_BUILD_TESTS="$TESTS" "${EXTRA[@]}" ||
  missing "cmake could not configure (see above). Header-only libraries: --fetch-deps / --deps; OpenCV (optional):" \
          "apt-get install libopencv-dev, or conda install -c conda-forge opencv and add its prefix with -- -DOpenCV_DIR=..."
[ "$CONFIGURE_ONLY" = 1 ] && { echo "build_cuda: configured $BUILD_DIR"; exit 0; }
cmake --build "$BUILD_DIR" -j "$JOBS" || exit 1
echo "build_cuda: built $BUILD_DIR/kgtrain"
"$BUILD_DIR/kgtrain" --version 2>/dev/null || true
