#!/usr/bin/env bash
# What CI downloads, fetched early so that the network runs beside the compilers (.ci/run):
#   bash scripts/ci_fetch.sh packages    the Debian packages of setup.sh --torch debian and of the stages that run in
#                                        the background (apt runs one at a time)
#   bash scripts/ci_fetch.sh downloads   no apt and no compiler: torch's wheels and the tools venv of the wheel
#                                        check (check_wheel.sh --fetch-only), from those wheels PyPI's torch into
#                                        .venv-torch (setup.sh) and the oldest supported one into .venv-torch-2.9.0,
#                                        timm beside it (.venv-timm, check_timm_parity.sh), transformers and
#                                        tokenizers (.venv-text, check_text_parity.sh), the pinned header-only
#                                        .debs (build_cuda.sh --fetch-deps)
# Each script still fetches what it finds missing when run on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  packages)
    bash scripts/setup.sh --torch debian --packages-only
    # What the background stages need (apt runs one at a time, so they may install nothing): setup.sh --torch pip's
    # venv, the Docker check's root file system. The foreground scripts install what they lack themselves before or
    # after them (.ci/run: sanitize.sh --configure-only's clang; build_wheel.sh's reference BLAS and
    # make_photo_jpegs.sh's photographs, with only the fuzzers beside them).
    PKGS=(python3-venv mmdebstrap)
    missing=()
    for p in "${PKGS[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
      SUDO=""
      [ "$(id -u)" -eq 0 ] || SUDO="sudo"
      echo "ci_fetch: installing ${missing[*]}"
      $SUDO apt-get update -q >/dev/null
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
    fi
    ;;
  downloads)
    # Each torch is downloaded once, as files into the wheel check's wheelhouse (check_wheel.sh --fetch-only), and
    # both venvs are installed from there offline: with .ci/run's PIP_NO_CACHE_DIR, no second copy in pip's cache.
    # Disk, not time: a torch is 3-4 GB of files and 4.5-6.6 GB installed, and a CI machine ran out of space with
    # both torches in pip's cache as well (2026-12-06).
    bash scripts/check_wheel.sh --fetch-only
    WHEELHOUSE=${WHEELHOUSE:-/var/cache/kgtrain}
    PIP_NO_INDEX=1 PIP_FIND_LINKS="$WHEELHOUSE/wheelhouse-torch-2.11.0" \
      bash scripts/setup.sh --torch pip --packages-only --no-header-packages
    # The oldest supported torch, for the wheel check's second wheel (its own venv, as build_wheel.sh names it).
    PIP_NO_INDEX=1 PIP_FIND_LINKS="$WHEELHOUSE/wheelhouse-torch-${TORCH_OLD:-2.9.0}" \
      TORCH_VERSION=${TORCH_OLD:-2.9.0} VENV=.venv-torch-${TORCH_OLD:-2.9.0} \
      bash scripts/setup.sh --torch pip --packages-only --no-header-packages
    bash scripts/check_timm_parity.sh --fetch-only
    bash scripts/check_text_parity.sh --fetch-only
    bash scripts/build_cuda.sh --fetch-deps .deps/hdr
    ;;
  *)
    echo "usage: bash scripts/ci_fetch.sh packages|downloads" >&2
    exit 2
    ;;
esac
