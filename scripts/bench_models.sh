#!/usr/bin/env bash
# Reproducible model benchmark, run by hand (not in CI): what a training step costs each backbone on
# this machine, with `kgtrain bench-model` on synthetic images (no data needed):
#   (a) forward + backward + AdamW step images/s of resnet18, resnet50, efficientnet_b0 and
#       convnext_tiny (those registered) at SIZE px, batch BATCH, NCHW vs channels_last;
#   (b) gradient checkpointing on resnet18 and efficientnet_b0: heap held after the forward pass
#       (the activations backward needs) and images/s, off vs on.
# Prints Markdown tables; the JSON reports stay in DIR. A few minutes on 2 cores with the defaults.
#   bash scripts/bench_models.sh [DIR (default: a new temp folder)]
# Environment: KGTRAIN (default build/kgtrain), SIZE (128), BATCH (32), STEPS (3 timed), WARMUP (1),
#   CLASSES (10), MODELS (default "resnet18 resnet50 efficientnet_b0 convnext_tiny"),
#   CKPT_MODELS (default "resnet18 efficientnet_b0"), THREADS (device.threads, 0 = all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
KGTRAIN=${KGTRAIN:-build/kgtrain}
KGTRAIN=$(realpath "$KGTRAIN")
DIR=${1:-$(mktemp -d "${TMPDIR:-/tmp}/kgtrain-bench-models-XXXXXX")}
SIZE=${SIZE:-128}
BATCH=${BATCH:-32}
STEPS=${STEPS:-3}
WARMUP=${WARMUP:-1}
CLASSES=${CLASSES:-10}
THREADS=${THREADS:-0}
MODELS=${MODELS:-resnet18 resnet50 efficientnet_b0 convnext_tiny}
CKPT_MODELS=${CKPT_MODELS:-resnet18 efficientnet_b0}
[ -x "$KGTRAIN" ] || { echo "bench_models: $KGTRAIN not built (cmake --build build)" >&2; exit 2; }
mkdir -p "$DIR"
DIR=$(realpath "$DIR")
say() { echo "== $*" >&2; }
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)  # other work on the machine skews every figure: it is printed with them

# Only the registered ones: other families may not be built into this binary.
registered=$("$KGTRAIN" show --list | sed -n 's/^model \([a-z0-9_]*\):.*/\1/p')
pick() {
  local out=()
  for m in "$@"; do
    if grep -qx "$m" <<<"$registered"; then out+=("$m"); else say "skipping $m (not registered)"; fi
  done
  (IFS=,; echo "${out[*]}")
}
models=$(pick $MODELS)
ckpt_models=$(pick $CKPT_MODELS)
[ -n "$models" ] || { echo "bench_models: none of $MODELS is registered" >&2; exit 2; }

# A recipe without data: the models are built for CLASSES classes of 3-channel images.
cat >"$DIR/bench.toml" <<EOF
[run]
name = "bench_models"
seed = 0
[data]
root = "$DIR/no-data"
channels = 3
image_size = $SIZE
num_classes = $CLASSES
[model]
name = "resnet18"
[train]
batch_size = $BATCH
[device]
name = "cpu"
threads = $THREADS
EOF

common=(--size "$SIZE" --batch "$BATCH" --steps "$STEPS" --warmup "$WARMUP")
say "(a) $models: NCHW and channels_last, ${SIZE} px, batch $BATCH, $WARMUP warm-up + $STEPS timed steps"
"$KGTRAIN" bench-model "$DIR/bench.toml" --models "$models" "${common[@]}" --json "$DIR/layouts.json" >&2
if [ -n "$ckpt_models" ]; then
  say "(b) $ckpt_models: gradient checkpointing off and on (NCHW)"
  "$KGTRAIN" bench-model "$DIR/bench.toml" --models "$ckpt_models" --layouts nchw --grad-checkpointing "${common[@]}" \
    --json "$DIR/checkpointing.json" >&2
fi
LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$DIR" "$LOAD0" "$LOAD1" <<'PY'
import json, os, sys
d, load0, load1 = sys.argv[1:4]
a = json.load(open(os.path.join(d, "layouts.json")))
gflops = {m["name"]: m["summary"]["gflops_per_image"] for m in a["models"]}
params = {m["name"]: m["summary"]["parameters"]["total"] for m in a["models"]}
rate = {(r["model"], r["layout"]): r["images_per_s"] for r in a["runs"]}
print(f"kgtrain bench-model, {a['device']}, input {a['input']['channels']}x{a['input']['height']}x{a['input']['width']}, "
      f"batch {a['batch_size']}, {a['warmup_steps']} warm-up + {a['steps']} timed steps (median); "
      f"load average {load0} before, {load1} after\n")
print("| model | params | fwd GFLOPs/img | NCHW img/s | channels_last img/s | channels_last / NCHW |")
print("|---|---:|---:|---:|---:|---:|")
for m in gflops:
    n, c = rate.get((m, "nchw")), rate.get((m, "channels_last"))
    ratio = f"{c / n:.2f}x" if n and c else "-"
    print(f"| {m} | {params[m] / 1e6:.2f}M | {gflops[m]:.2f} | {n:.1f} | {c:.1f} | {ratio} |")
p = os.path.join(d, "checkpointing.json")
if os.path.exists(p):
    b = json.load(open(p))
    runs = {(r["model"], r["grad_checkpointing"]): r for r in b["runs"]}
    print("\n| model | held after forward, plain | with grad checkpointing | saved | img/s plain | img/s checkpointed |")
    print("|---|---:|---:|---:|---:|---:|")
    mib = lambda r: r["held_after_forward_bytes"] / 2**20
    for m in dict.fromkeys(r["model"] for r in b["runs"]):
        off, on = runs[(m, False)], runs[(m, True)]
        saved = 100 * (1 - mib(on) / mib(off)) if mib(off) > 0 else 0
        print(f"| {m} | {mib(off):.0f} MiB | {mib(on):.0f} MiB | {saved:.0f}% | {off['images_per_s']:.1f} | {on['images_per_s']:.1f} |")
PY
say "JSON reports in $DIR"
