#!/usr/bin/env bash
# One GPU session's measurements, on the device machine (PyTorch + CUDA, no package registry), in at most two calls
# of 10 minutes each (a session has 15 minutes of device time in all, its start included):
#   here:  bash scripts/pack_gpu_deps.sh                  (.deps/gpu.tar.xz, ~38 MB: what that machine lacks)
#   there: bash scripts/gpu_session.sh build resnet50     (carry .deps/gpu.tar.xz; ~150 s build + ~200 s resnet50)
#          bash scripts/gpu_session.sh fmnist tests       (the same machine, still warm: build-cuda/ is kept)
# Any of bench_gpu.sh's stages (build resnet50 fmnist ablate tests) may be named; none names them all. Unpacks the
# archive into .deps/gpu once, then runs scripts/bench_gpu.sh with its folders: DEPS (header-only libraries, OpenCV
# core + imgproc and the codecs as a prefix), FMNIST (the IDX files), LD_LIBRARY_PATH (the carried libraries, for
# kgtrain_tests and for kgtrain when it was built with OpenCV). Logs go to $OUT (the device tool brings them back).
set -uo pipefail
cd "$(dirname "$0")/.."
if [ ! -d .deps/gpu ]; then
  [ -f .deps/gpu.tar.xz ] || { echo "gpu_session: no .deps/gpu.tar.xz (make it with scripts/pack_gpu_deps.sh and carry it)" >&2; exit 2; }
  tar -C .deps -xJf .deps/gpu.tar.xz || exit 2
fi
G=$PWD/.deps/gpu
export DEPS="$G/hdr $G/cv" FMNIST=$G/fmnist
export LD_LIBRARY_PATH="$G/cv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export STAGES="${*:-build resnet50}"
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
exec bash scripts/bench_gpu.sh
