#!/usr/bin/env bash
# kgtrain against Python PyTorch on Fashion-MNIST (the Kaggle CSV + PNG layout), interleaved rounds:
#   (a) build/kgtrain fit recipes/fashion_mnist.toml train.epochs=EPOCHS   -> summary.json train_images_per_s
#   (b) ../shared/bench/peer_fmnist.py DATA EPOCHS (the peer, beside the repository; skipped if absent)
#   (c) scripts/peer_reference.py DATA EPOCHS (kgtrain's own Python reference loop)
#   (d) build/kgtrain_compute_bench recipes/fashion_mnist.toml (the recipe's pure compute rate: model, loss,
#       optimizer and schedule on pre-made tensors; no decoding, augmentation or loader)
# and prints the medians over rounds: kgtrain img/s, peer img/s, kgtrain/peer, compute img/s, kgtrain/compute.
#
# usage: scripts/bench_vs_python.sh [EPOCHS=1] [ROUNDS=2]
#   LIMIT=N   train every contender on the first N rows of train.csv only (a quick check; kgtrain then
#             trains on its 9 training folds of those rows, the Python loops on all of them)
#   PY=...    the Python with torch (default /usr/bin/python3, Debian's python3-torch)
# Needs: ninja -C build kgtrain kgtrain_compute_bench, and data/fashion_mnist (scripts/prepare_fashion_mnist.sh).
# Images/s are total training images over total training seconds (all epochs; evaluation not included).
set -euo pipefail

EPOCHS=${1:-1}
ROUNDS=${2:-2}
LIMIT=${LIMIT:-0}
PY=${PY:-/usr/bin/python3}

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
DATA=data/fashion_mnist
PEER="$(dirname "$REPO")/shared/bench/peer_fmnist.py"

die() { echo "bench_vs_python: $*" >&2; exit 2; }
[[ "$EPOCHS" =~ ^[1-9][0-9]*$ ]] || die "EPOCHS must be a positive integer, got '$EPOCHS'"
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer, got '$ROUNDS'"
[[ "$LIMIT" =~ ^[0-9]+$ ]] || die "LIMIT must be a non-negative integer, got '$LIMIT'"
[[ -x build/kgtrain ]] || die "build/kgtrain is missing: cmake -S . -B build -G Ninja && ninja -C build kgtrain"
[[ -x build/kgtrain_compute_bench ]] || die "build/kgtrain_compute_bench is missing: ninja -C build kgtrain_compute_bench"
[[ -f "$DATA/train.csv" && -d "$DATA/train" && -f "$DATA/test_labels.csv" ]] ||
  die "no Fashion-MNIST data at $DATA: make it once with scripts/prepare_fashion_mnist.sh"
"$PY" -c 'import torch, PIL, numpy' 2>/dev/null || die "$PY cannot import torch, PIL and numpy (Debian: apt install python3-torch python3-pil)"
HAVE_PEER=1
[[ -f "$PEER" ]] || { HAVE_PEER=0; echo "note: $PEER not found: the peer column is skipped" >&2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kgtrain-bench-XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# LIMIT: the first N rows of each table, written elsewhere and named by absolute path; the images stay
# where they are (kgtrain refuses image paths that leave data.root, links included).
KG_DATA_ARGS=()
PY_LIMIT=()
if (( LIMIT > 0 )); then
  SUB="$TMP/data"
  mkdir -p "$SUB"
  for f in train.csv test.csv test_labels.csv sample_submission.csv; do
    [[ -f "$DATA/$f" ]] && head -n "$((LIMIT + 1))" "$DATA/$f" > "$SUB/$f"
  done
  KG_DATA_ARGS=("data.train_csv=$SUB/train.csv" "data.test_csv=$SUB/test.csv" "data.sample_submission=$SUB/sample_submission.csv")
  PY_LIMIT=(--limit "$LIMIT")
fi

json_get() {  # json_get FILE EXPR: EXPR on `j`, the JSON document in FILE or else its last one-line JSON object
  "$PY" -c '
import json, sys
text = open(sys.argv[1]).read()
try:
    j = json.loads(text)
except ValueError:
    j = json.loads([l for l in text.splitlines() if l.startswith("{") and l.rstrip().endswith("}")][-1])
print(eval(sys.argv[2], {"j": j}))' "$1" "$2"
}
# Overall training rate from per-epoch rates of equal-sized epochs: epochs / sum(1 / rate).
PY_RATE='round(len(j["train_img_per_s"]) / sum(1 / v for v in j["train_img_per_s"]), 1)'

run_logged() {  # run_logged LOG CMD...: runs CMD, output to LOG; on failure shows the tail and returns 1
  local log=$1; shift
  if ! "$@" > "$log" 2>&1; then
    echo "  FAILED: $*" >&2
    tail -n 20 "$log" | sed 's/^/    /' >&2
    return 1
  fi
}

CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)
echo "machine: $(nproc) cores, ${CPU:-unknown CPU}; load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "kgtrain: $(build/kgtrain --version | head -n 2 | tr '\n' ' ')"
echo "python:  $("$PY" -c 'import torch, sys; print("Python", sys.version.split()[0], "torch", torch.__version__)')"
echo "job:     recipes/fashion_mnist.toml, $EPOCHS epoch(s), $ROUNDS round(s)$( (( LIMIT > 0 )) && echo ", first $LIMIT rows")"
echo

RES="$TMP/results.tsv"  # round, contender, train img/s ("" when it failed or was skipped)
for ((r = 1; r <= ROUNDS; r++)); do
  echo "round $r/$ROUNDS"
  v=""
  if run_logged "$TMP/kgtrain.$r.log" build/kgtrain fit recipes/fashion_mnist.toml "train.epochs=$EPOCHS" \
       "${KG_DATA_ARGS[@]}" --run-dir "$TMP/run.$r" --quiet; then
    v=$(json_get "$TMP/run.$r/summary.json" 'round(j["train_images_per_s"], 1)')
  fi
  echo "  kgtrain fit        ${v:-n/a} img/s"
  printf '%s\tkgtrain\t%s\n' "$r" "$v" >> "$RES"
  rm -rf "$TMP/run.$r"

  v=""
  if (( HAVE_PEER )); then
    if run_logged "$TMP/peer.$r.log" "$PY" "$PEER" "$DATA" "$EPOCHS" "${PY_LIMIT[@]}"; then
      v=$(json_get "$TMP/peer.$r.log" "$PY_RATE")
    fi
    echo "  peer_fmnist.py     ${v:-n/a} img/s"
  fi
  printf '%s\tpeer\t%s\n' "$r" "$v" >> "$RES"

  v=""
  if run_logged "$TMP/ref.$r.log" "$PY" scripts/peer_reference.py "$DATA" "$EPOCHS" "${PY_LIMIT[@]}"; then
    v=$(json_get "$TMP/ref.$r.log" "$PY_RATE")
  fi
  echo "  peer_reference.py  ${v:-n/a} img/s"
  printf '%s\treference\t%s\n' "$r" "$v" >> "$RES"

  v=""
  if run_logged "$TMP/compute.$r.log" build/kgtrain_compute_bench recipes/fashion_mnist.toml; then
    v=$(json_get "$TMP/compute.$r.log" 'round(j["compute_images_per_s"], 1)')
  fi
  echo "  compute bench      ${v:-n/a} img/s"
  printf '%s\tcompute\t%s\n' "$r" "$v" >> "$RES"
done

echo
"$PY" - "$RES" "$(nproc)" "${CPU:-unknown CPU}" "$(cut -d' ' -f1-3 /proc/loadavg)" <<'EOF'
import statistics, sys
res, nproc, cpu, load = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
vals = {}
for line in open(res):
    _, who, v = (line.rstrip("\n").split("\t") + [""])[:3]
    if v:
        vals.setdefault(who, []).append(float(v))
med = {k: statistics.median(v) for k, v in vals.items()}
def num(k):
    return f"{med[k]:.1f}" if k in med else "n/a"
def ratio(a, b):
    return f"{med[a] / med[b]:.2f}" if a in med and b in med and med[b] > 0 else "n/a"
rows = [("kgtrain img/s", num("kgtrain")), ("peer img/s (peer_fmnist.py)", num("peer")),
        ("kgtrain / peer", ratio("kgtrain", "peer")), ("reference img/s (peer_reference.py)", num("reference")),
        ("kgtrain / reference", ratio("kgtrain", "reference")), ("compute img/s", num("compute")),
        ("kgtrain / compute", ratio("kgtrain", "compute"))]
w = max(len(k) for k, _ in rows)
print(f"medians over rounds (rounds with a result: " +
      ", ".join(f"{k} {len(v)}" for k, v in sorted(vals.items())) + ")")
for k, v in rows:
    print(f"  {k:<{w}}  {v:>10}")
print(f"machine: {nproc} cores, {cpu}; load average at the end {load}")
EOF
