#!/usr/bin/env bash
# kgtrain's backbones against PyPI timm, as CI runs it (.ci/run): scripts/check_timm_parity.py in a venv with timm.
#   bash scripts/check_timm_parity.sh                 the CI models (one of each block kind, below) all ways, 13
#                                                     smaller variants forward only (CI_FORWARD), and the 16
#                                                     torchvision files (each family's layout) with build-cuda's
#                                                     kgtrain
#   bash scripts/check_timm_parity.sh -- --models ... --rest-forward-only    every other model forward only too
#   bash scripts/check_timm_parity.sh --all           all 68 timm models the script knows (~45 min on 2 cores)
#   bash scripts/check_timm_parity.sh --fetch-only    only the venv (pip; .ci/run does it beside the builds)
#   bash scripts/check_timm_parity.sh -- ARGS...      check_timm_parity.py's own arguments (--models, --keep, ...)
# The venv (.venv-timm) is layered on .venv-torch (scripts/setup.sh --torch pip), whose torch is the one
# build-cuda/kgtrain links: its site-packages is on the venv's path, so pip sees torch 2.11.0 as installed and adds
# only the pinned torchvision (timm needs it) and timm beside it. Installing timm into .venv-torch itself would let
# pip replace that torch with the newest (torchvision's newest pins it).
# Environment: KGTRAIN (build-cuda/kgtrain), TORCH_VENV (.venv-torch), VENV (.venv-timm).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/layered_venv.sh
TORCH_VERSION=2.11.0
TORCHVISION_VERSION=0.26.0
TIMM_VERSION=1.0.31
TORCH_VENV=${TORCH_VENV:-.venv-torch}
VENV=${VENV:-.venv-timm}
KGTRAIN=${KGTRAIN:-build-cuda/kgtrain}
# One model of each block kind: basic and bottleneck residuals, grouped and squeeze-excited bottlenecks, PyTorch's and
# TF's EfficientNet padding, EfficientNetV2's fused blocks, ConvNeXt, ViT with and without the class token's position,
# Swin's shifted windows (and the transformers' 224 -> 64 px load), NFNet's standardised convs.
CI_MODELS=(resnet18 resnet50 resnext50_32x4d seresnext50_32x4d efficientnet_b0 tf_efficientnet_b0 tf_efficientnet_b3
  tf_efficientnetv2_s efficientnetv2_rw_s convnext_tiny vit_tiny_patch16_224 deit3_small_patch16_224
  swin_tiny_patch4_window7_224 eca_nfnet_l0)

# CI also checks these smaller variants forward only (timm's file into kgtrain, the probabilities compared): one or two
# per family beyond CI_MODELS, each at most 30M parameters. The other 32 (forward only: --rest-forward-only, ~8 min on
# 2 cores; or all ways: --all) took 470 s of CI's 2,734 s on 2026-12-06, for network code CI_MODELS already runs.
CI_FORWARD=(resnet34 efficientnet_b1 efficientnet_b2 efficientnet_b3 efficientnet_b4 tf_efficientnet_b1
  tf_efficientnet_b2 tf_efficientnet_b4 tf_efficientnet_b5 efficientnetv2_s deit_tiny_patch16_224
  deit_small_patch16_224 vit_small_patch16_224)

die() { echo "check_timm_parity: $*" >&2; exit 2; }

have_timm() {
  [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" - "$TORCH_VERSION" "$TIMM_VERSION" <<'EOF' 2>/dev/null
import sys, torch, timm, safetensors, PIL
sys.exit(0 if (torch.__version__.split("+")[0], timm.__version__) == tuple(sys.argv[1:3]) else 1)
EOF
}

make_venv() {
  layered_venv check_timm_parity "$TORCH_VENV" "$VENV" "torch==$TORCH_VERSION" "torchvision==$TORCHVISION_VERSION" \
    "timm==$TIMM_VERSION" safetensors pillow numpy
}

have_timm || make_venv
have_timm || die "$VENV does not import torch $TORCH_VERSION and timm $TIMM_VERSION"
[[ "${1:-}" == --fetch-only ]] && exit 0

ARGS=(--kgtrain "$KGTRAIN")
case "${1:-}" in
  "") ARGS+=(--models "${CI_MODELS[@]}" --forward-only "${CI_FORWARD[@]}") ;;
  --all) ;;
  --) shift; ARGS+=("$@") ;;
  *) die "unknown argument $1 (--all, --fetch-only, or -- followed by check_timm_parity.py's arguments)" ;;
esac
# timm's own deprecation warnings (its resize_rel_pos_bias_table) are not ours to print.
PYTHONWARNINGS=ignore exec "$VENV/bin/python" scripts/check_timm_parity.py "${ARGS[@]}"
