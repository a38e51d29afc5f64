#!/usr/bin/env bash
# kgtrain's text stack against Hugging Face's, as CI runs it (.ci/run):
#   encoders    scripts/check_text_encoders.py: every family (BERT, RoBERTa, XLM-R, ELECTRA, DistilBERT, DeBERTa-v2/v3,
#               ModernBERT) built from a config with transformers, every layer's hidden states and one training step's
#               gradients against build-cuda's kgtrain_text_parity (LibTorch of .venv-torch)
#   tokenizers  scripts/check_tokenizer_parity.py (WordPiece) and check_tokenizer_parity_models.py (byte-level BPE,
#               Unigram, spm.model-only folders), trained here on LINES lines of this machine's own text (man pages,
#               copyright files, package descriptions; 120,000 by hand, docs/text.md) plus the hostile list and every
#               code point, id for id
#   example     scripts/check_text_example.sh: recipes/examples/text_deberta.toml on this machine's Debian package
#               index (fit cv.fold=all, tta-predict --from-run latest, pseudo-label), its data made first
#   bash scripts/check_text_parity.sh                 all three, CI's corpus (KGTRAIN_TEXT_PARITY_LINES, 20000)
#   bash scripts/check_text_parity.sh --fetch-only    only the venv
# The venv (.venv-text) is layered on .venv-torch as .venv-timm is (scripts/check_timm_parity.sh): its torch is the
# one build-cuda links; pip adds the pinned transformers, tokenizers and sentencepiece beside it.
# Environment: BUILD_DIR (build-cuda), TORCH_VENV (.venv-torch), VENV (.venv-text), KGTRAIN_TEXT_PARITY_LINES.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/layered_venv.sh
TORCH_VERSION=2.11.0
TRANSFORMERS_VERSION=5.25.0
TOKENIZERS_VERSION=0.23.3
SENTENCEPIECE_VERSION=0.2.3
TORCH_VENV=${TORCH_VENV:-.venv-torch}
VENV=${VENV:-.venv-text}
BUILD_DIR=${BUILD_DIR:-build-cuda}
LINES=${KGTRAIN_TEXT_PARITY_LINES:-20000}
WORK=$(mktemp -d /tmp/kgtrain-text-parity.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

die() { echo "check_text_parity: $*" >&2; exit 2; }

have_venv() {
  [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" - "$TORCH_VERSION" "$TRANSFORMERS_VERSION" "$TOKENIZERS_VERSION" \
    <<'PY' 2>/dev/null
import sys, torch, transformers, tokenizers, sentencepiece, safetensors
want = tuple(sys.argv[1:4])
sys.exit(0 if (torch.__version__.split("+")[0], transformers.__version__, tokenizers.__version__) == want else 1)
PY
}

make_venv() {
  layered_venv check_text_parity "$TORCH_VENV" "$VENV" "torch==$TORCH_VERSION" "transformers==$TRANSFORMERS_VERSION" \
    "tokenizers==$TOKENIZERS_VERSION" "sentencepiece==$SENTENCEPIECE_VERSION" protobuf safetensors numpy
}

have_venv || make_venv
have_venv || die "$VENV does not import torch $TORCH_VERSION, transformers $TRANSFORMERS_VERSION, tokenizers $TOKENIZERS_VERSION"
[[ "${1:-}" == --fetch-only ]] && exit 0
[[ -z "${1:-}" ]] || die "unknown argument $1 (--fetch-only or none)"

s() { date +%s; }
# The text example's data and model folder first: scripts/check_wheel.sh (beside this script in CI) waits for them.
PYTHON="$VENV/bin/python" bash scripts/check_text_example.sh --make-only
t0=$(s)
cmake --build "$BUILD_DIR" --target kgtrain_text_parity >/dev/null || die "cannot build $BUILD_DIR/kgtrain_text_parity"
t1=$(s)
"$VENV/bin/python" scripts/check_text_encoders.py --binary "$BUILD_DIR/kgtrain_text_parity"
t2=$(s)
"$VENV/bin/python" scripts/check_tokenizer_parity.py --work "$WORK/wordpiece" --lines "$LINES"
t3=$(s)
"$VENV/bin/python" scripts/check_tokenizer_parity_models.py --work "$WORK/models" --lines "$LINES"
t4=$(s)
# recipes/examples/text_deberta.toml through fit cv.fold=all, tta-predict and pseudo-label with this build.
PYTHON="$VENV/bin/python" BUILD_DIR="$BUILD_DIR" bash scripts/check_text_example.sh
t5=$(s)
echo "check_text_parity: build $((t1 - t0)) s, encoders $((t2 - t1)) s, WordPiece $((t3 - t2)) s," \
  "BPE and Unigram $((t4 - t3)) s ($LINES lines of text), the text example $((t5 - t4)) s"
