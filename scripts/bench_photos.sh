#!/usr/bin/env bash
# The JPEG path of photo competitions against torchvision's PIL pipeline, on one core (issue 24 item 4):
# decode + random_resized_crop 224 + hflip + normalize of real 400-800 px photos (scripts/make_photo_jpegs.sh),
#   kgtrain bench-data scripts/peers/photos.toml --sections augment, data.reduced_decode = true (only the crop window
#            decoded, at M/8) and false (whole files), 1 thread;
#   scripts/peers/pil_pipeline.py (Image.open + convert("RGB") + RandomResizedCrop + flip + ToTensor + Normalize),
#            0 workers, one warm-up pass then one timed pass;
# each pinned to the same core with taskset, interleaved ROUNDS times; prints every figure, the medians and the
# ratios to PIL. Run it on a quiet machine (nothing compiling): it measures one core's throughput.
#   bash scripts/bench_photos.sh            (about 1 min a round)
# Environment: KGTRAIN (default build-debian/kgtrain), PY (default .venv-torch/bin/python: torch + torchvision),
#   ROUNDS (default 3), CORE (default the last one).
set -euo pipefail
cd "$(dirname "$0")/.."
KGTRAIN=${KGTRAIN:-build-debian/kgtrain}
PY=${PY:-.venv-torch/bin/python}
ROUNDS=${ROUNDS:-3}
CORE=${CORE:-$(($(nproc) - 1))}
[ -x "$KGTRAIN" ] || { echo "bench_photos: $KGTRAIN not built" >&2; exit 2; }
[ -f data/photos/train.csv ] || { echo "bench_photos: no data/photos: run bash scripts/make_photo_jpegs.sh" >&2; exit 2; }
"$PY" -c 'import torchvision, PIL' 2>/dev/null ||
  { echo "bench_photos: $PY lacks torchvision/Pillow (bash scripts/setup.sh --torch pip makes .venv-torch)" >&2; exit 2; }

kg() {  # img/s of decode+augment, one pinned thread
  taskset -c "$CORE" "$KGTRAIN" bench-data scripts/peers/photos.toml data.num_workers=1 "data.reduced_decode=$1" \
    --sections augment 2>&1 | awk '$1 == "decode+augment" { print $5 }'
}
pil() {
  taskset -c "$CORE" "$PY" scripts/peers/pil_pipeline.py --passes 1 2>/dev/null | tail -1 |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["images_per_s_per_core"])'
}
reduced=() full=() peer=()
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load $(cut -d' ' -f1-3 /proc/loadavg); core $CORE"
for r in $(seq "$ROUNDS"); do
  reduced+=("$(kg true)")
  full+=("$(kg false)")
  peer+=("$(pil)")
  echo "round $r: kgtrain window-decode ${reduced[-1]}, kgtrain full decode ${full[-1]}, PIL ${peer[-1]} img/s"
done
python3 - "${reduced[*]}" "${full[*]}" "${peer[*]}" <<'PY'
import statistics, sys
r, f, p = (statistics.median(float(x) for x in a.split()) for a in sys.argv[1:4])
print(f"median img/s per core: kgtrain {r:.0f} (full decode {f:.0f}), PIL {p:.0f}; "
      f"kgtrain / PIL = {r / p:.2f}x (full decode {f / p:.2f}x)")
PY
