#!/usr/bin/env bash
# Which LibTorch trains faster on this CPU: the same kgtrain source built against each, timed in one run.
# For every binary given (default: build-debian/kgtrain and build-cuda/kgtrain, whichever exist):
#   (a) `fit recipes/fashion_mnist.toml` (the default recipe, 12 epochs): training img/s, the elapsed time at the first
#       epoch whose validation accuracy reaches 94 %, then `tta-predict` of checkpoints/best on the 10,000 test images
#       (test accuracy); FIT=0 skips it;
#   (b) `bench-model` of resnet18, resnet50, efficientnet_b0 and convnext_tiny on synthetic 3x128x128 images, batch
#       32, fp32 and bf16 autocast, NCHW and channels_last (forward + backward + AdamW step, median of STEPS).
# Prints a Markdown table per part with the BLAS/oneDNN each binary loaded. Needs data/fashion_mnist
# (scripts/prepare_fashion_mnist.sh) for (a). Run it on a quiet machine: it takes ~15 minutes per binary on 2 cores.
#   bash scripts/bench_libtorch.sh [KGTRAIN ...]
# Environment: FIT (1), MODELS ("resnet18 resnet50 efficientnet_b0 convnext_tiny"), SIZE (128), BATCH (32),
#   STEPS (3), WARMUP (1), THREADS (device.threads, 0 = all cores), PY (python3 for the tables).
set -euo pipefail
cd "$(dirname "$0")/.."
BINS=("$@")
if [ ${#BINS[@]} -eq 0 ]; then
  for b in build-debian/kgtrain build-cuda/kgtrain; do [ -x "$b" ] && BINS+=("$b"); done
fi
[ ${#BINS[@]} -gt 0 ] || { echo "bench_libtorch: no kgtrain binary given or built" >&2; exit 2; }
FIT=${FIT:-1}
export MODELS=${MODELS:-resnet18 resnet50 efficientnet_b0 convnext_tiny}
SIZE=${SIZE:-128}; BATCH=${BATCH:-32}; STEPS=${STEPS:-3}; WARMUP=${WARMUP:-1}; THREADS=${THREADS:-0}
PY=${PY:-python3}
DATA=data/fashion_mnist
if [ "$FIT" = 1 ] && [ ! -f "$DATA/test_labels.csv" ]; then
  echo "bench_libtorch: no $DATA (bash scripts/prepare_fashion_mnist.sh), or FIT=0" >&2; exit 2
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/kgtrain-bench-libtorch-XXXXXX")
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load $(cut -d' ' -f1-3 /proc/loadavg); results in $T"

cat >"$T/bench.toml" <<EOF
[run]
name = "bench_libtorch"
seed = 0
[data]
root = "$T/no-data"
channels = 3
image_size = $SIZE
num_classes = 10
[model]
name = "resnet18"
[train]
batch_size = $BATCH
[device]
name = "cpu"
threads = $THREADS
EOF

i=0
for bin in "${BINS[@]}"; do
  i=$((i + 1))
  d="$T/$i"; mkdir -p "$d"
  "$bin" --version > "$d/version.txt"
  echo "== $bin: $(sed -n 2p "$d/version.txt"); $(grep '^BLAS' "$d/version.txt")" >&2
  if [ "$FIT" = 1 ]; then
    t0=$(date +%s.%N)
    "$bin" fit recipes/fashion_mnist.toml "device.threads=$THREADS" --run-dir "$d/fit" --quiet > "$d/fit.log" 2>&1 ||
      { tail -20 "$d/fit.log" >&2; exit 1; }
    t1=$(date +%s.%N)
    "$bin" tta-predict recipes/fashion_mnist.toml data.test_csv=test_labels.csv --checkpoint "$d/fit/checkpoints/best" \
      --out "$d/sub.csv" --run-dir "$d/pred" --quiet > "$d/pred.log" 2>&1 || { tail -20 "$d/pred.log" >&2; exit 1; }
    echo "$t0 $t1" > "$d/fit_times"
  fi
  for prec in fp32 bf16; do
    for m in $MODELS; do  # one process per model: a model that fails is reported and the others still run
      "$bin" bench-model "$T/bench.toml" "device.precision=$prec" --models "$m" --size "$SIZE" --batch "$BATCH" \
        --steps "$STEPS" --warmup "$WARMUP" --json "$d/models_${prec}_$m.json" > "$d/models_${prec}_$m.log" 2>&1 ||
        { echo "bench_libtorch: $bin bench-model $m $prec failed:" >&2; tail -3 "$d/models_${prec}_$m.log" >&2; }
    done
  done
done
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"

"$PY" - "$T" "${BINS[@]}" <<'PY'
import json, os, sys
T, bins = sys.argv[1], sys.argv[2:]
def lib(d, key):
    for line in open(os.path.join(d, "version.txt")):
        if line.startswith(key):
            return line.split(":", 1)[1].split(" (/")[0].strip() if ":" in line else line.strip()
    return "-"
def name(d):
    v = open(os.path.join(d, "version.txt")).read().splitlines()
    return v[1] + ", " + lib(d, "BLAS") + ", " + next((l for l in v if l.startswith("oneDNN")), "no oneDNN")
dirs = [os.path.join(T, str(i + 1)) for i in range(len(bins))]
if os.path.exists(os.path.join(dirs[0], "fit_times")):
    print("\n| LibTorch | fit train img/s | first epoch with validation >= 94 % | fit wall | test accuracy (identity + hflip) |")
    print("|---|---:|---:|---:|---:|")
    for d in dirs:
        s = json.load(open(os.path.join(d, "fit", "summary.json")))
        t0, t1 = map(float, open(os.path.join(d, "fit_times")).read().split())
        hit = "-"
        for line in open(os.path.join(d, "fit", "metrics.jsonl")):
            j = json.loads(line)
            if j.get("accuracy", 0) >= 0.94:
                hit = f"epoch {j['epoch']}, {j['elapsed_s']:.0f} s"
                break
        test = json.load(open(os.path.join(d, "pred", "summary.json")))["metric"]["value"]
        print(f"| {name(d)} | {s['train_images_per_s']:,.0f} | {hit} | {t1 - t0:.0f} s | {test:.4f} |")
print("\n| LibTorch | model | fp32 NCHW | fp32 channels_last | bf16 NCHW | bf16 channels_last |")
print("|---|---|---:|---:|---:|---:|")
for d in dirs:
    rate = {}
    models = os.environ.get("MODELS", "resnet18 resnet50 efficientnet_b0 convnext_tiny").split()
    for prec in ("fp32", "bf16"):
        for m in models:
            f = os.path.join(d, f"models_{prec}_{m}.json")
            for r in (json.load(open(f))["runs"] if os.path.exists(f) else []):
                rate[(r["model"], prec, r["layout"])] = r["images_per_s"]
    for m in models:
        cells = [rate.get((m, p, l)) for p in ("fp32", "bf16") for l in ("nchw", "channels_last")]
        print(f"| {name(d)} | {m} | " + " | ".join(f"{c:.1f}" if c else "failed" for c in cells) + " |")
PY
