"""Golden eval-mode outputs of ConvNeXt-T for tests/model/test_convnext.cpp.

timm is not installed, so the reference is torchvision's convnext_tiny (the same network), with its
names mapped to timm's (kgtrain's) and every tensor filled from det_weights.py by its timm name and
timm shape. torchvision's layer_scale is [C, 1, 1] where timm's gamma is [C]: the values come from
the [C] tensor and are reshaped. The forward pass runs in float64 on det_input([2, 3, 64, 64]).

Scrambled order: det_tensor's matrices are rank 2 (sin(0.7 k + p) over a row-major [out, in] matrix
is sin(a_out + 0.7 in)), which collapses a deep network's output to nearly a constant: the two
images' logits differ by 6e-6 and a 1% change of a stage-1 weight moves them by 1e-5. So each
tensor takes det_tensor's values at flat index (k * 7919) % numel (scrambled(), mirrored in the
C++ test); then the images differ by 0.06, and tanh GELU or a 1% change of that weight moves the
logits by more than 1e-4 (fp32 against this float64 reference: 2e-6).

  /usr/bin/python3 scripts/golden/gen_convnext.py   # writes tests/golden/convnext_tiny_forward.json
"""
import json
import os
import re
import sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from det_weights import det_input, det_tensor  # noqa: E402

NUM_CLASSES = 10
INPUT_SHAPE = [2, 3, 64, 64]
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden", "convnext_tiny_forward.json")

SCRAMBLE = 7919  # a prime that divides no tensor's numel, so k -> k * 7919 % n is a permutation

BLOCK_PARTS = {"block.0": "conv_dw", "block.2": "norm", "block.3": "mlp.fc1", "block.5": "mlp.fc2", "layer_scale": "gamma"}


def timm_name(tv):
    """torchvision convnext state_dict name -> timm name."""
    m = re.fullmatch(r"features\.0\.([01])\.(\w+)", tv)
    if m:
        return f"stem.{m[1]}.{m[2]}"
    m = re.fullmatch(r"features\.([1357])\.(\d+)\.(block\.\d|layer_scale)(\.\w+)?", tv)
    if m:
        return f"stages.{(int(m[1]) - 1) // 2}.blocks.{m[2]}.{BLOCK_PARTS[m[3]]}{m[4] or ''}"
    m = re.fullmatch(r"features\.([246])\.([01])\.(\w+)", tv)
    if m:
        return f"stages.{int(m[1]) // 2}.downsample.{m[2]}.{m[3]}"
    m = re.fullmatch(r"classifier\.([02])\.(\w+)", tv)
    if m:
        return f"head.{'norm' if m[1] == '0' else 'fc'}.{m[2]}"
    raise KeyError(tv)


def scrambled(name, shape):
    v = det_tensor(name, shape).flatten()
    n = v.numel()
    return v[(torch.arange(n, dtype=torch.int64) * SCRAMBLE) % n].reshape(shape)


def main():
    model = torchvision.models.convnext_tiny(num_classes=NUM_CLASSES).eval()
    shapes = {}
    with torch.no_grad():
        for name, t in model.state_dict().items():
            tn = timm_name(name)
            shape = [t.shape[0]] if tn.endswith(".gamma") else list(t.shape)  # timm's gamma is [C]
            shapes[tn] = shape
            assert t.numel() % SCRAMBLE != 0
            t.copy_(scrambled(tn, shape).reshape(t.shape))
        assert len(shapes) == len(model.state_dict()), "two torchvision names map to one timm name"
        x = det_input(INPUT_SHAPE)
        model.double()
        features64 = model.features(x.double()).mean((2, 3))  # kgtrain's forward_features, avg-pooled
        logits64 = model(x.double())
        logits32 = model.float()(x)
    names = sorted(shapes)
    doc = {
        "generator": "scripts/golden/gen_convnext.py",
        "reference": f"torchvision {torchvision.__version__} convnext_tiny, names mapped to timm's",
        "torch": torch.__version__,
        "model": "convnext_tiny",
        "in_chans": INPUT_SHAPE[1],
        "num_outputs": NUM_CLASSES,
        "num_params": sum(p.numel() for p in model.parameters()),
        "input": "det_input",
        "input_shape": INPUT_SHAPE,
        "logits_shape": list(logits64.shape),
        "logits": logits64.flatten().tolist(),
        "pooled_features_shape": list(features64.shape),
        "pooled_features": [float(f"{v:.9g}") for v in features64.flatten().tolist()],
        "python_fp32_max_abs_diff": (logits32.double() - logits64).abs().max().item(),
        "shapes": {n: shapes[n] for n in names},
    }
    with open(OUT, "w") as f:
        json.dump(doc, f)
        f.write("\n")
    print(f"wrote {os.path.normpath(OUT)}: {len(names)} tensors, {doc['num_params']} parameters, "
          f"python fp32 vs fp64 max abs diff {doc['python_fp32_max_abs_diff']:.3g}")


if __name__ == "__main__":
    main()
