#!/usr/bin/env bash
# recipes/examples/text_deberta.toml end to end on this machine's own text (CI runs it from check_text_parity.sh, in
# its venv): the task from the Debian package index (scripts/make_text_task.py, DESCRIPTION -> Section with numbers
# beside it), a DeBERTa-v3-style folder made offline (scripts/make_text_model.py: a sentencepiece vocabulary trained
# on the texts, random weights), then with the source build
#   kgtrain fit RECIPE cv.fold=all  ->  kgtrain tta-predict RECIPE --from-run latest  ->  kgtrain pseudo-label ...
# and a check that the submission has every test row and that the out-of-fold accuracy beats the majority class.
#   bash scripts/check_text_example.sh --make-only   only the data and the folder (DIR/.ready when done)
#   bash scripts/check_text_example.sh --run-only    only the commands, on the data another call makes (waits up to
#                                                    30 min for DIR/.ready): CI runs Debian's LibTorch build this way
# The data and the folder are made once per DIR, ROWS and TEST_ROWS (DIR/.ready records them); a second call reuses
# them, so that a run never rewrites files another one (scripts/check_wheel.sh) is reading.
# Environment: PYTHON (with transformers, sentencepiece; default .venv-text/bin/python), BUILD_DIR (build-cuda),
# DIR (data/text_example), ROWS (train rows, 1000), TEST_ROWS (the first rows of test.csv kept, 1000), EPOCHS (2),
# TAG (a suffix for the runs and outputs folders, so that two builds can run side by side), THREADS (device.threads;
# default: the recipe's). Exit 0 passed, 1 a check
# failed, 2 a tool is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-.venv-text/bin/python}
BUILD_DIR=${BUILD_DIR:-build-cuda}
DIR=${DIR:-data/text_example}
ROWS=${ROWS:-1000}
TEST_ROWS=${TEST_ROWS:-1000}
EPOCHS=${EPOCHS:-2}
TAG=${TAG:-}
MODE=${1:-all}
RECIPE=recipes/examples/text_deberta.toml
die() { echo "check_text_example: $*" >&2; exit "${2:-1}"; }
case $MODE in all | --make-only | --run-only) ;; *) die "unknown argument $MODE (--make-only, --run-only or none)" 2 ;; esac

s() { date +%s; }
t0=$(s)
STAMP="rows $ROWS test_rows $TEST_ROWS"
if [[ $MODE == --run-only ]]; then
  for _ in $(seq 1 360); do [[ -f "$DIR/.ready" ]] && break; sleep 5; done
  [[ -f "$DIR/.ready" ]] || die "no $DIR/.ready after 30 min (bash scripts/check_text_example.sh --make-only makes it)"
elif [[ ! -f "$DIR/.ready" || "$(cat "$DIR/.ready")" != "$STAMP" ]]; then
  [[ -x "$PYTHON" ]] || die "no python at $PYTHON (needs transformers and sentencepiece)" 2
  rm -f "$DIR/.ready"
  mkdir -p "$DIR"
  python3 scripts/make_text_task.py "$DIR/debian_sections" --rows "$ROWS" >"$DIR/make_task.log" 2>&1 ||
    { cat "$DIR/make_task.log"; die "make_text_task.py failed"; }
  python3 - "$DIR/debian_sections" "$TEST_ROWS" <<'PY'
import csv, sys
d, n = sys.argv[1], int(sys.argv[2])
for name in ("test.csv", "test_labels.csv"):  # the first n test rows (hash order: a fair sample)
    rows = list(csv.reader(open(f"{d}/{name}", encoding="utf-8", newline="")))
    with open(f"{d}/{name}", "w", encoding="utf-8", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows[: n + 1])
PY
  "$PYTHON" scripts/make_text_model.py "$DIR/deberta-v3-tiny" --texts "$DIR/debian_sections/train.csv" --vocab 4000 \
    >"$DIR/make_model.log" 2>&1 || { cat "$DIR/make_model.log"; die "make_text_model.py failed"; }
  echo "$STAMP" >"$DIR/.ready.tmp" && mv "$DIR/.ready.tmp" "$DIR/.ready"
fi
t1=$(s)
count() { python3 -c 'import csv, sys; print(sum(1 for _ in csv.DictReader(open(sys.argv[1], encoding="utf-8"))))' "$1"; }
echo "check_text_example: data ($(count "$DIR/debian_sections/train.csv") train rows, $(count \
  "$DIR/debian_sections/test.csv") test rows) and the tiny DeBERTa-v3 folder in $((t1 - t0)) s"
[[ $MODE == --make-only ]] && exit 0

K="$BUILD_DIR/kgtrain"
[[ -x "$K" ]] || die "no $K: build it first" 2
RUNS="$DIR/runs$TAG" OUT="$DIR/out$TAG"
common=("paths.data=$DIR" "paths.runs=$RUNS" "train.epochs=$EPOCHS" --quiet)
[[ -n "${THREADS:-}" ]] && common+=("device.threads=$THREADS")
rm -rf "$RUNS" "$OUT"
"$K" fit "$RECIPE" cv.fold=all "${common[@]}" | tail -3
"$K" tta-predict "$RECIPE" --from-run latest --out "$OUT/submission.csv" "${common[@]}" | tail -2
"$K" pseudo-label "$RECIPE" --from-run latest pseudo.threshold=0.9 --out "$OUT/pseudo" "${common[@]}" | tail -2
t2=$(s)
python3 - "$DIR" "$RUNS" "$OUT" <<'PY' || die "the example's outputs are wrong"
import csv, json, sys, collections
d, runs, out = sys.argv[1:4]
rows = lambda p: list(csv.DictReader(open(p, encoding="utf-8")))
test, sub = rows(f"{d}/debian_sections/test.csv"), rows(f"{out}/submission.csv")
assert [r["id"] for r in sub] == [r["id"] for r in test], "the submission's ids are not test.csv's, in order"
truth = {r["id"]: r["label"] for r in rows(f"{d}/debian_sections/test_labels.csv")}
test_acc = sum(r["label"] == truth[r["id"]] for r in sub) / len(sub)
cv = json.load(open(f"{runs}/latest/cv.json"))
train = rows(f"{d}/debian_sections/train.csv")
majority = collections.Counter(r["label"] for r in train).most_common(1)[0][1] / len(train)
pseudo = rows(f"{out}/pseudo/pseudo.csv")
assert pseudo and "text" in pseudo[0], "pseudo.csv carries no text column"
print(f"check_text_example: oof accuracy {cv['oof']:.4f}, test accuracy {test_acc:.4f} (majority class {majority:.4f}); "
      f"{len(pseudo)} pseudo labels")
assert cv["oof"] > majority + 0.05 and test_acc > majority + 0.05, "no better than the majority class"
PY
echo "check_text_example: passed with $K (data and folder $((t1 - t0)) s, fit + tta-predict + pseudo-label $((t2 - t1)) s)"
