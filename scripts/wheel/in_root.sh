#!/usr/bin/env bash
# Runs inside the fresh Debian root of scripts/check_wheel.sh (as a Kaggle/Colab notebook's cells would): /work holds
# the kgtrain wheel, photos.toml, the JPEG photos and the source build's validation figure; /mnt/wheelhouse torch's
# wheels; /mnt/fmnist the Fashion-MNIST IDX files. No network is needed: every install is --no-index.
set -euo pipefail
cd /work
fail() { echo "check_wheel: FAILED: $*" >&2; exit 1; }
now() { date +%s.%N; }
secs() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$2"; }
python3 -m venv /venv
PIP=(/venv/bin/python -m pip install -q --disable-pip-version-check --no-index)
t=$(now)
# --no-compile: torch's ~10,000 .py files are not byte-compiled up front (Python does it as modules are imported);
# 25 s less here, with nothing else changed (kgtrain itself is installed the usual way below).
"${PIP[@]}" --no-compile --find-links /mnt/wheelhouse torch
echo "check_wheel: torch installed offline in $(secs "$t" "$(now)") s"
export PATH=/venv/bin:$PATH

# The offline route: a folder holding the wheel, torch already present. Timed to the end of `fit --smoke`.
mkdir -p /work/data
kgtrain_import() {
  kgtrain import-idx --train-images /mnt/fmnist/train-images-idx3-ubyte.gz \
    --train-labels /mnt/fmnist/train-labels-idx1-ubyte.gz --test-images /mnt/fmnist/t10k-images-idx3-ubyte.gz \
    --test-labels /mnt/fmnist/t10k-labels-idx1-ubyte.gz --out data/fashion_mnist >/dev/null
}
t_install=$(now)
"${PIP[@]}" --find-links /work kgtrain
t_installed=$(now)
command -v kgtrain | grep -q '^/venv/bin/kgtrain$' || fail "pip put no kgtrain command on PATH"
kgtrain --version | tee version.txt
grep -q "^LibTorch" version.txt || fail "--version names no LibTorch"
if grep -q "reference BLAS" version.txt; then fail "the wheel's LibTorch runs the reference BLAS"; fi
# A CUDA build without an NVIDIA driver (this root, a CPU notebook) says so in one line and runs on the CPU.
if grep -q "^CUDA" version.txt; then grep -q "no GPU visible" version.txt || fail "no line says the GPU is missing"; fi
python -m kgtrain --version | head -1 | grep -q '^kgtrain ' || fail "python -m kgtrain --version"
RECIPES=$(python -c 'import os, kgtrain; print(os.path.join(os.path.dirname(kgtrain.__file__), "recipes"))')
kgtrain_import
t_fit=$(now)
kgtrain fit "$RECIPES/fashion_mnist.toml" --smoke --run-dir runs/smoke | tee smoke.log
t_done=$(now)
grep -q '"status": *"completed"' runs/smoke/summary.json || fail "fit --smoke did not complete"
echo "check_wheel: pip install kgtrain (offline, torch present) $(secs "$t_install" "$t_installed") s;" \
  "fit --smoke $(secs "$t_fit" "$t_done") s; install to the end of fit --smoke (import-idx excluded)" \
  "$(secs "$t_install" "$(python3 -c "import sys; print(float(sys.argv[1]) - (float(sys.argv[2]) - float(sys.argv[3])))" "$t_done" "$t_fit" "$t_installed")") s"

# JPEG photos: the same fit as the source build, then TTA predictions of the test photos.
mkdir -p data && ln -sfn /work/photos_ci data/photos_ci
kgtrain fit photos.toml | tail -3
GOT=$(python3 -c 'import json; print(repr(json.load(open("runs/latest/summary.json"))["folds"][0]["best"]["value"]))')
REF=$(cat ref_best.txt)
echo "check_wheel: photos fit best: wheel $GOT, source build $REF"
[ "$GOT" = "$REF" ] || fail "the wheel's validation figure $GOT differs from the source build's $REF"
# The next notebook cell, with no path copied from the last one: the newest run and its own saved recipe.
kgtrain tta-predict --from-run latest --out submission.csv | tail -2
ROWS=$(($(wc -l <submission.csv) - 1))
[ "$ROWS" -eq "$(($(wc -l <photos_ci/test.csv) - 1))" ] || fail "submission has $ROWS rows"

# The launcher's refusals and kgtrain.run (tests/python/test_launcher.py) against the installed wheel.
python -m unittest -v test_launcher >unittest.log 2>&1 || { cat unittest.log; fail "tests/python/test_launcher.py"; }
grep -E '(ok|ERROR|FAIL)$|^Ran ' unittest.log

# Another torch version installed: exit 2 naming both, before the binary is loaded.
V=$(ls -d /venv/lib/python3*/site-packages/torch)/version.py
cp "$V" "$V.orig"
sed -i "s/^__version__ = .*/__version__ = '2.10.0+cu130'/" "$V"
set +e
kgtrain --version >mismatch.txt 2>&1
rc=$?
set -e
mv "$V.orig" "$V"
cat mismatch.txt
[ "$rc" -eq 2 ] || fail "a torch version mismatch exited $rc, not 2"
grep -q "2.10.0" mismatch.txt && grep -q "built against torch" mismatch.txt || fail "the mismatch message names no versions"
echo "check_wheel: all checks passed inside the fresh root"
