#!/usr/bin/env python3
"""Reads kgtrain's TensorBoard event files back with TensorBoard's own reader (EventAccumulator) and
checks them against metrics.jsonl: every number of every epoch line must be the scalar epoch/<key> at the
line's step (as float32, which is what an event stores), the per-update scalars must be there, the
hparams session must name the recipe's keys, and samples.png must be the "samples" image.

  .venv-torch/bin/python scripts/check_tensorboard.py RUN_OR_FOLD_DIR...   (needs PyPI tensorboard)

Prints one line per directory and exits 1 on the first mismatch.
"""
import json
import os
import struct
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import plugin_data_pb2


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def check(run_dir):
    lines = [json.loads(l) for l in open(os.path.join(run_dir, "metrics.jsonl"))]
    ea = EventAccumulator(run_dir, size_guidance={"scalars": 0, "images": 0, "tensors": 0})
    ea.Reload()
    tags = ea.Tags()
    scalars = {t: {e.step: e.value for e in ea.Scalars(t)} for t in tags["scalars"]}
    compared = 0
    for line in lines:
        for k, v in line.items():
            if k == "step" or not isinstance(v, (int, float)) or isinstance(v, bool):
                continue
            tag = "epoch/" + k
            got = scalars.get(tag, {}).get(line["step"])
            if got is None or got != f32(v):
                sys.exit(f"{run_dir}: {tag} at step {line['step']}: TensorBoard has {got}, metrics.jsonl {v}")
            compared += 1
    for tag in ("train/loss", "train/lr", "train/grad_norm", "train/images_per_s"):
        if tag not in scalars or not scalars[tag]:
            sys.exit(f"{run_dir}: no {tag} scalars")
    extra = sorted(t for t in scalars if t.startswith("epoch/") and not any(t[6:] in l for l in lines))
    if extra:
        sys.exit(f"{run_dir}: scalars not in metrics.jsonl: {extra}")
    try:
        content = ea.PluginTagToContent("hparams")
    except KeyError:
        sys.exit(f"{run_dir}: no hparams session")
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    hparams = dict(start.session_start_info.hparams)
    if not hparams:
        sys.exit(f"{run_dir}: the hparams session has no hyperparameters")
    ended = "_hparams_/session_end_info" in content
    images = 0
    if os.path.exists(os.path.join(run_dir, "samples.png")):
        png = open(os.path.join(run_dir, "samples.png"), "rb").read()
        imgs = ea.Images("samples") if "samples" in tags["images"] else []
        if not imgs or imgs[-1].encoded_image_string != png:
            sys.exit(f"{run_dir}: the samples image is not samples.png")
        images = len(imgs)
    print(f"{run_dir}: {len(lines)} epochs, {compared} epoch scalars equal to metrics.jsonl; per-update "
          f"scalars: " + ", ".join(f"{t} x{len(scalars[t])}" for t in sorted(scalars) if t.startswith("train/"))
          + f"; hparams: {len(hparams)} keys ({', '.join(sorted(hparams)[:4])}, ...), session "
          + ("ended" if ended else "open") + f"; images: {images}")


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for d in sys.argv[1:]:
        check(d)


if __name__ == "__main__":
    main()
