#!/usr/bin/env bash
# Runs inside the fresh Debian root of scripts/check_wheel.sh (as a Kaggle/Colab notebook's cells would): /work/wheels
# holds kgtrain's wheels for two torch minors (TORCH_NEW, TORCH_OLD) in ONE folder, /work photos.toml, the JPEG photos
# and each source build's validation figure (ref_best-VERSION.txt); /mnt/wheelhouse/wheelhouse-torch-VERSION torch's
# wheels and wheelhouse-notebook nbclient's; /mnt/fmnist the Fashion-MNIST IDX files. No network is needed: every
# install is --no-index.
set -euo pipefail
cd /work
fail() { echo "check_wheel: FAILED: $*" >&2; exit 1; }
now() { date +%s.%N; }
secs() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$2"; }
tag() { echo "pt$(echo "$1" | cut -d. -f1)$(echo "$1" | cut -d. -f2)"; }
torch_of() { "$1/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"))'; }

# One fresh venv per torch; torch from its wheelhouse, then kgtrain from the one folder: pip must take the wheel of
# that torch's minor and leave torch alone.
# --no-compile: torch's ~10,000 .py files are not byte-compiled up front (Python does it as modules are imported);
# 25 s less here, with nothing else changed (kgtrain itself is installed the usual way below).
install_pair() {  # VENV TORCH_VERSION
  local venv=$1 v=$2 t
  python3 -m venv "$venv"
  t=$(now)
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-index --no-compile \
    --find-links "/mnt/wheelhouse/wheelhouse-torch-$v" "torch==$v"
  echo "check_wheel: torch $v installed offline in $(secs "$t" "$(now)") s"
  local before after picked
  before=$(torch_of "$venv")
  t_install=$(now)
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-index --find-links /work/wheels kgtrain
  t_installed=$(now)
  after=$(torch_of "$venv")
  picked=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("kgtrain"))')
  echo "check_wheel: torch $before: pip picked kgtrain $picked from $(ls /work/wheels | tr '\n' ' ')"
  [ "$before" = "$after" ] || fail "pip changed torch from $before to $after"
  case "$picked" in *+"$(tag "$v")") ;; *) fail "torch $v: pip picked kgtrain $picked, not the +$(tag "$v") wheel" ;; esac
}

# The photos fit with the installed wheel against the source build's figure, then TTA predictions of the test photos.
photos() {  # TORCH_VERSION
  local v=$1 got ref rows
  rm -rf runs/photos && mkdir -p data && ln -sfn /work/photos_ci data/photos_ci
  kgtrain fit photos.toml | tail -3
  got=$(python3 -c 'import json; print(repr(json.load(open("runs/latest/summary.json"))["folds"][0]["best"]["value"]))')
  ref=$(cat "ref_best-$v.txt")
  echo "check_wheel: torch $v: photos fit best: wheel $got, source build $ref"
  [ "$got" = "$ref" ] || fail "torch $v: the wheel's validation figure $got differs from the source build's $ref"
  # The next notebook cell, with no path copied from the last one: the newest run and its own saved recipe.
  kgtrain tta-predict --from-run latest --out submission.csv | tail -2
  rows=$(($(wc -l <submission.csv) - 1))
  [ "$rows" -eq "$(($(wc -l <photos_ci/test.csv) - 1))" ] || fail "torch $v: submission has $rows rows"
}

# ---- torch TORCH_NEW: every check ----
install_pair /venv "$TORCH_NEW"
export PATH=/venv/bin:$PATH
command -v kgtrain | grep -q '^/venv/bin/kgtrain$' || fail "pip put no kgtrain command on PATH"
kgtrain --version | tee version.txt
grep -q "^LibTorch $TORCH_NEW+cu" version.txt || fail "--version names no LibTorch $TORCH_NEW with its CUDA build"
if grep -q "reference BLAS" version.txt; then fail "the wheel's LibTorch runs the reference BLAS"; fi
# A CUDA build without an NVIDIA driver (this root, a CPU notebook) says so in one line and runs on the CPU.
if grep -q "^CUDA" version.txt; then grep -q "no GPU visible" version.txt || fail "no line says the GPU is missing"; fi
python -m kgtrain --version | head -1 | grep -q '^kgtrain ' || fail "python -m kgtrain --version"
RECIPES=$(python -c 'import os, kgtrain; print(os.path.join(os.path.dirname(kgtrain.__file__), "recipes"))')
mkdir -p /work/data
kgtrain import-idx --train-images /mnt/fmnist/train-images-idx3-ubyte.gz \
  --train-labels /mnt/fmnist/train-labels-idx1-ubyte.gz --test-images /mnt/fmnist/t10k-images-idx3-ubyte.gz \
  --test-labels /mnt/fmnist/t10k-labels-idx1-ubyte.gz --out data/fashion_mnist >/dev/null
t_fit=$(now)
kgtrain fit "$RECIPES/fashion_mnist.toml" --smoke --run-dir runs/smoke | tee smoke.log
t_done=$(now)
grep -q '"status": *"completed"' runs/smoke/summary.json || fail "fit --smoke did not complete"
echo "check_wheel: pip install kgtrain (offline, torch present) $(secs "$t_install" "$t_installed") s;" \
  "fit --smoke $(secs "$t_fit" "$t_done") s; install to the end of fit --smoke (import-idx excluded)" \
  "$(secs "$t_install" "$(python3 -c "import sys; print(float(sys.argv[1]) - (float(sys.argv[2]) - float(sys.argv[3])))" "$t_done" "$t_fit" "$t_installed")") s"
photos "$TORCH_NEW"

# Text + numbers with the wheel: recipes/examples/text_deberta.toml on its data and DeBERTa-v3-style folder
# (scripts/check_text_example.sh), a smoke fit and the prediction of the newest run.
kgtrain fit text_deberta.toml paths.data=/work/text_example --smoke --run-dir runs/text | tail -2
grep -q '"status": *"completed"' runs/text/summary.json || fail "the text example's fit --smoke did not complete"
kgtrain tta-predict text_deberta.toml paths.data=/work/text_example --from-run runs/text --smoke \
  --out text_submission.csv | tail -1
[ -s text_submission.csv ] || fail "the text example's tta-predict wrote no submission"

# The launcher's refusals and kgtrain.run (tests/python/test_launcher.py) against the installed wheel.
python -m unittest -v test_launcher >unittest.log 2>&1 || { cat unittest.log; fail "tests/python/test_launcher.py"; }
grep -E '(ok|ERROR|FAIL)$|^Ran ' unittest.log

# A notebook, run as Jupyter runs it (nbclient + ipykernel, offline into this venv): README's cells.
/venv/bin/python -m pip install -q --disable-pip-version-check --no-index --find-links /mnt/wheelhouse/wheelhouse-notebook \
  nbclient nbformat ipykernel
/venv/bin/python check_notebook.py notebook.ipynb --wheels /work/wheels --tag "$(tag "$TORCH_NEW")" ||
  fail "the notebook (scripts/wheel/notebook.ipynb)"

# ---- torch TORCH_OLD: its own wheel from the same folder ----
# The first venv goes first: two torches at once are 11 GB (a CI machine's disk ran out here, 2026-12-06).
rm -rf /venv
export PATH=/venv-old/bin:${PATH#/venv/bin:}
install_pair /venv-old "$TORCH_OLD"
kgtrain --version | grep "^LibTorch" | tee old_version.txt
grep -q "^LibTorch $TORCH_OLD+cu" old_version.txt || fail "--version names no LibTorch $TORCH_OLD"
photos "$TORCH_OLD"

# The wrong wheel installed by hand (pip would not pick it): exit 2 naming both torch builds and the wheel to take,
# before the binary is loaded (no undefined-symbol crash).
/venv-old/bin/python -m pip install -q --disable-pip-version-check --no-index --no-deps --force-reinstall \
  /work/wheels/kgtrain-*+"$(tag "$TORCH_NEW")"-*.whl
set +e
kgtrain --version >mismatch.txt 2>&1
rc=$?
set -e
cat mismatch.txt
[ "$rc" -eq 2 ] || fail "the wheel of another torch minor exited $rc, not 2"
grep -q "built for torch ${TORCH_NEW%.*}.x" mismatch.txt && grep -q "torch $TORCH_OLD" mismatch.txt &&
  grep -q "+$(tag "$TORCH_OLD") instead" mismatch.txt || fail "the mismatch message names not both torches and the wheel"
echo "check_wheel: all checks passed inside the fresh root"
