#!/usr/bin/python3
"""Golden values for kgtrain's test-time augmentation (lib/tta/): views and merges.

Views (torch 1.13 / torchvision 0.14 as the reference):
  crops       torchvision.transforms.functional.five_crop / ten_crop (vertical_flip=False) on a fixed
              [1, 1, H, W] input x[k] = sin(0.37 k); with resize, each crop goes back to H x W through
              torchvision's resize(..., interpolation=BILINEAR, antialias=False).
  multi_scale torch.nn.functional.interpolate(mode="bilinear", align_corners=False).
  d4          torch.rot90(x, k, dims=[2, 3]) of x (k = 0..3), then of torch.flip(x, [3]): the expected
              order of kgtrain's d4 views.
Merges (numpy in float64, written from the formulas, not from torch):
  mean       mean_i w_i act(o_i)
  geometric  multiclass softmax(sum_i w_i log_softmax(o_i)); sigmoid tasks prod p^w / (prod p^w + prod (1-p)^w)
  logits     act(sum_i w_i o_i)
  merge_probs on the activated outputs: mean, and geometric/logits as the normalized geometric mean.
  /usr/bin/python3 scripts/golden/gen_tta.py      -> tests/golden/tta.json
"""
import json, math, os

import numpy as np
import torch
import torch.nn.functional as F
import torchvision.transforms.functional as TF
from torchvision.transforms import InterpolationMode

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden", "tta.json")


def sin_input(h, w):
    k = torch.arange(h * w, dtype=torch.float64)
    return torch.sin(0.37 * k).reshape(1, 1, h, w).float()


def crops_case(view, h, w, size, resize):
    x = sin_input(h, w)
    crops = TF.ten_crop(x, size, vertical_flip=False) if view == "ten_crop" else TF.five_crop(x, size)
    if resize:
        crops = [TF.resize(c, [h, w], interpolation=InterpolationMode.BILINEAR, antialias=False) for c in crops]
    return {"view": view, "height": h, "width": w, "size": size, "resize": resize,
            "crops": [c.flatten().tolist() for c in crops], "crop_shapes": [list(c.shape) for c in crops]}


def scale_case(h, w, sizes):
    x = sin_input(h, w)
    outs = []
    for s in sizes:
        hw = [s, s] if isinstance(s, int) else s
        outs.append(F.interpolate(x, size=hw, mode="bilinear", align_corners=False).flatten().tolist())
    return {"height": h, "width": w, "sizes": sizes, "outputs": outs}


def d4_case(n):
    x = sin_input(n, n)
    views = [torch.rot90(x, k, dims=[2, 3]) for k in range(4)]
    views += [torch.rot90(torch.flip(x, [3]), k, dims=[2, 3]) for k in range(4)]
    return {"size": n, "views": [v.flatten().tolist() for v in views]}


# ---- merges, numpy float64 -------------------------------------------------------------------------------
def softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def act(z, task):
    return softmax(z) if task == "multiclass" else (z if task == "regression" else sigmoid(z))


def merge_np(outs, how, task, w):
    if how == "mean":
        return sum(wi * act(o, task) for wi, o in zip(w, outs))
    if how == "logits":
        return act(sum(wi * o for wi, o in zip(w, outs)), task)
    # geometric, from probabilities: normalized weighted geometric mean
    ps = [act(o, task) for o in outs]
    if task == "multiclass":
        g = np.prod([p ** wi for wi, p in zip(w, ps)], axis=0)
        return g / g.sum(axis=-1, keepdims=True)
    pg = np.prod([p ** wi for wi, p in zip(w, ps)], axis=0)
    qg = np.prod([(1 - p) ** wi for wi, p in zip(w, ps)], axis=0)
    return pg / (pg + qg)


def merge_probs_np(ps, how, task, w):
    if how == "mean" or task == "regression":
        return sum(wi * p for wi, p in zip(w, ps))
    if task == "multiclass":
        g = np.prod([p ** wi for wi, p in zip(w, ps)], axis=0)
        return g / g.sum(axis=-1, keepdims=True)
    pg = np.prod([p ** wi for wi, p in zip(w, ps)], axis=0)
    qg = np.prod([(1 - p) ** wi for wi, p in zip(w, ps)], axis=0)
    return pg / (pg + qg)


OUTPUTS = {
    "multiclass": [[[2.0, -1.0, 0.5], [0.1, 0.2, -3.0]],
                   [[1.0, 0.0, 1.5], [-2.0, 1.2, 0.4]],
                   [[3.0, -2.0, -0.5], [0.7, 0.3, 0.3]]],
    "binary": [[[1.5], [-0.7]], [[-0.2], [0.9]], [[2.4], [-1.8]]],
    "multilabel": [[[1.0, -2.0], [0.3, 4.0]], [[-0.5, -1.0], [2.0, 1.0]], [[3.0, 0.5], [-1.0, 2.5]]],
    "regression": [[[1.5, -2.0], [0.25, 3.0]], [[2.5, -1.0], [0.75, 1.0]], [[0.5, 0.0], [2.0, 2.0]]],
}
WEIGHTS = [[], [0.5, 0.25, 0.25], [2.0, 0.0, 1.0]]


def merge_cases():
    cases = []
    for task, outs in OUTPUTS.items():
        outs = [np.array(o, dtype=np.float64) for o in outs]
        for how in ["mean", "geometric", "logits"]:
            if task == "regression" and how == "geometric":
                continue
            for w in WEIGHTS:
                wn = [1.0 / len(outs)] * len(outs) if not w else [x / sum(w) for x in w]
                probs = [act(o, task) for o in outs]
                cases.append({"task": task, "how": how, "weights": w, "outputs": [o.tolist() for o in outs],
                              "merged": merge_np(outs, how, task, wn).tolist(),
                              "probs": [p.tolist() for p in probs],
                              "merged_probs": merge_probs_np(probs, how, task, wn).tolist()})
    return cases


def main():
    golden = {
        "generator": "scripts/golden/gen_tta.py",
        "torch": torch.__version__,
        "crops": [crops_case("five_crop", 8, 8, 5, True), crops_case("five_crop", 8, 8, 5, False),
                  crops_case("ten_crop", 8, 8, 5, True), crops_case("ten_crop", 8, 8, 5, False),
                  # (9 - 4) / 2 = 2.5: torchvision's center_crop rounds half to even (top = left = 2)
                  crops_case("five_crop", 9, 9, 4, False),
                  crops_case("ten_crop", 6, 9, [3, 4], True)],
        "multi_scale": [scale_case(8, 8, [5, 12, [6, 11]])],
        "d4": d4_case(3),
        "merge": merge_cases(),
    }
    # One line per case: readable diffs, small file.
    compact = lambda v: json.dumps(v, separators=(",", ":"))
    lines = []
    for key, value in golden.items():
        if isinstance(value, list):
            lines.append(json.dumps(key) + ":[\n" + ",\n".join(compact(c) for c in value) + "\n]")
        else:
            lines.append(json.dumps(key) + ":" + compact(value))
    with open(OUT, "w") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")
    print("wrote", os.path.normpath(OUT))


if __name__ == "__main__":
    main()
