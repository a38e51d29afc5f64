"""Golden eval-mode logits for kgtrain's efficientnet_b0 / efficientnet_b2 (tests/model/test_efficientnet.cpp).

torchvision's efficientnet_b* is the same network as timm's efficientnet_b* (BatchNorm eps 1e-5,
symmetric padding, SE from the block input width) under other names; its state_dict names are mapped
to timm's, which kgtrain uses, and every tensor is filled by det_weights.det_fill from its timm name.
Three logit sets on det_input([2, 3, 64, 64]): eval mode as filled; train mode (batch statistics, with
BatchNorm momentum 1, no stochastic depth or dropout); eval mode again with the running statistics
that train-mode pass left (the batch's). Computed in float64 (the float32 weights and input promoted), so the
fixture does not depend on a BLAS's or oneDNN's summation order; the test runs kgtrain's network in float64 too.
  python3 scripts/golden/gen_efficientnet.py   (torch, torchvision; no timm needed)
"""
import json
import os
import re
import sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from det_weights import det_fill, det_input, three_logits  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
NUM_CLASSES = 10
INPUT_SHAPE = [2, 3, 64, 64]

# torchvision MBConv children -> timm names. Blocks without expansion (stage 0, timm's
# DepthwiseSeparableConv) have [dw, se, project]; the others have [expand, dw, se, project].
DS_NAMES = {"0.0": "conv_dw", "0.1": "bn1", "1.fc1": "se.conv_reduce", "1.fc2": "se.conv_expand",
            "2.0": "conv_pw", "2.1": "bn2"}
IR_NAMES = {"0.0": "conv_pw", "0.1": "bn1", "1.0": "conv_dw", "1.1": "bn2", "2.fc1": "se.conv_reduce",
            "2.fc2": "se.conv_expand", "3.0": "conv_pwl", "3.1": "bn3"}


def tv_to_timm_fn(model):
    last = len(model.features) - 1  # features.8: conv_head + bn2

    def rename(name):
        m = re.fullmatch(r"features\.0\.([01])\.(\w+)", name)
        if m:
            return ("conv_stem" if m.group(1) == "0" else "bn1") + "." + m.group(2)
        m = re.fullmatch(r"features\.%d\.([01])\.(\w+)" % last, name)
        if m:
            return ("conv_head" if m.group(1) == "0" else "bn2") + "." + m.group(2)
        m = re.fullmatch(r"classifier\.1\.(\w+)", name)
        if m:
            return "classifier." + m.group(1)
        m = re.fullmatch(r"features\.(\d+)\.(\d+)\.block\.(\d+\.(?:\d+|fc1|fc2))\.(\w+)", name)
        assert m, "unmapped torchvision name " + name
        stage, index, child, leaf = int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)
        table = IR_NAMES if len(model.features[stage][index].block) == 4 else DS_NAMES
        return "blocks.%d.%d.%s.%s" % (stage - 1, index, table[child], leaf)

    return rename


def generate(arch):
    # No stochastic depth or dropout, so the train-mode pass below is deterministic.
    model = getattr(torchvision.models, arch)(num_classes=NUM_CLASSES, stochastic_depth_prob=0.0)
    model.classifier[0].p = 0.0
    bns = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    assert all(m.eps == 1e-5 and m.momentum == 0.1 for m in bns), "expected PyTorch's BatchNorm defaults"
    rename = tv_to_timm_fn(model)
    tv_names = list(model.state_dict().keys())
    timm_names = [rename(n) for n in tv_names]
    assert len(set(timm_names)) == len(tv_names), "the name mapping is not one-to-one"
    det_fill(model, rename=rename)
    model.double()
    x = det_input(INPUT_SHAPE).double()
    eval_logits, train_logits, calibrated_logits = three_logits(model, bns, x)

    def flat(t):
        return [float(v) for v in t.flatten()]

    out = {
        "generator": "scripts/golden/gen_efficientnet.py",
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "model": arch,
        "dtype": "float64",
        "in_chans": INPUT_SHAPE[1],
        "num_outputs": NUM_CLASSES,
        "num_params": sum(p.numel() for p in model.parameters()),
        "input_shape": INPUT_SHAPE,
        "logits_shape": list(eval_logits.shape),
        "eval_logits": flat(eval_logits),
        "train_logits": flat(train_logits),
        "calibrated_eval_logits": flat(calibrated_logits),
        "names": sorted(timm_names),
    }
    path = os.path.join(ROOT, "tests", "golden", arch + "_forward.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=0)
        f.write("\n")
    print(path, os.path.getsize(path), "bytes; calibrated logits range", float(calibrated_logits.min()),
          float(calibrated_logits.max()))

if __name__ == "__main__":
    for arch in ("efficientnet_b0", "efficientnet_b2"):
        generate(arch)
