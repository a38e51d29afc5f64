#!/usr/bin/env bash
# Reproducible input-pipeline benchmark, run by hand (not in CI): does data loading starve the model?
#   (a) makes N typical Kaggle JPEGs (500x375, varied content) in a folder-per-class layout;
#   (b) `kgtrain bench-data` on them with random_resized_crop 224 + hflip + normalize (imagenet);
#   (c) `kgtrain pack`s them and times the first epoch from a cold page cache: loose files vs pack;
#   (d) the Fashion-MNIST default recipe's loader, when scripts/prepare_fashion_mnist.sh has run.
# Prints a table at the end; each step's JSON report stays in DIR. About 1-3 minutes on 2 cores.
#   bash scripts/bench_data.sh [DIR (default: a new temp folder)] [N_IMAGES=300]
# Environment: KGTRAIN (default build/kgtrain), WORKERS (default nproc), BATCHES (default 10),
#   FASHION_MNIST_DATA (paths.data holding fashion_mnist/, default data), GEN=cv2|imagemagick (default: first found).
set -euo pipefail
cd "$(dirname "$0")/.."
KGTRAIN=${KGTRAIN:-build/kgtrain}
KGTRAIN=$(realpath "$KGTRAIN")
DIR=${1:-$(mktemp -d "${TMPDIR:-/tmp}/kgtrain-bench-data-XXXXXX")}
N=${2:-300}
WORKERS=${WORKERS:-$(nproc)}
BATCHES=${BATCHES:-10}
FM_DATA=${FASHION_MNIST_DATA:-data}
CLASSES=5
[ -x "$KGTRAIN" ] || { echo "bench_data: $KGTRAIN not built (cmake --build build)" >&2; exit 2; }
mkdir -p "$DIR"
DIR=$(realpath "$DIR")
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)  # other work on the machine skews every figure: it is printed with them
say() { echo "== $*" >&2; }
# jget FILE EXPR: a value from a JSON report (python3's standard library only).
jget() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"j": j}))' "$1" "$2"; }

# --- (a) the images ---------------------------------------------------------------------------------
# Debian's python3-opencv lives under /usr/bin/python3, which a pyenv or venv python3 on PATH hides.
CV2_PY=""
for py in python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null && "$py" -c 'import cv2, numpy' 2>/dev/null; then CV2_PY=$py; break; fi
done
have_cv2() { [ -n "$CV2_PY" ]; }
have_magick() { command -v convert >/dev/null && convert -version 2>/dev/null | grep -q ImageMagick; }
GEN=${GEN:-$(if have_cv2; then echo cv2; elif have_magick; then echo imagemagick; else echo none; fi)}
count=$( (find "$DIR/train" -name '*.jpg' 2>/dev/null || true) | wc -l)
if [ "$count" -ge "$N" ]; then
  say "(a) $DIR/train already holds $count JPEGs"
else
  rm -rf "$DIR/train" "$DIR/train.kgpack"
  say "(a) generating $N JPEGs of 500x375 in $CLASSES classes with $GEN into $DIR/train"
  case "$GEN" in
    cv2)
      "$CV2_PY" - "$DIR/train" "$N" "$CLASSES" <<'PY'
import os, sys
import cv2, numpy as np
out, n, classes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
for i in range(n):
    d = os.path.join(out, "class_%d" % (i % classes))
    os.makedirs(d, exist_ok=True)
    # Photo-like content: smooth colour fields at two scales, a few shapes, sensor noise, a little blur.
    img = cv2.resize(rng.uniform(0, 255, (4, 5, 3)).astype(np.float32), (500, 375), interpolation=cv2.INTER_CUBIC)
    img += cv2.resize(rng.normal(0, 40, (24, 32, 3)).astype(np.float32), (500, 375), interpolation=cv2.INTER_CUBIC)
    for _ in range(rng.integers(3, 9)):
        c = tuple(float(v) for v in rng.uniform(0, 255, 3))
        x, y = int(rng.integers(0, 500)), int(rng.integers(0, 375))
        if rng.random() < 0.5:
            cv2.ellipse(img, (x, y), (int(rng.integers(10, 120)), int(rng.integers(10, 120))), float(rng.uniform(0, 180)), 0, 360, c, -1)
        else:
            cv2.rectangle(img, (x, y), (x + int(rng.integers(10, 150)), y + int(rng.integers(10, 150))), c, -1)
    img = cv2.GaussianBlur(img, (3, 3), 0) + rng.normal(0, 6, img.shape).astype(np.float32)
    cv2.imwrite(os.path.join(d, "img_%05d.jpg" % i), np.clip(img, 0, 255).astype(np.uint8), [cv2.IMWRITE_JPEG_QUALITY, 90])
PY
      ;;
    imagemagick)
      colors=(red blue green yellow orange purple gray white black brown navy olive)
      # shellcheck disable=SC2016  # the inner sh expands its own arguments
      for i in $(seq 0 $((N - 1))); do
        c1=${colors[$((i * 7 % 12))]} c2=${colors[$(((i * 5 + 3) % 12))]} c3=${colors[$((i % 12))]}
        x=$((i * 37 % 500)) y=$((i * 53 % 375)) r=$((20 + i * 13 % 100))
        echo "$DIR/train/class_$((i % CLASSES)) img_$(printf %05d "$i").jpg $i $c1 $c2 $c3 $x $y $r"
      done | xargs -P "$(nproc)" -L 1 sh -c 'mkdir -p "$0" && convert -size 500x375 -seed "$2" plasma:"$3"-"$4" \
          -fill "$5" -draw "circle $6,$7 $(($6 + $8)),$7" -attenuate 0.3 +noise Gaussian -quality 90 "$0/$1"'
      ;;
    *)
      echo "bench_data: no JPEG generator: install one with  apt-get install -y python3-opencv  (or imagemagick)" >&2
      exit 2
      ;;
  esac
fi
bytes=$(du -sk "$DIR/train" | cut -f1)

RECIPE="$DIR/bench_jpeg.toml"
cat >"$RECIPE" <<EOF
# scripts/bench_data.sh: 500x375 JPEGs, a typical ImageNet-style training augmentation.
[data]
root = "$DIR"
format = "folder"
image_dir = "train"
channels = 3
image_size = 224
num_workers = $WORKERS
augment = [
  { name = "random_resized_crop" },
  { name = "hflip" },
  { name = "normalize", preset = "imagenet" },
]
[cv]
folds = 5
[train]
batch_size = 48
EOF

# --- (b) decode, decode + augmentation, loader ---------------------------------------------------------
say "(b) kgtrain bench-data on the JPEGs ($WORKERS workers, $BATCHES batches)"
"$KGTRAIN" bench-data "$RECIPE" --batches "$BATCHES" --json "$DIR/bench_jpeg.json" --quiet

# --- (c) first epoch from a cold page cache: loose files vs pack ----------------------------------------
say "(c) kgtrain pack, then the first epoch from a cold cache: loose files vs pack"
[ -f "$DIR/train.kgpack" ] || "$KGTRAIN" pack "$RECIPE" --quiet
cold() {
  sync
  if [ -w /proc/sys/vm/drop_caches ] && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then echo "cold (drop_caches)"
  elif command -v vmtouch >/dev/null; then vmtouch -qe "$DIR/train" "$DIR/train.kgpack"; echo "cold (vmtouch -e)"
  else echo "warm cache only"
  fi
}
case "$(stat -f -c %T "$DIR")" in tmpfs|ramfs) echo "bench_data: $DIR is in memory ($(stat -f -c %T "$DIR")): caches cannot be dropped there; give a DIR on disk" >&2 ;; esac
epoch() {  # epoch NAME [OVERRIDE...]: one whole epoch, loader only, the recipe's workers
  local name=$1; shift
  "$KGTRAIN" bench-data "$RECIPE" "$@" --sections loader --batches all --repeats 1 --threads "$WORKERS" \
    --json "$DIR/epoch_$name.json" --quiet >/dev/null
  jget "$DIR/epoch_$name.json" 'round(j["loader"]["runs"][0]["seconds"], 3)'
}
cache_loose=$(cold); loose_cold=$(epoch loose_cold); loose_warm=$(epoch loose_warm)
cache_pack=$(cold); pack_cold=$(epoch pack_cold data.format=pack); pack_warm=$(epoch pack_warm data.format=pack)
epoch_images=$(jget "$DIR/epoch_loose_cold.json" 'j["loader"]["runs"][0]["images"]')
pack_mib=$(( $(stat -c %s "$DIR/train.kgpack") / 1048576 ))

# --- (d) Fashion-MNIST, the default recipe ------------------------------------------------------------
fm="skipped: no $FM_DATA/fashion_mnist/train.csv (bash scripts/prepare_fashion_mnist.sh)"
if [ -f "$FM_DATA/fashion_mnist/train.csv" ]; then
  say "(d) Fashion-MNIST default recipe, loader with the recipe's workers"
  "$KGTRAIN" bench-data recipes/fashion_mnist.toml "paths.data=$(realpath "$FM_DATA")" --sections loader --batches "$BATCHES" \
    --json "$DIR/bench_fashion_mnist.json" --quiet
  fm=$(jget "$DIR/bench_fashion_mnist.json" \
    '"%.0f img/s with %d workers (batch %d, %dx%d PNG)" % (j["verdict"]["loader_images_per_s"], j["verdict"]["loader_workers"], j["batch_size"], j["input"]["height"], j["input"]["width"])')
else
  say "(d) Fashion-MNIST: $fm"
fi

# --- the table ----------------------------------------------------------------------------------------
J="$DIR/bench_jpeg.json"
r() { jget "$J" "$1"; }
cat <<EOF

kgtrain bench-data summary: $(nproc) cores (load average before: $LOAD0), $N JPEGs 500x375 ($((bytes / 1024)) MiB, $GEN), RRC 224 + hflip + normalize, in $DIR
  decode                   1 thread  $(r '"%8.1f" % j["decode"]["one_thread"]["images_per_s"]') img/s    $(r 'j["decode"]["all_workers"]["threads"]') threads $(r '"%8.1f" % j["decode"]["all_workers"]["images_per_s"]') img/s ($(r '"%.1f" % j["decode"]["all_workers"]["images_per_s_per_thread"]') per thread)
  decode + augment         1 thread  $(r '"%8.1f" % j["decode_augment"]["one_thread"]["images_per_s"]') img/s    $(r 'j["decode_augment"]["all_workers"]["threads"]') threads $(r '"%8.1f" % j["decode_augment"]["all_workers"]["images_per_s"]') img/s ($(r '"%.1f" % j["decode_augment"]["all_workers"]["images_per_s_per_thread"]') per thread)
  loader (batch $(r 'j["batch_size"]'))        $(r '"   ".join("%d workers %.1f img/s" % (x["workers"], x["images_per_s"]) for x in j["loader"]["runs"])')
  first epoch ($epoch_images images, $WORKERS workers)   loose files: $loose_cold s $cache_loose, $loose_warm s warm
                                        pack ($pack_mib MiB):  $pack_cold s $cache_pack, $pack_warm s warm
  Fashion-MNIST loader     $fm
EOF
