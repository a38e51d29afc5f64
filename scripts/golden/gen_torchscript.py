"""TorchScript fixtures for the `torchscript` backbone (tests/model/test_torchscript.cpp).

Writes, next to the other golden files:
  tests/golden/tiny_traced.pt         stem = Sequential(conv 3->8, BatchNorm, ReLU), conv2 (8->16, stride 2):
                                      a feature map [N, 16, H/2, W/2]
  tests/golden/tiny_traced_pooled.pt  the same, then ReLU, adaptive 2x2 average pool and flatten: pooled
                                      features [N, 64] that keep where in the image things are
  tests/golden/tiny_scripted.pt       tiny_traced.pt's network through torch.jit.script: follows train()/eval()
  tests/golden/tiny_trace_module.pt   a timm-like model (backbone + its own `fc`) traced with
                                      torch.jit.trace_module(model, {"forward_features": x})
  tests/golden/tiny_traced.json       tiny_traced.pt's output for det_input([2, 3, 8, 8]), and its
                                      BatchNorm running mean after that one forward pass

The traced files are traced in TRAIN mode. Tracing records the operators that ran, with BatchNorm's and dropout's
`training` flag baked in as a constant: module.train()/eval() (Python's or kgtrain's) flips the
module's `training` attribute but not the recorded graph. Checked with torch 1.13:
  traced in train mode: batch statistics and running-stat updates in train() AND in eval(), dropout on
  traced in eval mode:  running statistics (frozen BatchNorm, never updated) in both, dropout off
  torch.jit.script:     follows train()/eval() like the Python module
So trace in the mode you will use the file in, or script it. Also: torch.jit.trace of a bound method
(torch.jit.trace(model.forward_features, x)) is refused by torch ("trace doesn't support compiling
individual module's functions"); use torch.jit.trace_module(model, {"forward_features": x}), which
kgtrain calls in preference to forward, or trace a module whose forward is the backbone, as here.

Run from the repository root with Debian's python3-torch: /usr/bin/python3 scripts/golden/gen_torchscript.py
"""
import json
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from det_weights import det_input  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden")


class Tiny(nn.Module):
    def __init__(self, pooled):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.pooled = pooled

    def forward(self, x):
        x = self.conv2(self.stem(x))
        if self.pooled:
            x = torch.flatten(nn.functional.adaptive_avg_pool2d(torch.relu(x), 2), 1)
        return x


class TimmLike(Tiny):
    """A whole classifier whose forward_features is the backbone, as timm models have."""

    def __init__(self):
        super().__init__(False)
        self.fc = nn.Linear(16, 10)

    def forward_features(self, x):
        return self.conv2(self.stem(x))

    def forward(self, x):
        return self.fc(self.forward_features(x).mean((2, 3)))


def save_trace_module(name):
    torch.manual_seed(0)
    model = TimmLike().train()
    traced = torch.jit.trace_module(model, {"forward_features": torch.randn(2, 3, 12, 12)})
    with torch.no_grad():
        getattr(traced.stem, "1").running_mean.zero_()
        getattr(traced.stem, "1").running_var.fill_(1.0)
        getattr(traced.stem, "1").num_batches_tracked.zero_()
    traced.save(os.path.join(OUT, name))


def save(pooled, name, script=False):
    torch.manual_seed(0)
    model = Tiny(pooled).train()
    example = torch.randn(2, 3, 12, 12)
    traced = torch.jit.script(model) if script else torch.jit.trace(model, example)
    # The example forward above ran BatchNorm in train mode: put its running stats back to their init.
    with torch.no_grad():
        getattr(traced.stem, "1").running_mean.zero_()
        getattr(traced.stem, "1").running_var.fill_(1.0)
        getattr(traced.stem, "1").num_batches_tracked.zero_()
    path = os.path.join(OUT, name)
    traced.save(path)
    return path


def main():
    path = save(False, "tiny_traced.pt")
    save(True, "tiny_traced_pooled.pt")
    save(False, "tiny_scripted.pt", script=True)
    save_trace_module("tiny_trace_module.pt")
    loaded = torch.jit.load(path).eval()  # eval() does not matter: traced in train mode (see above)
    x = det_input([2, 3, 8, 8])
    with torch.no_grad():
        y = loaded(x)
    golden = {
        "file": "tiny_traced.pt",
        "input": "det_input",
        "input_shape": list(x.shape),
        "output_shape": list(y.shape),
        "output": [float(v) for v in y.double().flatten()],
        "running_mean_after": [float(v) for v in getattr(loaded.stem, "1").running_mean.double()],
        "num_batches_tracked_after": int(getattr(loaded.stem, "1").num_batches_tracked),
        "parameters": [n for n, _ in loaded.named_parameters()],
        "buffers": [n for n, _ in loaded.named_buffers()],
    }
    with open(os.path.join(OUT, "tiny_traced.json"), "w") as f:
        json.dump(golden, f)
        f.write("\n")


if __name__ == "__main__":
    main()
