#!/usr/bin/env bash
# Real-photo JPEGs of the size Kaggle photo competitions ship (issue 24 item 4): the benchmark data for the
# JPEG decode + random_resized_crop 224 + hflip + normalize path (kgtrain bench-data, scripts/peers/pil_pipeline.py).
#
# Sources: the real photographs (not the rendered/abstract art) of four Debian 12 wallpaper packages, installed
# with apt-get when missing (about 170 MB under /usr/share):
#   lomiri-wallpapers-16.04      14 photos (Ubuntu wallpaper contest: landscapes, animals, objects), 1365x1074-5312x2988
#   lomiri-wallpapers-20.04       1 photo  (Kleiber, 6028x3391; the package's other three are digital art)
#   mate-backgrounds             12 photos (mate/nature: macros of plants, water, sand), 1280x1024-2560x1920
#   plasma-workspace-wallpapers  11 photos (BytheWater, ColdRipple, ..., Path; Grey is a grayscale photo), 2560x1600
# gnome-backgrounds (43) is left out: only SVG/WebP renders; ukui-wallpapers and sway-backgrounds: digital art.
#
# From each photo, many random crops: aspect w/h log-uniform in [3/4, 4/3], the crop's sides 30-100 % of those of
# the largest such window that fits the photo (never less than the output size), downscaled (Lanczos) to a longer
# side uniform in 400-800 px, saved as baseline JPEG quality 90, 4:2:0, no EXIF (so no orientation tag), always
# 3-channel. Crop i of a split comes from photo i mod 38 with its own seeded generator (numpy
# default_rng([SEED, split, i])): the same crops on every machine and run (the same bytes with the same Pillow).
# Labels: the photo's index mod 10 (10 classes, a valid multiclass table; classes 0-7 hold 4 photos each, classes 8
# and 9 hold 3).
#
# Output (ignored by git), laid out like data/fashion_mnist:
#   data/photos/train/<id>.jpg + train.csv (id,label)          ids 1..N_TRAIN
#   data/photos/test/<id>.jpg  + test.csv (id) + test_labels.csv (id,label) + sample_submission.csv
#                                                              ids 100001..100000+N_TEST
# Test crops are new crops of the same 38 photos (different generator streams), so they overlap the training crops
# in content: fine for timing, not a generalization benchmark.
#
#   bash scripts/make_photo_jpegs.sh [OUT_DIR (default data/photos)]
# Environment: N_TRAIN (2000), N_TEST (400), SEED (24), PYTHON (.venv-torch/bin/python: needs pillow + numpy).
# Idempotent: does nothing when OUT_DIR/.made records the same parameters; otherwise rebuilds OUT_DIR in a
# temporary folder beside it and renames it into place. Prints counts, size and byte distribution. ~1.5 min
# (one process), 150 MB.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
OUT=${1:-data/photos}
N_TRAIN=${N_TRAIN:-2000}
N_TEST=${N_TEST:-400}
SEED=${SEED:-24}
PYTHON=${PYTHON:-.venv-torch/bin/python}
PACKAGES=(lomiri-wallpapers-16.04 lomiri-wallpapers-20.04 mate-backgrounds plasma-workspace-wallpapers)
STAMP="v1 seed=$SEED train=$N_TRAIN test=$N_TEST q=90 long=400-800 aspect=0.75-1.333"

die() { echo "make_photo_jpegs: $*" >&2; exit 2; }

if [[ -f "$OUT/.made" && "$(cat "$OUT/.made")" == "$STAMP" ]]; then
  echo "make_photo_jpegs: $OUT already made ($STAMP):" \
    "$(find "$OUT/train" -name '*.jpg' | wc -l) train + $(find "$OUT/test" -name '*.jpg' | wc -l) test JPEGs," \
    "$(du -sh "$OUT" | cut -f1)"
  exit 0
fi

"$PYTHON" -c 'import PIL, numpy' 2>/dev/null || die "$PYTHON lacks pillow/numpy (PYTHON=... or scripts/setup.sh)"

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "make_photo_jpegs: apt-get install ${missing[*]}"
  apt=(apt-get); [[ $(id -u) -eq 0 ]] || apt=(sudo apt-get)
  install=("${apt[@]}" install -y --no-install-recommends "${missing[@]}")
  "${install[@]}" >/dev/null || { "${apt[@]}" update >/dev/null && "${install[@]}" >/dev/null; } ||
    die "cannot install ${missing[*]}"
fi

mkdir -p "$(dirname "$OUT")"
TMP=$(mktemp -d "$(dirname "$OUT")/.photos-tmp-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
"$PYTHON" - "$TMP" "$N_TRAIN" "$N_TEST" "$SEED" <<'PY'
import os, sys
import numpy as np
from PIL import Image

out, n_train, n_test, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
B, W = "/usr/share/backgrounds", "/usr/share/wallpapers"
SOURCES = [  # real photographs only, in a fixed order (the label is the index mod 10)
    # lomiri-wallpapers-16.04
    f"{B}/Bridge_by_Sander_Klootwijk.jpg", f"{B}/Dragonfly_by_Bolly.jpg", f"{B}/Picture_0B_by_freespace.jpg",
    f"{B}/Picture_1A_by_freespace.jpg", f"{B}/Wine_by_Jakkub_Mede.jpg", f"{B}/aitzgorri_by_Aitzol_Berasategi.jpg",
    f"{B}/analogpattern_by_Peter_Nerlich.jpg", f"{B}/free_by_Peter_Nerlich.jpg",
    f"{B}/friends_by_Aitzol_Berasategi.jpg", f"{B}/greentock_by_Peter_Nerlich.jpg",
    f"{B}/life_by_Aitzol_Berasategi.jpg", f"{B}/picosdeeuropa_by_Aitzol_Berasategi.jpg",
    f"{B}/seeding_by_Clements_Engelhardt.jpg", f"{B}/sunset_by_Aitzol_Berasategi.jpg",
    f"{B}/Kleiber_by_Lukas_Baubkus.jpg",  # lomiri-wallpapers-20.04
] + [f"{B}/mate/nature/{n}.jpg" for n in (  # mate-backgrounds
    "Aqua", "Blinds", "Dune", "FreshFlower", "Garden", "GreenMeadow", "LadyBird", "RainDrops", "Storm",
    "TwoWings", "Wood", "YellowFlower")
] + [f"{W}/{n}/contents/images/2560x1600.jpg" for n in (  # plasma-workspace-wallpapers
    "BytheWater", "ColdRipple", "ColorfulCups", "DarkestHour", "EveningGlow", "FallenLeaf", "Grey", "Kite",
    "OneStandsOut", "Path", "summer_1am")
]
missing = [s for s in SOURCES if not os.path.isfile(s)]
if missing:
    sys.exit("make_photo_jpegs: missing source photos:\n  " + "\n  ".join(missing))
NSRC = len(SOURCES)

def crop_plan(split, i, src_w, src_h):
    """(box, (w, h)) of crop i of a split: its own generator, so independent of processing order."""
    rng = np.random.default_rng([seed, split, i])
    aspect = float(np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3))))  # w / h
    long_side = int(rng.integers(400, 801))
    w, h = (long_side, round(long_side / aspect)) if aspect >= 1 else (round(long_side * aspect), long_side)
    fit = min(src_w / aspect, src_h)  # the largest window of this aspect: its height
    min_frac = min(1.0, h / fit)      # never upscale
    frac = float(rng.uniform(max(0.3, min_frac), 1.0))
    ch = fit * frac
    cw = ch * aspect
    x0 = float(rng.uniform(0, src_w - cw))
    y0 = float(rng.uniform(0, src_h - ch))
    return (x0, y0, x0 + cw, y0 + ch), (w, h)

rows = {"train": [], "test": []}
plan = []  # (source index, split, split code, item index, id)
for split, code, n, first_id in (("train", 0, n_train, 1), ("test", 1, n_test, 100001)):
    os.makedirs(os.path.join(out, split))
    for i in range(n):
        plan.append((i % NSRC, split, code, i, first_id + i))
plan.sort(key=lambda p: p[0])  # decode each photo once
cur, im = -1, None
for s, split, code, i, ident in plan:
    if s != cur:
        cur = s
        im = Image.open(SOURCES[s])
        im = im.convert("RGB")  # Grey is an L-mode JPEG: every output is 3-channel
        name = SOURCES[s].split("/")[4] if "/wallpapers/" in SOURCES[s] else os.path.basename(SOURCES[s])
        print(f"  photo {s:2d}/{NSRC}: {im.width}x{im.height} {name}", file=sys.stderr)
    box, size = crop_plan(code, i, im.width, im.height)
    crop = im.resize(size, Image.LANCZOS, box=box, reducing_gap=3.0)
    crop.save(os.path.join(out, split, f"{ident}.jpg"), "JPEG", quality=90, subsampling="4:2:0", optimize=False)
    rows[split].append((ident, s % 10))

for split in rows:
    rows[split].sort()
with open(os.path.join(out, "train.csv"), "w") as f:
    f.write("id,label\n" + "".join(f"{a},{b}\n" for a, b in rows["train"]))
with open(os.path.join(out, "test.csv"), "w") as f:
    f.write("id\n" + "".join(f"{a}\n" for a, _ in rows["test"]))
with open(os.path.join(out, "test_labels.csv"), "w") as f:
    f.write("id,label\n" + "".join(f"{a},{b}\n" for a, b in rows["test"]))
with open(os.path.join(out, "sample_submission.csv"), "w") as f:
    f.write("id,label\n" + "".join(f"{a},0\n" for a, _ in rows["test"]))

# The summary: counts per class, pixel sizes, bytes.
for split in ("train", "test"):
    d = os.path.join(out, split)
    sizes, nbytes = [], []
    for ident, _ in rows[split]:
        p = os.path.join(d, f"{ident}.jpg")
        with Image.open(p) as j:
            sizes.append(j.size)
        nbytes.append(os.path.getsize(p))
    w = np.array([s[0] for s in sizes]); h = np.array([s[1] for s in sizes]); kb = np.array(nbytes) / 1024
    longs, px = np.maximum(w, h), w * h / 1e6
    cls = np.bincount([b for _, b in rows[split]], minlength=10)
    q = lambda a: "min %s  p10 %s  median %s  p90 %s  max %s" % tuple(
        f"{v:.0f}" if a.dtype.kind == "i" else f"{v:.2f}" for v in np.percentile(a, [0, 10, 50, 90, 100]))
    print(f"{split}: {len(sizes)} JPEGs, {kb.sum() / 1024:.1f} MiB; per class {cls.tolist()}")
    print(f"  longer side px  {q(longs)}")
    print(f"  megapixels      {q(px)}")
    print(f"  KiB per file    {q(kb)}")
    print(f"  landscape {int((w > h).sum())}, portrait {int((w < h).sum())}, square {int((w == h).sum())}")
PY
echo "$STAMP" >"$TMP/.made"
rm -rf "$OUT"
mv "$TMP" "$OUT"
trap - EXIT
echo "make_photo_jpegs: $OUT: $(du -sh "$OUT" | cut -f1)"
