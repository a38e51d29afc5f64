#!/usr/bin/python3
"""ResNet parity fixtures: torchvision's resnet18/34/50 (10 classes, 3 channels) filled with the
name-derived weights of det_weights.py, eval-mode and train-mode logits for det_input([2, 3, 64, 64]).
kgtrain's tests fill their native ResNets by the same names and must reproduce the logits. Computed in float64
(the float32 weights and input promoted): the train-mode logits are ill-conditioned, and in float32 their last
digits depend on the BLAS's and oneDNN's summation order; the test runs kgtrain's network in float64 too.
  python3 scripts/golden/gen_resnet.py      -> tests/golden/resnet{18,34,50}_forward.json
"""
import json, os, sys

import torch
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from det_weights import det_fill, det_input  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden")


for arch in ["resnet18", "resnet34", "resnet50"]:
    m = getattr(torchvision.models, arch)(num_classes=10)
    det_fill(m)
    m.double()
    x = det_input([2, 3, 64, 64]).double()
    m.eval()
    with torch.no_grad():
        eval_logits = m(x)
    m.train()
    with torch.no_grad():
        train_logits = m(x)
    names = list(m.state_dict().keys())
    out = {
        "arch": arch, "dtype": "float64", "num_classes": 10, "input_shape": [2, 3, 64, 64],
        "params_1000": sum(p.numel() for p in getattr(torchvision.models, arch)().parameters()),
        "names": sorted(names),
        "eval_logits": eval_logits.flatten().tolist(),
        "train_logits": train_logits.flatten().tolist(),
    }
    with open(os.path.join(OUT, f"{arch}_forward.json"), "w") as f:
        json.dump(out, f, separators=(",", ":"))
        f.write("\n")
    print(arch, out["params_1000"], eval_logits.abs().max().item())
