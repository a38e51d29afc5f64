#!/usr/bin/env bash
# Training img/s of each backbone, kgtrain against timm, on this CPU (docs/models.md's speed table):
#   bash scripts/bench_backbones.sh [--models a,b,...] [--size 128] [--batch 16] [--steps 5] [--rounds 2] [--bf16]
# For each model and layout (nchw and channels_last; transformers: nchw only, their tokens ignore it), in turn:
#   kgtrain  `KGTRAIN bench-model scripts/peers/backbones.toml --models M` (forward, backward, AdamW step on a
#            synthetic batch; median of --steps after 1 warm-up step)
#   timm     scripts/peers/timm_step.py: timm.create_model(M) and timm's AdamW, the same step, input, threads (2),
#            precision, batch and timing rule; for kgtrain's networks of torchvision's files that timm has no model of
#            (tv_efficientnet_b5..b7, efficientnet_v2_s/m/l), torchvision's own model with timm's optimizer
# --rounds times, alternating, and keeps each one's best round (run-to-run noise on a 2-core VM is about 5%); prints
# one row a model and layout with both rates and their ratio, then the better layout of each. Run on a quiet machine. Needs KGTRAIN (build-cuda/kgtrain: the PyPI LibTorch
# 2.11 timm runs on) and the venv of scripts/check_timm_parity.sh (.venv-timm; made on first use).
set -euo pipefail
cd "$(dirname "$0")/.."
KGTRAIN=${KGTRAIN:-build-cuda/kgtrain}
MODELS=resnext50_32x4d,seresnext50_32x4d,tf_efficientnet_b0,tf_efficientnet_b3,tf_efficientnet_b5,tf_efficientnetv2_s,efficientnetv2_rw_s,convnext_base,vit_tiny_patch16_224,vit_small_patch16_224,vit_base_patch16_224,deit3_small_patch16_224,swin_tiny_patch4_window7_224
SIZE=128
BATCH=16
STEPS=5
ROUNDS=2
BF16=0
while [ $# -gt 0 ]; do
  case "$1" in
    --models) MODELS=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --batch) BATCH=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --bf16) BF16=1; shift ;;
    *) echo "bench_backbones: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$KGTRAIN" ] || { echo "bench_backbones: no kgtrain at $KGTRAIN (KGTRAIN=...)" >&2; exit 2; }
bash scripts/check_timm_parity.sh --fetch-only >/dev/null
PY=.venv-timm/bin/python
PRECISION=fp32
TIMM_FLAGS=()
if [ "$BF16" = 1 ]; then PRECISION=bf16; TIMM_FLAGS=(--bf16); fi
OUT=$(mktemp -d /tmp/bench_backbones.XXXXXX)
trap 'rm -rf "$OUT"' EXIT
echo "bench_backbones: $KGTRAIN vs timm $("$PY" -c 'import timm; print(timm.__version__)') (torch" \
  "$("$PY" -c 'import torch; print(torch.__version__)')), $SIZE px, batch $BATCH, $PRECISION, 2 threads, median of" \
  "$STEPS steps, best of $ROUNDS rounds; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(date -u +%Y-%m-%d)"
printf '%-30s %-14s %10s %10s %8s\n' model layout kgtrain timm ratio
IFS=, read -r -a LIST <<<"$MODELS"
for m in "${LIST[@]}"; do
  layouts=(nchw channels_last)
  case "$m" in vit_* | deit* | swin_*) layouts=(nchw) ;; esac
  best_k=0 best_t=0 best_kl="" best_tl=""
  for l in "${layouts[@]}"; do
    k=0 t=0
    for ((r = 0; r < ROUNDS; r++)); do
      "$KGTRAIN" bench-model scripts/peers/backbones.toml "device.precision=$PRECISION" --models "$m" --size "$SIZE" \
        --batch "$BATCH" --steps "$STEPS" --layouts "$l" --json "$OUT/k.json" -q >/dev/null
      k=$("$PY" -c 'import json,sys; print(max(float(sys.argv[2]), json.load(open(sys.argv[1]))["runs"][0]["images_per_s"]))' \
        "$OUT/k.json" "$k")
      t=$(PYTHONWARNINGS=ignore "$PY" scripts/peers/timm_step.py --model "$m" --size "$SIZE" --batch "$BATCH" \
        --steps "$STEPS" --layout "$l" "${TIMM_FLAGS[@]}" |
        "$PY" -c 'import json,sys; print(max(float(sys.argv[1]), json.load(sys.stdin)["images_per_s"]))' "$t")
    done
    printf '%-30s %-14s %10.1f %10.1f %7.2fx\n' "$m" "$l" "$k" "$t" "$("$PY" -c "print($k / $t)")"
    if "$PY" -c "import sys; sys.exit(0 if $k > $best_k else 1)"; then best_k=$k best_kl=$l; fi
    if "$PY" -c "import sys; sys.exit(0 if $t > $best_t else 1)"; then best_t=$t best_tl=$l; fi
  done
  peer=timm
  case "$m" in tv_efficientnet_b* | efficientnet_v2_*) peer=torchvision ;; esac
  printf '%-30s %-14s %10.1f %10.1f %7.2fx  best: kgtrain %s, %s %s\n' "$m" best "$best_k" "$best_t" \
    "$("$PY" -c "print($best_k / $best_t)")" "$best_kl" "$peer" "$best_tl"
done
