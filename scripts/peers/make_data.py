#!/usr/bin/env python3
"""Data for scripts/bench_peers.sh: the same image files for every contender, in the layout each one reads.

  make_data.py rgb SRC DST [--train N] [--test M]
      Derives the RGB 3x128 set from Fashion-MNIST (Kaggle layout SRC/train.csv, SRC/train/<id>.png,
      SRC/test_labels.csv, SRC/test/<id>.png): the first N training and M test images, each upscaled 28 -> 128
      (bicubic) and colourised (a random foreground and background colour per image, drawn from its id, so colour
      says nothing of the class) plus mild noise, written as JPEG (quality 90) in the same Kaggle layout under DST
      (train.csv id,label; train/<id>.jpg; test_labels.csv; test.csv; test/<id>.jpg). Skipped when DST is complete.

  make_data.py view ROOT DST --ext .png [--train N] [--test M]
      One benchmark's view of ROOT's first N training and M test rows (0 = all):
        DST/kg.csv                           kgtrain's table: id,label,path,fold with path relative to ROOT
                                             (train/<id>EXT fold 1, test/<id>EXT fold 0: cv.strategy = "column"
                                             then trains on exactly the training rows and validates on the test rows)
        DST/if/train/<label>/<id>EXT         ImageFolder for timm's train.py and fastai's GrandparentSplitter:
        DST/if/validation/<label>/<id>EXT    symbolic links to the very files kgtrain reads
        DST/test_labels.csv                  the test rows (id,label) for kgtrain tta-predict
      Skipped when DST/done names the same request.
"""
import argparse
import csv
import json
import os
import sys

import numpy as np
from PIL import Image


def read_rows(path, limit):
    with open(path, newline="") as f:
        rows = [(r["id"], r["label"]) for r in csv.DictReader(f)]
    return rows[:limit] if limit else rows


def colourise(gray28, seed):
    rng = np.random.default_rng(seed)
    g = np.asarray(Image.fromarray(gray28).resize((128, 128), Image.BICUBIC), dtype=np.float32) / 255.0
    fg = rng.uniform(0.45, 1.0, 3)
    bg = rng.uniform(0.0, 0.35, 3)
    img = bg[None, None, :] * (1 - g[..., None]) + fg[None, None, :] * g[..., None]
    img += rng.normal(0, 0.02, img.shape)
    return Image.fromarray((np.clip(img, 0, 1) * 255 + 0.5).astype(np.uint8), "RGB")


def make_rgb(a):
    marker = os.path.join(a.dst, "done")
    want = json.dumps({"train": a.train, "test": a.test, "version": 1})
    if os.path.exists(marker) and open(marker).read() == want:
        print(f"rgb: {a.dst} is up to date")
        return
    for split, table, limit in (("train", "train.csv", a.train), ("test", "test_labels.csv", a.test)):
        rows = read_rows(os.path.join(a.src, table), limit)
        os.makedirs(os.path.join(a.dst, split), exist_ok=True)
        for i, (id_, label) in enumerate(rows):
            gray = np.asarray(Image.open(os.path.join(a.src, split, f"{id_}.png")).convert("L"))
            colourise(gray, int(id_)).save(os.path.join(a.dst, split, f"{id_}.jpg"), quality=90)
        with open(os.path.join(a.dst, table), "w") as f:
            f.write("id,label\n" + "".join(f"{i},{l}\n" for i, l in rows))
        if split == "test":
            with open(os.path.join(a.dst, "test.csv"), "w") as f:
                f.write("id\n" + "".join(f"{i}\n" for i, _ in rows))
        print(f"rgb: {len(rows)} {split} images -> {a.dst}/{split}/")
    open(marker, "w").write(want)


def make_view(a):
    root = os.path.abspath(a.root)
    marker = os.path.join(a.dst, "done")
    want = json.dumps({"root": root, "train": a.train, "test": a.test, "ext": a.ext, "version": 2})
    if os.path.exists(marker) and open(marker).read() == want:
        return
    if os.path.exists(a.dst):
        import shutil
        shutil.rmtree(a.dst)
    tr = read_rows(os.path.join(root, "train.csv"), a.train)
    te = read_rows(os.path.join(root, "test_labels.csv"), a.test)
    os.makedirs(a.dst)
    with open(os.path.join(a.dst, "kg.csv"), "w") as f:
        f.write("id,label,path,fold\n")
        f.write("".join(f"{i},{l},train/{i}{a.ext},1\n" for i, l in tr))
        f.write("".join(f"{i},{l},test/{i}{a.ext},0\n" for i, l in te))
    with open(os.path.join(a.dst, "test_labels.csv"), "w") as f:
        f.write("id,label\n" + "".join(f"{i},{l}\n" for i, l in te))
    for split, src, rows in (("train", "train", tr), ("validation", "test", te)):
        for label in sorted({l for _, l in rows}):
            os.makedirs(os.path.join(a.dst, "if", split, label))
        for i, l in rows:
            os.symlink(os.path.join(root, src, f"{i}{a.ext}"), os.path.join(a.dst, "if", split, l, f"{i}{a.ext}"))
    open(marker, "w").write(want)
    print(f"view: {len(tr)} train + {len(te)} test rows of {root} -> {a.dst}")


p = argparse.ArgumentParser()
sub = p.add_subparsers(dest="cmd", required=True)
r = sub.add_parser("rgb")
r.add_argument("src")
r.add_argument("dst")
r.add_argument("--train", type=int, default=3072)
r.add_argument("--test", type=int, default=1024)
v = sub.add_parser("view")
v.add_argument("root")
v.add_argument("dst")
v.add_argument("--ext", default=".png")
v.add_argument("--train", type=int, default=0)
v.add_argument("--test", type=int, default=0)
a = p.parse_args()
if a.cmd == "rgb":
    make_rgb(a)
else:
    make_view(a)
sys.exit(0)
