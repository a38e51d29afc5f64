#!/usr/bin/python3
"""Weights trained by kgtrain load into Python's torchvision models and predict the same probabilities.

  kgtrain fit recipes/fashion_mnist.toml model=resnet18 --smoke --run-dir /tmp/r18
  kgtrain tta-predict recipes/fashion_mnist.toml model=resnet18 --weights /tmp/r18/checkpoints/last/model.safetensors \
      --smoke --probs /tmp/r18/probs.csv --run-dir /tmp/r18/pred
  /usr/bin/python3 scripts/check_python_roundtrip.py /tmp/r18/checkpoints/last/model.safetensors /tmp/r18/probs.csv \
      data/fashion_mnist/test --arch resnet18 --small-input --in-chans 1 --mean 0.2860 --std 0.3530

Reads safetensors with numpy (Debian 12 has no python3-safetensors), loads them with load_state_dict(strict=True)
into torchvision's model (the small-input stem swapped in when asked), and prints the largest probability
difference against kgtrain's --probs CSV. Exit 1 when it exceeds --tol.
"""
import argparse, csv, json, os, struct, sys

import numpy as np
import torch
import torchvision
from PIL import Image

DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32, "U8": np.uint8}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, v in header.items():
        if name == "__metadata__":
            continue
        b, e = v["data_offsets"]
        arr = np.frombuffer(data[8 + n + b:8 + n + e], dtype=DTYPES[v["dtype"]]).reshape(v["shape"])
        out[name] = torch.from_numpy(arr.copy())
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("weights")
    ap.add_argument("probs")
    ap.add_argument("images")
    ap.add_argument("--arch", default="resnet18")
    ap.add_argument("--small-input", action="store_true")
    ap.add_argument("--in-chans", type=int, default=3)
    ap.add_argument("--mean", type=float, nargs="+", default=[0.485, 0.456, 0.406])
    ap.add_argument("--std", type=float, nargs="+", default=[0.229, 0.224, 0.225])
    ap.add_argument("--ext", default=".png")
    ap.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args()

    with open(a.probs) as f:
        rows = list(csv.reader(f))
    header, rows = rows[0], rows[1:]
    n_classes = len(header) - 1
    m = getattr(torchvision.models, a.arch)(num_classes=n_classes)
    if a.small_input:
        m.conv1 = torch.nn.Conv2d(a.in_chans, 64, 3, 1, 1, bias=False)
        m.maxpool = torch.nn.Identity()
    elif a.in_chans != 3:
        m.conv1 = torch.nn.Conv2d(a.in_chans, 64, 7, 2, 3, bias=False)
    m.load_state_dict(read_safetensors(a.weights), strict=True)
    m.eval()
    mean = torch.tensor(a.mean).view(-1, 1, 1)
    std = torch.tensor(a.std).view(-1, 1, 1)
    xs = []
    for r in rows:
        img = Image.open(os.path.join(a.images, r[0] + a.ext)).convert("L" if a.in_chans == 1 else "RGB")
        x = torch.from_numpy(np.asarray(img, dtype=np.float32) / 255.0)
        x = x.unsqueeze(0) if x.dim() == 2 else x.permute(2, 0, 1)
        xs.append((x - mean) / std)
    with torch.no_grad():
        p = torch.softmax(m(torch.stack(xs)), 1)
    want = torch.tensor([[float(v) for v in r[1:]] for r in rows])
    diff = (p - want).abs().max().item()
    agree = (p.argmax(1) == want.argmax(1)).float().mean().item()
    print(f"{len(rows)} images, {n_classes} classes: max |p_python - p_kgtrain| = {diff:.3g}, argmax agreement {agree:.4f}")
    sys.exit(0 if diff <= a.tol else 1)


if __name__ == "__main__":
    main()
