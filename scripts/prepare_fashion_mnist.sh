#!/usr/bin/env bash
# Converts Debian's dataset-fashion-mnist (IDX files) into the Kaggle layout kgtrain's default recipe
# reads: OUT_DIR/train/<id>.png, OUT_DIR/test/<id>.png, train.csv, test.csv, sample_submission.csv and
# test_labels.csv (for local scoring). Idempotent; skips the work when OUT_DIR/train.csv exists.
#   bash scripts/prepare_fashion_mnist.sh [OUT_DIR]        (a plain folder path; default data/fashion_mnist)
# The recipe reads ${paths.data}/fashion_mnist: with another OUT_DIR, pass data.root=OUT_DIR to kgtrain.
# FASHION_MNIST_DIR: where the IDX files are (Debian's dataset-fashion-mnist); KGTRAIN: the binary (build/kgtrain).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: bash scripts/prepare_fashion_mnist.sh [OUT_DIR]   (a folder path, default data/fashion_mnist)" >&2; exit 2; }
[ $# -le 1 ] || usage
case "${1:-}" in
  -h|--help) usage ;;
  *=*) echo "prepare: '$1' looks like NAME=value; give the output folder as a plain path, e.g." \
            "bash scripts/prepare_fashion_mnist.sh ${1#*=}" >&2; exit 2 ;;
  -*) echo "prepare: unknown option '$1'" >&2; usage ;;
esac
OUT=${1:-data/fashion_mnist}
SRC=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
KGTRAIN=${KGTRAIN:-build/kgtrain}
[ -x "$KGTRAIN" ] || { echo "prepare: $KGTRAIN not found: build it first (bash scripts/setup.sh) or set KGTRAIN" >&2; exit 3; }
if [ -f "$OUT/train.csv" ] && [ -f "$OUT/test_labels.csv" ]; then
  echo "prepare: $OUT already holds Fashion-MNIST"
  exit 0
fi
[ -f "$SRC/train-images-idx3-ubyte.gz" ] || { echo "prepare: $SRC has no Fashion-MNIST (apt-get install dataset-fashion-mnist)" >&2; exit 3; }
"$KGTRAIN" import-idx --train-images "$SRC/train-images-idx3-ubyte.gz" --train-labels "$SRC/train-labels-idx1-ubyte.gz" \
  --test-images "$SRC/t10k-images-idx3-ubyte.gz" --test-labels "$SRC/t10k-labels-idx1-ubyte.gz" \
  --out "$OUT" --threads "$(nproc)"
