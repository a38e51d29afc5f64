#!/usr/bin/env bash
# Times the README's first command on a fresh Debian 12 machine: a new bookworm root made by mmdebstrap (nothing in
# it but apt: no compiler, no Python, no CUDA toolkit, empty caches), a clean export of HEAD copied in, then inside it
#   bash scripts/setup.sh [SETUP_ARGS] && bash scripts/prepare_fashion_mnist.sh && ./build/kgtrain fit RECIPE --smoke
# with each stage's wall time: apt + PyPI + build (setup.sh), the data, and fit until it has trained (--smoke stops
# after 2 training steps, so its end bounds the time to the first step from above).
#   bash scripts/time_first_command.sh [SETUP_ARGS...]     e.g. --torch debian
# Needs root (mmdebstrap --mode=root, chroot); takes the machine's whole CPU for ~10 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "time_first_command: needs root (mmdebstrap --mode=root, chroot)" >&2; exit 3; }
command -v mmdebstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends mmdebstrap
T=$(mktemp -d "${TMPDIR:-/tmp}/kgtrain-first-XXXXXX")
trap 'rm -rf "$T"' EXIT
git archive --format=tar --prefix=kgtrain/ HEAD > "$T/src.tar"
SOURCES=/etc/apt/sources.list.d/debian.sources
[ -f "$SOURCES" ] || SOURCES=/etc/apt/sources.list
cat > "$T/first.sh" <<IN
set -eu
cd /root && tar xf /src.tar && cd kgtrain
s() { date +%s.%N; }
t0=\$(s)
bash scripts/setup.sh $* > /root/setup.log 2>&1 || { tail -30 /root/setup.log; exit 1; }
t1=\$(s)
bash scripts/prepare_fashion_mnist.sh > /root/prepare.log 2>&1 || { tail -30 /root/prepare.log; exit 1; }
t2=\$(s)
./build/kgtrain fit recipes/fashion_mnist.toml --smoke > /root/fit.log 2>&1 || { tail -30 /root/fit.log; exit 1; }
t3=\$(s)
grep -E "^setup: (installing|built)" /root/setup.log | cut -c1-200
./build/kgtrain --version | sed -n '2p;4,6p'
awk -v a=\$t0 -v b=\$t1 -v c=\$t2 -v d=\$t3 'BEGIN { printf "time_first_command: setup.sh %.0f s, prepare_fashion_mnist.sh %.0f s, fit --smoke %.0f s; total %.0f s (%.1f min)\\n", b-a, c-b, d-c, d-a, (d-a)/60 }'
IN
echo "time_first_command: fresh bookworm root; README first command with setup.sh $*"
# The machine's own extra CA certificates (a network that inspects TLS): a fresh machine there has them too, and
# apt's ca-certificates picks them up when setup.sh installs it.
mkdir -p "$T/ca"
cp /usr/local/share/ca-certificates/*.crt "$T/ca/" 2>/dev/null || true
mmdebstrap --mode=root --variant=apt --quiet \
  --customize-hook="mkdir -p \"\$1/usr/local/share/ca-certificates\"" \
  --customize-hook="sync-in $T/ca /usr/local/share/ca-certificates" \
  --customize-hook="copy-in $T/src.tar /" \
  --customize-hook="copy-in $T/first.sh /root" \
  --customize-hook='chroot "$1" bash /root/first.sh' \
  bookworm /dev/null "$SOURCES"
