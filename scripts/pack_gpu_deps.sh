#!/usr/bin/env bash
# Packs what a PyTorch-only GPU machine (no package registry, no OpenCV C++ files, no Fashion-MNIST) lacks for
# scripts/bench_gpu.sh's every stage, into one archive the device tool can carry (its limit: 64 MiB in all):
#   bash scripts/pack_gpu_deps.sh            -> .deps/gpu.tar.xz (and the folder .deps/gpu it was made from)
# On the GPU machine: bash scripts/gpu_session.sh (unpacks it, then runs bench_gpu.sh with these folders).
# Inside, made here on Debian 12:
#   hdr/     toml++, CLI11, nlohmann/json, Catch2 (build_cuda.sh --fetch-deps: pinned .debs, SHA-256 checked)
#   cv/      a prefix (include/, lib/) for build_cuda.sh --deps: OpenCV core + imgproc 4.6 (headers, libraries),
#            the libraries Debian's libopencv_core links beyond glibc -- the reference BLAS/LAPACK (OpenBLAS would
#            add 35 MB; OpenCV's transforms never call BLAS), libgfortran, libquadmath, libtbb, and the libGLX
#            stand-in of the wheel (scripts/wheel/glx_stub.c) -- and libjpeg-turbo, libpng and zlib with their
#            headers (the decoders and the tests' fixture encoders)
#   fmnist/  the four Fashion-MNIST IDX files (dataset-fashion-mnist), bench_gpu.sh's FMNIST
# The tests' builds need all of it; kgtrain alone needs hdr/ (and cv/ for its transforms).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=.deps/gpu
ARCH=$(gcc -print-multiarch)
L=/usr/lib/$ARCH
need=(libopencv-core-dev libopencv-imgproc-dev libjpeg62-turbo-dev libpng-dev zlib1g-dev libblas3 liblapack3
      dataset-fashion-mnist)
missing=()
for p in "${need[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  echo "pack_gpu_deps: installing ${missing[*]}"
  $SUDO apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi
rm -rf "$OUT"
mkdir -p "$OUT/cv/include/opencv4/opencv2" "$OUT/cv/lib" "$OUT/fmnist"
bash scripts/build_cuda.sh --fetch-deps "$OUT/hdr" >/dev/null

# OpenCV: core and imgproc only (kgtrain never includes imgcodecs: CMakeLists.txt).
cp -a /usr/include/opencv4/opencv2/core /usr/include/opencv4/opencv2/core.hpp /usr/include/opencv4/opencv2/imgproc \
  /usr/include/opencv4/opencv2/imgproc.hpp /usr/include/opencv4/opencv2/opencv_modules.hpp \
  "$OUT/cv/include/opencv4/opencv2/"
# The codecs' and zlib's headers (jconfig.h is per architecture).
for h in jpeglib.h jmorecfg.h jerror.h png.h pngconf.h pnglibconf.h zlib.h zconf.h; do
  src=/usr/include/$h; [ -e "$src" ] || src=/usr/include/$ARCH/$h
  cp -L "$src" "$OUT/cv/include/"
done
cp -L "/usr/include/$ARCH/jconfig.h" "$OUT/cv/include/"

# lib NAME SONAME [DEVLINK...]: the real file under its soname, and the unversioned names the linker looks for.
lib() {
  local src=$1 soname=$2
  shift 2
  cp -L "$src" "$OUT/cv/lib/$soname"
  for d in "$@"; do ln -sf "$soname" "$OUT/cv/lib/$d"; done
}
lib "$L/libopencv_core.so.406" libopencv_core.so.406 libopencv_core.so
lib "$L/libopencv_imgproc.so.406" libopencv_imgproc.so.406 libopencv_imgproc.so
lib "$L/blas/libblas.so.3" libblas.so.3
lib "$L/lapack/liblapack.so.3" liblapack.so.3
lib "$L/libgfortran.so.5" libgfortran.so.5
lib "$L/libquadmath.so.0" libquadmath.so.0
lib "$L/libtbb.so.12" libtbb.so.12
lib "$L/libjpeg.so.62" libjpeg.so.62 libjpeg.so
lib "$L/libpng16.so.16" libpng16.so.16 libpng16.so libpng.so
lib "$L/libz.so.1" libz.so.1 libz.so
cc -shared -fPIC -O2 -Wl,-soname,libGLX.so.0 -o "$OUT/cv/lib/libGLX.so.0" scripts/wheel/glx_stub.c

# Every library above resolves with only glibc and these beside it (what the GPU machine is sure to have).
unresolved=$(LD_LIBRARY_PATH="$OUT/cv/lib" ldd "$OUT"/cv/lib/*.so.* | grep "not found" | sort -u || true)
[ -z "$unresolved" ] || { echo "pack_gpu_deps: unresolved libraries:" >&2; echo "$unresolved" >&2; exit 1; }
outside=$(LD_LIBRARY_PATH="$OUT/cv/lib" ldd "$OUT"/cv/lib/libopencv_imgproc.so.406 | awk '/=>/ {print $3}' |
  grep -v "^$PWD/$OUT/\|^$OUT/" | xargs -r -n1 basename |
  grep -v -E '^(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|libgomp|ld-linux-x86-64)\.so' || true)
[ -z "$outside" ] || { echo "pack_gpu_deps: OpenCV still needs from this machine: $outside" >&2; exit 1; }

cp /usr/share/datasets/fashion-mnist/*-ubyte.gz "$OUT/fmnist/"
tar -C .deps -cf - gpu | xz -T0 -6 > .deps/gpu.tar.xz
size=$(du -m .deps/gpu.tar.xz | cut -f1)
echo "pack_gpu_deps: .deps/gpu.tar.xz, ${size} MB ($(du -sm "$OUT" | cut -f1) MB unpacked): carry it to the GPU machine"
[ "$size" -le 60 ] || { echo "pack_gpu_deps: over 60 MB: the device tool carries 64 MiB in all" >&2; exit 1; }
