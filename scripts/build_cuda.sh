#!/usr/bin/env bash
# Builds kgtrain against the LibTorch inside an installed PyTorch (2.x, with CUDA): Kaggle, Colab, a GPU
# workstation or cluster node. Needs python3 with torch, cmake >= 3.18, a C++17 compiler, zlib, and the
# header-only dependencies (toml++, CLI11, nlohmann/json; Catch2 for the tests) either installed or
# unpacked into a folder. OpenCV's C++ files are optional: without them kgtrain trains from IDX files
# and raw packs only (docs/devices.md: Building with CUDA), and the tests are not built.
#
#   bash scripts/build_cuda.sh                           # -> build-cuda/kgtrain
#   bash scripts/build_cuda.sh --fetch-deps .deps/hdr    # download the header-only packages (pinned, checksummed)
#   bash scripts/build_cuda.sh --deps .deps/hdr          # on the GPU machine (no package registry needed)
#                                                        # (--deps again for more prefixes, e.g. DIR/include + DIR/lib)
#   bash scripts/build_cuda.sh --tests                   # also build kgtrain_tests (GPU tests run when a GPU is there)
#   bash scripts/build_cuda.sh -- -DKGTRAIN_PCH=OFF               # anything after -- goes to cmake
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
# The header-only dependencies, pinned to Debian 12's packages and their SHA-256 (apt-cache show NAME): package,
# version, file in the archive's pool, checksum. toml++ is compiled into kgtrain (lib/config/toml_impl.cpp), so
# no shared library comes with them.
DEB_PINS=(
  "libtomlplusplus-dev 3.3.0+ds-1 pool/main/t/tomlplusplus/libtomlplusplus-dev_3.3.0+ds-1_amd64.deb 2779cce0001466dcf60eb6262ff68a888d49f9e30aee80c499d1d4f6f9f6e12e"
  "libcli11-dev 2.1.2+ds-1 pool/main/c/cli11/libcli11-dev_2.1.2+ds-1_all.deb f1f6ee9ec053e0e0bcec47345e241b6a8ee006321248b4329e9ce88d2b4b64a8"
  "nlohmann-json3-dev 3.11.2-2 pool/main/n/nlohmann-json3/nlohmann-json3-dev_3.11.2-2_all.deb ec57940def6b6186c30be0e0ee81d1e58f86d11a54a145b28686a1e3e4aae801"
  "catch2 2.13.10-1 pool/main/c/catch2/catch2_2.13.10-1_amd64.deb 0b32d3017609fecef1ecb0827729c2f3cda61332dd1f50da73ea9066fb4fc7ca"
)

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
  # Each pinned .deb comes from `apt-get download` where the machine's apt sources hold it (Debian 12: no root,
  # nothing installed), else from KG_DEBIAN_MIRROR/<pool path> (any Debian mirror's URL, for Ubuntu, Kaggle and
  # Colab images whose archive lacks toml++ 3); either way its SHA-256 must match the pin before dpkg-deb
  # unpacks it. The folder can then be copied (or carried) to a machine without a package registry (--deps).
  command -v dpkg-deb >/dev/null || missing "--fetch-deps unpacks .deb files with dpkg-deb (Debian/Ubuntu's dpkg)"
  command -v sha256sum >/dev/null || missing "--fetch-deps needs sha256sum (coreutils)"
  mkdir -p "$FETCH/debs"
  for pin in "${DEB_PINS[@]}"; do
    read -r pkg ver pool sum <<<"$pin"
    file="$FETCH/debs/${pool##*/}"
    if ! { [ -f "$file" ] && echo "$sum  $file" | sha256sum -c --status; }; then
      rm -f "$file"
      (cd "$FETCH/debs" && apt-get download "$pkg=$ver" >/dev/null 2>&1) || true
      if [ ! -f "$file" ] && [ -n "${KG_DEBIAN_MIRROR:-}" ]; then
        command -v curl >/dev/null || missing "KG_DEBIAN_MIRROR is set but curl is missing"
        curl -fsSL -o "$file" "${KG_DEBIAN_MIRROR%/}/$pool" || missing "could not download ${KG_DEBIAN_MIRROR%/}/$pool"
      fi
      [ -f "$file" ] || missing "$pkg $ver: apt-get download found no such package (this machine's apt sources are" \
        "not Debian 12's); set KG_DEBIAN_MIRROR to a Debian mirror's URL (the folder holding pool/) and run again," \
        "or run --fetch-deps on a Debian 12 machine or container and copy the folder"
      echo "$sum  $file" | sha256sum -c --status || { rm -f "$file"; missing "$pkg $ver: SHA-256 mismatch for ${pool##*/} (expected $sum)"; }
    fi
    dpkg-deb -x "$file" "$FETCH"
    echo "build_cuda: $pkg $ver: SHA-256 verified, unpacked" >&2
  done
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

# The LibTorch root (share/cmake/../..) first: TorchConfig's find_library looks in every prefix's lib/ before
# its own, and would otherwise link a system libtorch.so (Debian's 1.13) under the wheel's 2.x headers.
PREFIXES="$(cd "$TORCH_PREFIX/../.." && pwd);$TORCH_PREFIX"
for dir in $DEPS; do
  # A --fetch-deps folder (DIR/usr/include) or a plain prefix (DIR/include, DIR/lib: an OpenCV
  # without CMake files, say). Given folders come before any system prefix.
  if [ -d "$dir/usr/include" ]; then PREFIXES="$(cd "$dir/usr" && pwd);$PREFIXES"
  elif [ -d "$dir/include" ]; then PREFIXES="$(cd "$dir" && pwd);$PREFIXES"
  else missing "$dir has no usr/include or include: make it with --fetch-deps $dir on a machine with apt"
  fi
done
command -v cmake >/dev/null || missing "cmake not found (pip install cmake, or apt-get install cmake)"
# The CUDA backend is compiled against the CUDA toolkit (nvcc and headers; no GPU needed). -- -DKG_TORCH_CUDA=off
# builds a CPU-only kgtrain from the same LibTorch instead.
CUDA_MODE=on
for a in "${EXTRA[@]}"; do case "$a" in -DKG_TORCH_CUDA=*) CUDA_MODE=${a#-DKG_TORCH_CUDA=} ;; esac; done
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
if [ "$CUDA_MODE" = on ] && ! command -v nvcc >/dev/null; then
  missing "nvcc not found: the CUDA toolkit compiles kgtrain's CUDA backend (put its bin/ on PATH or set CUDA_HOME);" \
          "for a CPU-only kgtrain from this LibTorch: bash scripts/build_cuda.sh -- -DKG_TORCH_CUDA=off"
fi
GEN=()
command -v ninja >/dev/null && GEN=(-G Ninja)

t_configure=$(date +%s)
cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIXES" \
  -DKGTRAIN_BUILD_TESTS="$TESTS" -DKG_TORCH_CUDA="$CUDA_MODE" "${EXTRA[@]}" ||
  missing "cmake could not configure (see above). Header-only libraries: --fetch-deps / --deps; image codecs:" \
          "apt-get install libjpeg-turbo8-dev libpng-dev (Debian: libjpeg62-turbo-dev), optionally libwebp-dev libtiff-dev;" \
          "OpenCV (optional): apt-get install libopencv-dev, or conda install -c conda-forge opencv and add its prefix" \
          "with -- -DOpenCV_DIR=..."
[ "$CONFIGURE_ONLY" = 1 ] && { echo "build_cuda: configured $BUILD_DIR"; exit 0; }
t_compile=$(date +%s)
cmake --build "$BUILD_DIR" -j "$JOBS" || exit 1
echo "build_cuda: built $BUILD_DIR/kgtrain (configure $((t_compile - t_configure)) s, compile $(($(date +%s) - t_compile)) s)"
"$BUILD_DIR/kgtrain" --version 2>/dev/null || true
