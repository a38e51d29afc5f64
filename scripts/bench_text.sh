#!/usr/bin/env bash
# kgtrain against the Hugging Face Trainer on text + numbers (docs/text.md): the same model folder, tokenizer, rows,
# holdout, epochs, seed, batch, optimizer, schedule and threads; float32 on the CPU. Contenders, run interleaved
# (ROUNDS rounds, the order rotated), one process each:
#   kgtrain            build-cuda/kgtrain fit recipes/examples/text_deberta.toml (dynamic padding: each batch to its
#                      longest row, rounded up to 8)
#   trainer-dynamic    scripts/bench_text_peer.py --padding dynamic (DataCollatorWithPadding(pad_to_multiple_of=8))
#   trainer-max        scripts/bench_text_peer.py --padding max_length
# Prints per contender and round: training samples/s (training rows x epochs / the training loop's wall time),
# peak RSS (the whole process), holdout accuracy; then kgtrain's samples/s over the Trainer's at the same policy.
#   bash scripts/bench_text.sh DATA_DIR MODEL_FOLDER [ROWS]
# DATA_DIR: scripts/make_text_task.py's output; MODEL_FOLDER: scripts/make_text_model.py's. ROWS (default 2000): the
# first rows of train.csv (hash order) that both sides read; fold 0 of them is the holdout.
# Environment: PYTHON (transformers, accelerate; default .venv-text/bin/python), BUILD_DIR (build-cuda), EPOCHS (1),
# BATCH (32), MAX_LENGTH (128), THREADS (2), ROUNDS (2), LR (1e-3), CONTENDERS (default all three, space-separated),
# SEEDS ("same": seed 0 every round; "rounds": round r uses seed r - 1, both sides, for the metric's spread).
# Run it on a quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${1:?usage: bench_text.sh DATA_DIR MODEL_FOLDER [ROWS]}
MODEL=${2:?usage: bench_text.sh DATA_DIR MODEL_FOLDER [ROWS]}
ROWS=${3:-2000}
PYTHON=${PYTHON:-.venv-text/bin/python}
BUILD_DIR=${BUILD_DIR:-build-cuda}
EPOCHS=${EPOCHS:-1} BATCH=${BATCH:-32} MAX_LENGTH=${MAX_LENGTH:-128} THREADS=${THREADS:-2} ROUNDS=${ROUNDS:-2}
LR=${LR:-1e-3}
W=$(mktemp -d /tmp/kgtrain-bench-text.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/data"
python3 - "$DATA/train.csv" "$W/data/train.csv" "$ROWS" <<'PY'
import csv, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = list(csv.reader(open(src, encoding="utf-8", newline="")))
with open(dst, "w", encoding="utf-8", newline="") as f:
    csv.writer(f, lineterminator="\n").writerows(rows[: n + 1])
PY
ln -s "$(cd "$MODEL" && pwd)" "$W/model"
TYPE=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1] + "/config.json"))["model_type"])' "$MODEL")
export OMP_NUM_THREADS=$THREADS
run() {  # CONTENDER ROUND -> one JSON line
  local c=$1 r=$2 out="$W/$1-$2"
  case $c in
    kgtrain)
      /usr/bin/time -f "%M" -o "$out.rss" "$BUILD_DIR/kgtrain" fit recipes/examples/text_deberta.toml \
        "paths.data=$W" "data.root=$W/data" "model.name=$TYPE" "model.pretrained=$W/model" "paths.runs=$W/runs" --run-dir "$out" \
        "train.epochs=$EPOCHS" "train.batch_size=$BATCH" "data.max_length=$MAX_LENGTH" "optim.lr=$LR" \
        "device.threads=$THREADS" "run.seed=$SEED" --quiet >"$out.log" 2>&1 || { cat "$out.log" >&2; exit 1; }
      python3 - "$out" "$(cat "$out.rss")" <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/summary.json"))
f = s["folds"][0]
print(json.dumps({"tool": "kgtrain", "samples_per_s": f["train_images_per_s"], "peak_rss_mb": int(sys.argv[2]) / 1024,
                  "accuracy": f["best"]["value"]}))
PY
      ;;
    trainer-*)
      /usr/bin/time -f "%M" -o "$out.rss" "$PYTHON" scripts/bench_text_peer.py --data "$W/data" --model "$W/model" \
        --epochs "$EPOCHS" --batch-size "$BATCH" --max-length "$MAX_LENGTH" --lr "$LR" --seed "$SEED" \
        --threads "$THREADS" --padding "$([ "$c" = trainer-max ] && echo max_length || echo dynamic)" \
        --work "$out" >"$out.log" 2>&1 || { cat "$out.log" >&2; exit 1; }
      tail -1 "$out.log"
      ;;
  esac
}
read -r -a contenders <<<"${CONTENDERS:-kgtrain trainer-dynamic trainer-max}"
n=${#contenders[@]}
: >"$W/all.jsonl"
for r in $(seq 1 "$ROUNDS"); do
  for i in $(seq 0 $((n - 1))); do
    c=${contenders[$(((i + r - 1) % n))]}
    SEED=0
    [ "${SEEDS:-same}" = rounds ] && SEED=$((r - 1))
    line=$(run "$c" "$r")
    echo "bench_text: round $r $c $line"
    echo "{\"contender\": \"$c\", \"round\": $r, \"result\": $line}" >>"$W/all.jsonl"
  done
done
python3 - "$W/all.jsonl" "$MODEL" "$ROWS" <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["contender"], []).append(r["result"])
rounds = len(rows) // len(by)
print(f"bench_text: {sys.argv[2]}, {sys.argv[3]} rows (holdout fold 0), median of {rounds} rounds "
      f"(accuracy: mean and standard deviation over the rounds)")
print(f"{'contender':18} {'samples/s':>10} {'peak RSS MB':>12} {'accuracy':>16}")
med = {}
for c, rs in by.items():
    med[c] = st.median(x["samples_per_s"] for x in rs)
    acc = [x["accuracy"] for x in rs]
    sd = f" +- {st.stdev(acc):.4f}" if len(acc) > 1 else ""
    print(f"{c:18} {med[c]:10.1f} {st.median(x['peak_rss_mb'] for x in rs):12.0f} {st.mean(acc):9.4f}{sd}")
for peer in ("trainer-dynamic", "trainer-max"):
    if "kgtrain" in med and peer in med:
        print(f"kgtrain / {peer} {med['kgtrain'] / med[peer]:.2f}x")
PY
