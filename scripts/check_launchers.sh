#!/usr/bin/env bash
# kgtrain under torch.distributed's own launchers, on one machine, as CI runs it (.ci/run):
#   bash scripts/check_launchers.sh [--keep DIR]
# With KGTRAIN (build-cuda/kgtrain) and torchrun from TORCH_VENV (.venv-torch), on a generated 28 px dataset
# (kgtrain import-idx of IDX files written here), Gloo on the CPU, one thread a rank:
#   torchrun 2 nodes x 1    two torchrun agents (--nnodes 2 --node-rank 0/1, c10d rendezvous on 127.0.0.1) with one
#                           process each: the weights of `fit --nproc 2`, bit for bit
#   torchrun 2 nodes x 2    the same with --nproc-per-node 2: the weights of `fit --nproc 4`
#   torchrun 2 netns x 2    the same in two network namespaces joined by a veth pair, each its own address (10.77.N.1
#                           and .2; --local-addr, the host agent named by --rdzv-conf is_host): ranks on other
#                           "machines" reach each other's Gloo address, not 127.0.0.1; skipped, and said so, where
#                           namespaces cannot be made (not root, no iproute2)
#   srun                    two tasks with Slurm's variables only (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID,
#                           SLURM_STEP_NODELIST, SLURM_JOB_ID): the weights of `fit --nproc 2`
#   elastic restart         torchrun --max-restarts 1 over `fit --run-dir R --resume auto`, rank 1 killed (SIGKILL) once
#                           the run has checkpointed mid-epoch: the group restarts from R's last complete checkpoint and
#                           ends with the weights of the uninterrupted `fit --nproc 2`
# Prints one row a run (its seconds, rank 0's rendezvous seconds, the run's training img/s from its log, all ranks
# together and per rank, the weights' verdict) and exits 1 on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
KGTRAIN=$(realpath "${KGTRAIN:-build-cuda/kgtrain}")
TORCH_VENV=${TORCH_VENV:-.venv-torch}
TORCHRUN=$ROOT/$TORCH_VENV/bin/torchrun
KEEP=""
while [ $# -gt 0 ]; do
  case "$1" in
    --keep) KEEP=$2; shift 2 ;;
    *) echo "check_launchers: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -x "$KGTRAIN" ] || { echo "check_launchers: no kgtrain at $KGTRAIN (KGTRAIN=...)" >&2; exit 2; }
[ -x "$TORCHRUN" ] || { echo "check_launchers: no torchrun at $TORCHRUN (scripts/setup.sh --torch pip makes $TORCH_VENV)" >&2; exit 2; }
if [ -n "$KEEP" ]; then W=$(realpath -m "$KEEP"); rm -rf "$W"; mkdir -p "$W"; else W=$(mktemp -d /tmp/check_launchers.XXXXXX); trap 'rm -rf "$W"' EXIT; fi
PY=$ROOT/$TORCH_VENV/bin/python

# 96 training and 16 test images of 28 px in IDX files (two classes: a bright left or right half, plus noise).
"$PY" - "$W/idx" <<'EOF'
import os, random, struct, sys
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = random.Random(0)
def write(name, n):
    labels = [i % 2 for i in range(n)]
    pixels = bytearray()
    for y in labels:
        for r in range(28):
            for c in range(28):
                bright = (c < 14) == (y == 0)
                pixels.append(min(255, max(0, (180 if bright else 40) + rng.randint(-40, 40))))
    with open(os.path.join(out, name + "-images-idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, 28, 28) + bytes(pixels))
    with open(os.path.join(out, name + "-labels-idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">II", 2049, n) + bytes(labels))
write("train", 96)
write("t10k", 16)
EOF
"$KGTRAIN" import-idx --train-images "$W/idx/train-images-idx3-ubyte" --train-labels "$W/idx/train-labels-idx1-ubyte" \
  --test-images "$W/idx/t10k-images-idx3-ubyte" --test-labels "$W/idx/t10k-labels-idx1-ubyte" --out "$W/data" >/dev/null
cat >"$W/recipe.toml" <<EOF
# check_launchers.sh: a small resnet9 on the generated images, one thread a rank, checkpoints every 2 updates.
[run]
name = "launchers"
seed = 5
[data]
root = "$W/data"
channels = 1
image_size = 28
num_workers = 0
augment = [{ name = "normalize", mean = [0.4], std = [0.3] }]
[cv]
folds = 4
fold = 0
[model]
name = "resnet9"
width = 8
[optim]
name = "sgd"
lr = 0.05
momentum = 0.9
[train]
epochs = 3
batch_size = 6
checkpoint_every_steps = 2
[checkpoint]
keep_last = 3
[device]
threads = 1
dist_timeout_s = 120
EOF

# Tensor bytes of two model.safetensors files (the header's metadata aside): "same" or the first differing tensor.
same_weights() {
  "$PY" - "$1" "$2" <<'EOF'
import json, struct, sys
def tensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    header.pop("__metadata__", None)
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in header.items()}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
if a.keys() != b.keys():
    print("other tensor names"); sys.exit(1)
for k in sorted(a):
    if a[k] != b[k]:
        print("differs at " + k); sys.exit(1)
print("same")
EOF
}

FAILED=0
# Rank 0's figures from its log: the rendezvous ("met in 0.21 s") and the run's training img/s (all ranks together).
met() { grep -o 'met in [0-9.e+-]* s' "$1" | head -1 | awk '{print $3}'; }
rate() { grep -o '[0-9.]* train img/s' "$1" | tail -1 | awk '{print $1}'; }
# The same rate per rank: divided by the processes of the log's "ranks   N processes" line (1 without one).
per_rank() {
  local r n
  r=$(rate "$1")
  n=$(grep -o 'ranks *[0-9]* processes' "$1" | head -1 | awk '{print $2}')
  [ -z "$r" ] || awk -v r="$r" -v n="${n:-1}" 'BEGIN { printf "%.1f", r / n }'
}
row() {  # name seconds log verdict
  printf '%-24s %6.1f s %10s %12s %9s   %s\n' "$1" "$2" "${3:+$(met "$3")}" "${3:+$(rate "$3")}" \
    "${3:+$(per_rank "$3")}" "$4"
}
report() {  # name seconds run_dir reference_run_dir rank-0 log
  local verdict
  verdict=$(same_weights "$4/checkpoints/last/model.safetensors" "$3/checkpoints/last/model.safetensors" 2>&1) || FAILED=1
  row "$1" "$2" "$5" "$verdict"
}
now() { date +%s.%N; }
since() { "$PY" -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$1" "$(now)"; }
free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

echo "check_launchers: $KGTRAIN, $("$PY" -c 'import torch; print("torchrun of torch " + torch.__version__)'), Gloo, $(nproc) cores"
printf '%-24s %8s %10s %12s %9s   %s\n' check time "rendezvous" "train img/s" "per rank" "weights against fit --nproc"
run_logged() {  # name log args...: a fit of its own, its row
  local name=$1 log=$2 t; shift 2
  t=$(now)
  "$KGTRAIN" fit "$W/recipe.toml" "$@" >"$log" 2>&1 || { cat "$log"; FAILED=1; }
  row "$name" "$(since "$t")" "$log" ""
}
run_logged "fit, 1 process" "$W/one.log" --run-dir "$W/one"
run_logged "fit --nproc 2" "$W/nproc2.log" --nproc 2 --run-dir "$W/nproc2"
run_logged "fit --nproc 4" "$W/nproc4.log" --nproc 4 --run-dir "$W/nproc4"

# Two torchrun agents on this machine, as on two nodes: one rendezvous endpoint, node ranks 0 and 1.
agents() {  # per_node run_dir
  local port; port=$(free_port)
  local args=(--nnodes 2 --nproc-per-node "$1" --rdzv-backend c10d --rdzv-endpoint "127.0.0.1:$port" --rdzv-id launchers
    --no-python "$KGTRAIN" fit "$W/recipe.toml" --run-dir "$2")
  "$TORCHRUN" --node-rank 1 "${args[@]}" >"$2.node1.log" 2>&1 &
  local other=$!
  "$TORCHRUN" --node-rank 0 "${args[@]}" >"$2.node0.log" 2>&1 || { cat "$2.node0.log"; FAILED=1; }
  wait "$other" || { cat "$2.node1.log"; FAILED=1; }
  cat "$2.node0.log" "$2.node1.log" >"$2.log"  # c10d gives global rank 0 to the agent that joins first: either node
}
t=$(now); agents 1 "$W/agents2"; report "torchrun 2 nodes x 1" "$(since "$t")" "$W/agents2" "$W/nproc2" "$W/agents2.log"
t=$(now); agents 2 "$W/agents4"; report "torchrun 2 nodes x 2" "$(since "$t")" "$W/agents4" "$W/nproc4" "$W/agents4.log"

# Two network namespaces as two machines: each agent sees only its own veth address and loopback.
NS_A=kgl$$a NS_B=kgl$$b NET=10.77.$(($$ % 250))
netns_down() { ip netns del "$NS_A" 2>/dev/null || true; ip netns del "$NS_B" 2>/dev/null || true; }
netns_up() {
  command -v ip >/dev/null && ip netns add "$NS_A" 2>/dev/null && ip netns add "$NS_B" 2>/dev/null &&
    ip link add "${NS_A}v" type veth peer name "${NS_B}v" 2>/dev/null && ip link set "${NS_A}v" netns "$NS_A" &&
    ip link set "${NS_B}v" netns "$NS_B" && ip -n "$NS_A" addr add "$NET.1/24" dev "${NS_A}v" &&
    ip -n "$NS_B" addr add "$NET.2/24" dev "${NS_B}v" && ip -n "$NS_A" link set "${NS_A}v" up &&
    ip -n "$NS_B" link set "${NS_B}v" up && ip -n "$NS_A" link set lo up && ip -n "$NS_B" link set lo up
}
if netns_up; then
  trap 'netns_down; [ -n "$KEEP" ] || rm -rf "$W"' EXIT
  t=$(now)
  args=(--nnodes 2 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint "$NET.1:29400" --rdzv-id launchers
    --no-python "$KGTRAIN" fit "$W/recipe.toml" --run-dir "$W/netns4")
  ip netns exec "$NS_B" "$TORCHRUN" --node-rank 1 --local-addr "$NET.2" --rdzv-conf is_host=false "${args[@]}" \
    >"$W/netns4.node1.log" 2>&1 &
  other=$!
  ip netns exec "$NS_A" "$TORCHRUN" --node-rank 0 --local-addr "$NET.1" --rdzv-conf is_host=true "${args[@]}" \
    >"$W/netns4.node0.log" 2>&1 || { cat "$W/netns4.node0.log"; FAILED=1; }
  wait "$other" || { cat "$W/netns4.node1.log"; FAILED=1; }
  cat "$W/netns4.node0.log" "$W/netns4.node1.log" >"$W/netns4.log"
  report "torchrun 2 netns x 2" "$(since "$t")" "$W/netns4" "$W/nproc4" "$W/netns4.log"
  netns_down
else
  netns_down
  row "torchrun 2 netns x 2" 0 "" "skipped: no network namespaces here (they need root and iproute2)"
fi

# srun's tasks, without srun: its variables and nothing of torchrun's.
port=$(free_port)
task() {  # rank
  env SLURM_JOB_ID=4242 SLURM_STEP_NUM_TASKS=2 SLURM_STEP_TASKS_PER_NODE=2 SLURM_NODEID=0 \
    SLURM_STEP_NODELIST=localhost MASTER_PORT="$port" SLURM_PROCID="$1" SLURM_LOCALID="$1" \
    "$KGTRAIN" fit "$W/recipe.toml" --run-dir "$W/srun"
}
t=$(now)
task 1 >"$W/srun.task1.log" 2>&1 &
other=$!
task 0 >"$W/srun.task0.log" 2>&1 || { cat "$W/srun.task0.log"; FAILED=1; }
wait "$other" || { cat "$W/srun.task1.log"; FAILED=1; }
report "srun (simulated)" "$(since "$t")" "$W/srun" "$W/nproc2" "$W/srun.task0.log"

# Elastic: rank 1 killed once the run has a mid-epoch checkpoint; torchrun restarts both from it.
t=$(now)
"$TORCHRUN" --nnodes 1 --nproc-per-node 2 --max-restarts 1 --rdzv-backend c10d --rdzv-endpoint "127.0.0.1:$(free_port)" \
  --no-python "$KGTRAIN" fit "$W/recipe.toml" --run-dir "$W/elastic" --resume auto >"$W/elastic.log" 2>&1 &
agent=$!
killed=""
for _ in $(seq 1200); do
  if ls -d "$W"/elastic/checkpoints/step-* >/dev/null 2>&1; then
    for p in $(pgrep -f "$KGTRAIN fit $W/recipe.toml" || true); do
      if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'RANK=1'; then kill -9 "$p" && killed=$p; fi
    done
    [ -n "$killed" ] && break
  fi
  sleep 0.02
done
wait "$agent" || { cat "$W/elastic.log"; FAILED=1; }
if [ -z "$killed" ]; then echo "elastic restart: rank 1 was never killed (no checkpoint in time)"; FAILED=1; fi
grep -q "resume  $W/elastic" "$W/elastic.log" || { echo "elastic restart: the run did not resume"; FAILED=1; }
report "elastic restart" "$(since "$t")" "$W/elastic" "$W/nproc2" "$W/elastic.log"
grep -o "resumed from .*" "$W/elastic.log" | sed 's/^/  rank 1 killed; /' || true

[ "$FAILED" = 0 ] && echo "check_launchers: ok" || echo "check_launchers: FAILED"
exit "$FAILED"
