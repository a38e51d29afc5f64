#!/usr/bin/env bash
# kgtrain against the real peers, side by side on the same data, machine and threads (issue 24 item 1):
#   kgtrain-pip     build-cuda/kgtrain: kgtrain built against PyPI's LibTorch 2.11 (.venv-torch), the very
#                   libtorch the peers' torch loads
#   kgtrain-debian  build-debian/kgtrain: kgtrain built against Debian's LibTorch 1.13 + OpenBLAS
#   fastai          fastai 2.8: Learner + fit_one_cycle (fine_tune for the fine-tuning case)  scripts/peers/fastai_fit.py
#   timm            timm 1.0: train.py's loop, replicated from timm's building blocks because train.py ships in
#                   neither the wheel nor the sdist on PyPI (see the header of) scripts/peers/timm_train.py
# run interleaved (each setting's contenders back to back, the order rotated every round), one process per run:
#   fmnist        Fashion-MNIST 28x28 (data/fashion_mnist), kgtrain's resnet9 width 16: recipes/fashion_mnist.toml's
#                 batch, augmentation, AdamW + one-cycle, label smoothing; fp32 and bf16 autocast; channels_last
#   rgb_*         3x128 RGB JPEGs derived from Fashion-MNIST (data/bench_peers/rgb128: upscaled, colourised),
#                 resnet18 (fp32, bf16), efficientnet_b0 (fp32), resnet18 + mixup, resnet18 fine_tune
#                 (kgtrain train.mode = "fine_tune" against fastai's fine_tune); scripts/peers/rgb128.toml
#   fmnist_tta    time to 94 % test accuracy on all of Fashion-MNIST, each side with its own recipe
# Every run trains on the same training rows and evaluates on the same test rows after every epoch. Prints per
# setting and contender: training img/s per epoch and overall, wall per epoch, test accuracy, process wall, and
# kgtrain's training img/s over the fastest peer's; writes everything (commands, per-epoch figures, versions,
# load averages, the peers' pip freeze) to runs/bench_peers/<UTC time>.json (logs beside it).
# What is not identical between the sides, and why: scripts/peers/README.md.
#
# usage: scripts/bench_peers.sh [--quick] [--setup-only] [OPTIONS of scripts/peers/bench.py]
#   --quick       every case on a sliver (2,048 / 256 training images, 1 epoch, 1 round; time-to-accuracy on
#                 2,048 rows): checks that everything runs, ~5 min on a quiet machine; its figures mean nothing
#   (default)     the full measurement, ~33 min on a quiet 2-core machine (measured 2026-11-27):
#                 fmnist (6,144 rows) and rgb_resnet18 (640 images), 2 epochs, fp32 + bf16, 2 rounds;
#                 rgb_effnet_b0, mixup and fine_tune 1 round (12 min in all); then time to 94 % (~20 min:
#                 kgtrain 16 epochs ~4.5 min, fastai and timm 12 epochs ~10 and ~6 min, of 60,000 images each). Only the img/s part: --cases
#                 fmnist,rgb_resnet18,rgb_effnet_b0,rgb_resnet18_mixup,rgb_resnet18_finetune; only time to 94 %:
#                 --cases fmnist_tta. Reprint a table: python3 scripts/peers/bench.py --table runs/bench_peers/X.json
#   e.g. --cases fmnist --precisions bf16 --rounds 3; --contenders kgtrain-pip,fastai; --tta-fastai "--epochs 14
#   --lr find --bf16"; --fmnist-train 15360; python3 scripts/peers/bench.py --help lists them all.
# Environment: VENV (.venv-peers) the peers' venv, made on first use; TORCH_VENV (.venv-torch, made by
# scripts/setup.sh) whose torch 2.11.0 the peers' venv reuses through a .pth file when it is there (else torch
# 2.11.0 is installed from PyPI); PYTHON (python3) for a venv made from scratch.
# Needs: build-cuda/kgtrain and/or build-debian/kgtrain, data/fashion_mnist (scripts/prepare_fashion_mnist.sh),
# PyPI for the first run. Run it on a quiet machine: nothing else compiling.
# The text row: scripts/bench_peers.sh --text DATA_DIR MODEL_FOLDER [ROWS] runs scripts/bench_text.sh (kgtrain against
# the Hugging Face Trainer on text + numbers, with .venv-text, scripts/check_text_parity.sh's venv; docs/text.md).
set -euo pipefail
if [[ "${1:-}" == --text ]]; then
  shift
  exec bash "$(dirname "${BASH_SOURCE[0]}")/bench_text.sh" "$@"
fi

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
VENV=${VENV:-.venv-peers}
TORCH_VENV=${TORCH_VENV:-.venv-torch}
PYTHON=${PYTHON:-python3}
# Pinned peers; torch/torchvision are the generation build-cuda/kgtrain links (scripts/setup.sh's TORCH_VERSION).
TORCH_VERSION=2.11.0
TORCHVISION_VERSION=0.26.0
TIMM_VERSION=1.0.31
FASTAI_VERSION=2.8.12

die() { echo "bench_peers: $*" >&2; exit 2; }

SETUP_ONLY=0
ARGS=()
for arg in "$@"; do
  case "$arg" in
    --setup-only) SETUP_ONLY=1 ;;
    *) ARGS+=("$arg") ;;
  esac
done

have_peers() {  # the venv imports the pinned torch, timm and fastai
  [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" - "$TORCH_VERSION" "$TIMM_VERSION" "$FASTAI_VERSION" <<'EOF' 2>/dev/null
import sys, torch, timm, fastai, fastai.vision.all
ok = (torch.__version__.split("+")[0], timm.__version__, fastai.__version__) == tuple(sys.argv[1:4])
sys.exit(0 if ok else 1)
EOF
}

make_venv() {
  local layered=0 base="$PYTHON"
  if [[ -x "$TORCH_VENV/bin/python" ]] &&
     [[ "$("$TORCH_VENV/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null)" == "$TORCH_VERSION" ]]; then
    layered=1
    base=$("$TORCH_VENV/bin/python" -c 'import sys; print(sys._base_executable)')
  fi
  if [[ ! -x "$VENV/bin/python" ]]; then
    echo "bench_peers: making $VENV with $base"
    "$base" -m venv "$VENV" || die "cannot make a venv with $base (Debian: apt install python3-venv)"
  fi
  local constraints="$VENV/peer-constraints.txt"
  printf 'torch==%s\ntorchvision==%s\ntimm==%s\nfastai==%s\n' \
    "$TORCH_VERSION" "$TORCHVISION_VERSION" "$TIMM_VERSION" "$FASTAI_VERSION" > "$constraints"
  local pkgs=("fastai==$FASTAI_VERSION" "timm==$TIMM_VERSION")
  if (( layered )); then
    # Reuse .venv-torch's torch (4.8 GB, the libtorch build-cuda/kgtrain runs on): its site-packages goes on
    # sys.path after this venv's own, so pip sees torch as installed and puts everything else here.
    local site own
    site=$("$TORCH_VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    own=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    echo "$site" > "$own/_kgtrain_torch_venv.pth"
  else
    pkgs+=("torch==$TORCH_VERSION" "torchvision==$TORCHVISION_VERSION")
  fi
  echo "bench_peers: pip install ${pkgs[*]} into $VENV$( (( layered )) && echo " (torch from $TORCH_VENV)")"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check -c "$constraints" "${pkgs[@]}"
}

have_peers || make_venv
have_peers || die "$VENV does not import torch $TORCH_VERSION, timm $TIMM_VERSION and fastai $FASTAI_VERSION"
PY="$(cd "$VENV/bin" && pwd)/python"

[[ -f data/fashion_mnist/train.csv && -f data/fashion_mnist/test_labels.csv ]] ||
  die "no Fashion-MNIST at data/fashion_mnist: make it once with scripts/prepare_fashion_mnist.sh"
"$PY" scripts/peers/make_data.py rgb data/fashion_mnist data/bench_peers/rgb128 --train 3072 --test 1024
(( SETUP_ONLY )) && { echo "bench_peers: set up ($PY)"; exit 0; }

export PYTHONDONTWRITEBYTECODE=1 PYTHONWARNINGS=ignore
OUT="runs/bench_peers/$(date -u +%Y%m%dT%H%M%SZ).json"
exec "$PY" scripts/peers/bench.py --py "$PY" --out "$OUT" "${ARGS[@]}"
