"""Deterministic weights and inputs for architecture parity fixtures, with no RNG involved.

Every tensor's values are a function of its timm/torchvision name and shape only, so kgtrain's C++
tests (tests/support/det_weights.cpp, the same formulas) fill a model built natively and compare its
outputs with the Python reference model filled here, without committing megabytes of weights.
  phase(name)  = (sum((j + 1) * ord(c) for j, c in enumerate(name)) % 9973) * 0.001
  s[k]         = sin(0.7 * k + phase)            (float64, k = 0 .. numel-1, row-major)
  dim >= 2     : s / sqrt(numel / shape[0])      (1 / sqrt(fan_in) scale keeps deep nets stable)
  running_var  : 1 + 0.5 * |s|
  *weight/gamma (1-D): 1 + 0.1 * s;   other 1-D (biases, running_mean): 0.1 * s
  integers (num_batches_tracked): left alone
Input: x[k] = sin(0.37 * k) for k over the flattened shape.
"""
import math

import torch


def phase(name):
    return (sum((j + 1) * ord(c) for j, c in enumerate(name)) % 9973) * 0.001


def det_tensor(name, shape):
    n = 1
    for d in shape:
        n *= d
    s = torch.sin(torch.arange(n, dtype=torch.float64) * 0.7 + phase(name))
    if len(shape) >= 2:
        v = s / math.sqrt(n / shape[0])
    elif name.endswith("running_var"):
        v = 1 + 0.5 * s.abs()
    elif name.endswith("weight") or name.endswith("gamma"):
        v = 1 + 0.1 * s
    else:
        v = 0.1 * s
    return v.reshape(shape).float()


def det_fill(model, rename=lambda n: n):
    """Fills every floating tensor of model.state_dict(); `rename` maps its names to kgtrain's (timm's)."""
    with torch.no_grad():
        for name, t in model.state_dict().items():
            if t.is_floating_point():
                t.copy_(det_tensor(rename(name), list(t.shape)))


def det_input(shape):
    n = 1
    for d in shape:
        n *= d
    return torch.sin(torch.arange(n, dtype=torch.float64) * 0.37).reshape(shape).float()


def three_logits(model, bns, x):
    """Logits of `x` in eval mode, in train mode, and in eval mode again after that train pass has set every running
    statistic of `bns` to the batch's (momentum 1). det_fill's running statistics do not match the activations, so
    through many BatchNorms the signal fades and the first eval logits barely depend on the input; the calibrated
    ones do."""
    with torch.no_grad():
        model.eval()
        eval_logits = model(x)
        for m in bns:
            m.momentum = 1.0
        model.train()
        train_logits = model(x)
        model.eval()
        calibrated = model(x)
    return eval_logits, train_logits, calibrated
