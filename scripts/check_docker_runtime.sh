#!/usr/bin/env bash
# Checks the Dockerfile's runtime stage without a Docker engine: installs exactly its RUNTIME_PACKAGES into a fresh
# Debian 12 root with mmdebstrap (the host's apt sources), copies in kgtrain installed as the build stage installs it
# (cmake --install of a Debian-LibTorch build, tests off), and inside that root runs `kgtrain --version` (which must
# not warn of the reference BLAS), the Dockerfile's import-idx step and `fit --smoke` on Fashion-MNIST.
#   bash scripts/check_docker_runtime.sh        (BUILD_DIR=build-debian: built by setup.sh --torch debian if absent)
# Needs root (mmdebstrap's root mode, chroot). Exit 0 passed, 1 a check failed, 3 a tool is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-debian}
[ "$(id -u)" -eq 0 ] || { echo "check_docker_runtime: needs root (mmdebstrap --mode=root, chroot)" >&2; exit 3; }
PKGS=$(sed -n 's/^ARG RUNTIME_PACKAGES="\(.*\)"$/\1/p' Dockerfile)
[ -n "$PKGS" ] || { echo "check_docker_runtime: no ARG RUNTIME_PACKAGES=\"...\" line in the Dockerfile" >&2; exit 1; }
command -v mmdebstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap
if [ ! -x "$BUILD_DIR/kgtrain" ]; then BUILD_DIR="$BUILD_DIR" bash scripts/setup.sh --torch debian; fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cmake --install "$BUILD_DIR" --prefix "$T/opt/kgtrain" >/dev/null
SOURCES=/etc/apt/sources.list.d/debian.sources
[ -f "$SOURCES" ] || SOURCES=/etc/apt/sources.list
cat > "$T/check.sh" <<'IN'
set -eu
export PATH=/opt/kgtrain/bin:$PATH KGTRAIN_RECIPES=/opt/kgtrain/share/kgtrain/recipes
cd /work
kgtrain --version | tee version.txt
if grep -q "reference BLAS" version.txt; then echo "FAILED: the runtime stage runs the reference BLAS"; exit 1; fi
S=/usr/share/datasets/fashion-mnist
kgtrain import-idx --train-images $S/train-images-idx3-ubyte.gz --train-labels $S/train-labels-idx1-ubyte.gz \
  --test-images $S/t10k-images-idx3-ubyte.gz --test-labels $S/t10k-labels-idx1-ubyte.gz --out data/fashion_mnist
kgtrain fit /opt/kgtrain/share/kgtrain/recipes/fashion_mnist.toml --smoke --run-dir runs/smoke
test -s runs/smoke/summary.json
grep -q '"status": *"completed"' runs/smoke/summary.json
echo "check_docker_runtime: inside the runtime root: --version, import-idx and fit --smoke passed"
IN
echo "check_docker_runtime: bookworm root with: $PKGS"
# shellcheck disable=SC2086
mmdebstrap --mode=root --variant=apt --quiet --include="${PKGS// /,}" \
  --customize-hook="copy-in $T/opt /" \
  --customize-hook="mkdir -p \"\$1/work\" && cp $T/check.sh \"\$1/work/\"" \
  --customize-hook='chroot "$1" sh /work/check.sh' \
  bookworm /dev/null "$SOURCES"
echo "check_docker_runtime: passed"
