#!/usr/bin/env bash
# Converts Debian's dataset-fashion-mnist (IDX files) into the Kaggle layout kgtrain's default recipe
# reads: DATA/train/<id>.png, DATA/test/<id>.png, train.csv, test.csv, sample_submission.csv and
# test_labels.csv (for local scoring). Idempotent; skips the work when DATA/train.csv exists.
#   bash scripts/prepare_fashion_mnist.sh [DATA=data/fashion_mnist]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-data/fashion_mnist}
SRC=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
KGTRAIN=${KGTRAIN:-build/kgtrain}
if [ -f "$OUT/train.csv" ] && [ -f "$OUT/test_labels.csv" ]; then
  echo "prepare: $OUT already holds Fashion-MNIST"
  exit 0
fi
[ -f "$SRC/train-images-idx3-ubyte.gz" ] || { echo "prepare: $SRC has no Fashion-MNIST (apt-get install dataset-fashion-mnist)" >&2; exit 3; }
"$KGTRAIN" import-idx --train-images "$SRC/train-images-idx3-ubyte.gz" --train-labels "$SRC/train-labels-idx1-ubyte.gz" \
  --test-images "$SRC/t10k-images-idx3-ubyte.gz" --test-labels "$SRC/t10k-labels-idx1-ubyte.gz" \
  --out "$OUT" --threads "$(nproc)"
