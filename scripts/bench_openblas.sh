#!/usr/bin/env bash
# Which BLAS Debian's LibTorch should call: the reference BLAS, OpenBLAS built for OpenMP and OpenBLAS built with
# its own pthreads, in one run. Each is forced with LD_LIBRARY_PATH (its alternatives folder; nothing on the system
# changes) and confirmed by `kgtrain --version`. Per variant:
#   - bench-model convnext_tiny and resnet50 (fp32, 3x128x128, batch 32; convnext's linear layers are BLAS calls)
#     at device.threads = 1 and 2;
#   - fit recipes/fashion_mnist.toml train.epochs=1 with --nproc 2 (two processes of one thread each: a BLAS that
#     starts its own threads oversubscribes the cores), training img/s.
#   bash scripts/bench_openblas.sh [KGTRAIN]      (default build-debian/kgtrain; needs data/fashion_mnist)
# Environment: VARIANTS ("blas openblas-openmp openblas-pthread": folders under /usr/lib/<triplet>), STEPS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
K=${1:-build-debian/kgtrain}
K=$(realpath "$K")
LIBDIR=/usr/lib/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
VARIANTS=${VARIANTS:-blas openblas-openmp openblas-pthread}
STEPS=${STEPS:-3}
T=$(mktemp -d "${TMPDIR:-/tmp}/kgtrain-bench-openblas-XXXXXX")
cat >"$T/bench.toml" <<EOF
[run]
name = "bench_openblas"
[data]
root = "$T/no-data"
channels = 3
image_size = 128
num_classes = 10
[model]
name = "resnet18"
[train]
batch_size = 32
[device]
name = "cpu"
precision = "fp32"
EOF
echo "machine: $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); $K"
echo "| BLAS (LD_LIBRARY_PATH) | loaded | convnext_tiny 1 thr | convnext_tiny 2 thr | resnet50 1 thr | resnet50 2 thr | fit --nproc 2 img/s |"
echo "|---|---|---:|---:|---:|---:|---:|"
for v in $VARIANTS; do
  [ -e "$LIBDIR/$v/libblas.so.3" ] || { echo "| $v | not installed | | | | | |"; continue; }
  export LD_LIBRARY_PATH="$LIBDIR/$v"
  loaded=$("$K" --version | sed -n 's/^BLAS: \(.*\) (\/.*$/\1/p')
  cells=()
  for thr in 1 2; do
    "$K" bench-model "$T/bench.toml" device.threads=$thr --models convnext_tiny,resnet50 --layouts nchw --size 128 \
      --batch 32 --steps "$STEPS" --warmup 1 --json "$T/$v-$thr.json" > "$T/$v-$thr.log" 2>&1 || { tail "$T/$v-$thr.log"; exit 1; }
  done
  for m in convnext_tiny resnet50; do
    for thr in 1 2; do
      cells+=("$(python3 -c 'import json,sys; print(round([r["images_per_s"] for r in json.load(open(sys.argv[1]))["runs"] if r["model"] == sys.argv[2]][0], 1))' "$T/$v-$thr.json" "$m")")
    done
  done
  fitrate=-
  if [ -f data/fashion_mnist/train.csv ]; then
    "$K" fit recipes/fashion_mnist.toml train.epochs=1 --nproc 2 --run-dir "$T/$v-fit" --quiet > "$T/$v-fit.log" 2>&1 || { tail "$T/$v-fit.log"; exit 1; }
    fitrate=$(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["train_images_per_s"]))' "$T/$v-fit/summary.json")
  fi
  echo "| $v | $loaded | ${cells[0]} | ${cells[1]} | ${cells[2]} | ${cells[3]} | $fitrate |"
  unset LD_LIBRARY_PATH
done
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg); logs in $T"
