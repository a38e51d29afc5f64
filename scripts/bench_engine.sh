#!/usr/bin/env bash
# The training engine's overhead: training images/s of the Fashion-MNIST recipe with the plain loop
# against the same run with EMA + Lookahead + gradient clipping + accumulation (2 micro-batches of half
# the size, so the effective batch is the same), interleaved over ROUNDS rounds, medians and the ratio.
#
# usage: scripts/bench_engine.sh [ROUNDS=2] [EXTRA OVERRIDES...]
#   LIMIT=N  train on the first N rows of train.csv (default 20000; 0 = all)
# Needs build/kgtrain and data/fashion_mnist. Run on a quiet machine.
set -euo pipefail
ROUNDS=${1:-2}; shift || true
LIMIT=${LIMIT:-20000}
PY=${PY:-/usr/bin/python3}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
DATA=data/fashion_mnist
[[ -x build/kgtrain ]] || { echo "build/kgtrain is missing" >&2; exit 2; }
[[ -f "$DATA/train.csv" ]] || { echo "no data at $DATA: scripts/prepare_fashion_mnist.sh" >&2; exit 2; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kgtrain-engine-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
ARGS=(train.epochs=1 plots.enabled=false "$@")
if (( LIMIT > 0 )); then
  head -n "$((LIMIT + 1))" "$DATA/train.csv" > "$TMP/train.csv"
  ARGS+=("data.train_csv=$TMP/train.csv")
fi
TRICKS=(ema.enabled=true ema.decay=0.999 optim.name=lookahead optim.inner.name=adamw optim.inner.betas=[0.9,0.99]
        train.clip_grad_norm=1.0 train.accum_steps=2 train.batch_size=128)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'); load $(cut -d' ' -f1-3 /proc/loadavg)"
rate() { "$PY" -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["train_images_per_s"], 1))' "$1/summary.json"; }
plain=(); tricks=()
for ((r = 1; r <= ROUNDS; r++)); do
  build/kgtrain fit recipes/fashion_mnist.toml "${ARGS[@]}" --run-dir "$TMP/p$r" --quiet > "$TMP/p$r.log" 2>&1 || { tail "$TMP/p$r.log"; exit 1; }
  plain+=("$(rate "$TMP/p$r")")
  build/kgtrain fit recipes/fashion_mnist.toml "${ARGS[@]}" "${TRICKS[@]}" --run-dir "$TMP/t$r" --quiet > "$TMP/t$r.log" 2>&1 || { tail "$TMP/t$r.log"; exit 1; }
  tricks+=("$(rate "$TMP/t$r")")
  echo "round $r: plain ${plain[-1]} img/s, ema+lookahead+clip+accum ${tricks[-1]} img/s"
done
"$PY" - "${plain[*]}" "${tricks[*]}" <<'PYEOF'
import statistics, sys
p = statistics.median(map(float, sys.argv[1].split())); t = statistics.median(map(float, sys.argv[2].split()))
print(f"median: plain {p:.1f} img/s, with tricks {t:.1f} img/s, ratio {t / p:.3f} ({(t / p - 1) * 100:+.1f}%)")
PYEOF
