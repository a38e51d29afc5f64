#!/usr/bin/env bash
# Builds kgtrain WITHOUT OpenCV (cmake -DKG_OPENCV=off, as on a GPU machine that has only PyTorch) and
# checks it end to end on Fashion-MNIST from raw packs:
#   - --version says OpenCV is not built;
#   - import-idx --packs, then fit with the recipe's transforms (pad_crop, hflip, normalize) from RAM and
#     device-resident (data.cache = device), then tta-predict;
#   - a transform that needs OpenCV and --plot-schedule fail with their documented exit codes and say OpenCV is
#     missing; a damaged PNG reaches the decoder (decoding needs no OpenCV: lib/data/codecs) and is exit 3;
#   - with a normal build at build/kgtrain (or KGTRAIN_FULL), the same 1-epoch fit gives bit-identical
#     weights in both builds (the flips, pad_crop and normalize do the same arithmetic without OpenCV).
#   bash scripts/check_no_opencv.sh            (BUILD_DIR=build-noopencv, EPOCHS=1)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BUILD_DIR:-build-noopencv}
FULL=${KGTRAIN_FULL:-build/kgtrain}
SRC=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
EPOCHS=${EPOCHS:-1}
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DKG_OPENCV=off -DKGTRAIN_BUILD_TESTS=OFF >/dev/null
cmake --build "$B" -j "$(nproc)" --target kgtrain
K=$B/kgtrain
fail() { echo "check_no_opencv: FAILED: $*" >&2; exit 1; }
# Runs "$@", expecting exit code $1 and output containing $2.
expect() {
  local code=$1 text=$2 out rc
  shift 2
  set +e
  out=$("$@" 2>&1)
  rc=$?
  set -e
  [ "$rc" = "$code" ] || fail "$* exited $rc, expected $code: $out"
  grep -qF -- "$text" <<<"$out" || fail "$* did not say '$text': $out"
  echo "ok: exit $rc, says '$text'"
}

"$K" --version | tee /dev/stderr | grep -q "OpenCV: not built" || fail "--version does not say OpenCV is not built"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$K" import-idx --train-images "$SRC/train-images-idx3-ubyte.gz" --train-labels "$SRC/train-labels-idx1-ubyte.gz" \
  --test-images "$SRC/t10k-images-idx3-ubyte.gz" --test-labels "$SRC/t10k-labels-idx1-ubyte.gz" --out "$T/fm" --packs
common=(recipes/fashion_mnist.toml "data.root=$T/fm" "train.epochs=$EPOCHS" device.threads=2 --quiet)

"$K" fit "${common[@]}" --run-dir "$T/ram"
"$K" fit "${common[@]}" data.cache=device --run-dir "$T/dev"
"$K" tta-predict recipes/fashion_mnist.toml "data.root=$T/fm" --from-run "$T/dev" --out "$T/submission.csv" --quiet
python3 - "$T" <<'PY'
import csv, json, sys
t = sys.argv[1]
for run in ("ram", "dev"):
    acc = json.load(open(f"{t}/{run}/summary.json"))["best"]["value"]
    print(f"{run}: best validation accuracy {acc:.4f}")
    assert acc > 0.8, f"{run}: accuracy {acc} after training"
sub = {r["id"]: r["label"] for r in csv.DictReader(open(f"{t}/submission.csv"))}
truth = {r["id"]: r["label"] for r in csv.DictReader(open(f"{t}/fm/test_labels.csv"))}
acc = sum(sub[k] == v for k, v in truth.items()) / len(truth)
print(f"tta-predict: test accuracy {acc:.4f} on {len(truth)} images")
assert acc > 0.8
PY

expect 2 "needs OpenCV" "$K" fit "${common[@]}" 'data.augment=[{name="resize"}]' --run-dir "$T/bad" --dry-run
expect 2 "built without" "$K" fit "${common[@]}" "optim.lr=0.003" --plot-schedule "$T/lr.png"
mkdir -p "$T/png/train"
printf 'id,label\na,0\nb,1\n' >"$T/png/train.csv"
printf '\x89PNG\r\n\x1a\n' >"$T/png/train/a.png"
cp "$T/png/train/a.png" "$T/png/train/b.png"
expect 3 "cannot decode image" "$K" fit recipes/fashion_mnist.toml "data.root=$T/png" data.sample_submission= \
  data.cache=none cv.folds=2 --quiet --run-dir "$T/png_run"

if [ -x "$FULL" ]; then
  "$FULL" fit "${common[@]}" --run-dir "$T/full"
  cmp "$T/full/checkpoints/last/model.safetensors" "$T/ram/checkpoints/last/model.safetensors" ||
    fail "the builds with and without OpenCV trained different weights"
  echo "ok: $FULL and $K trained bit-identical weights"
fi
echo "check_no_opencv: all checks passed"
