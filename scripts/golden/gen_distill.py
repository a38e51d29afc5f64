"""Golden values for loss.distill (tests/loss/test_distill.cpp): Hinton et al.'s distillation loss computed with
PyTorch's own functions, F.kl_div (multiclass) and F.binary_cross_entropy_with_logits (binary / multilabel).

    python3 scripts/golden/gen_distill.py > tests/golden/distill.json
"""
import json

import torch
import torch.nn.functional as F

torch.manual_seed(0)


def mat(t):
    return [[float(x) for x in row] for row in t]


cases = []
for alpha, temp in [(0.5, 2.0), (0.9, 4.0), (1.0, 1.0), (0.3, 0.5)]:
    # multiclass, hard targets: (1 - a) CE + a T^2 KL(softmax(t/T) || softmax(s/T)), kl_div's batchmean
    s, t = torch.randn(5, 4, dtype=torch.double) * 2, torch.randn(5, 4, dtype=torch.double) * 3
    y = torch.tensor([0, 3, 1, 2, 2])
    kd = F.kl_div(F.log_softmax(s / temp, 1), F.softmax(t / temp, 1), reduction="batchmean") * temp**2
    loss = (1 - alpha) * F.cross_entropy(s, y) + alpha * kd
    cases.append({"task": "multiclass", "alpha": alpha, "temperature": temp, "logits": mat(s), "teacher": mat(t),
                  "targets": [int(v) for v in y], "loss": float(loss)})
    # multilabel: the Bernoulli KL per cell = BCE(s/T, q) - BCE(t/T, q), q = sigmoid(t/T)
    s, t = torch.randn(4, 3, dtype=torch.double) * 2, torch.randn(4, 3, dtype=torch.double) * 3
    y = (torch.rand(4, 3) > 0.5).double()
    q = torch.sigmoid(t / temp)
    kd = (F.binary_cross_entropy_with_logits(s / temp, q) - F.binary_cross_entropy_with_logits(t / temp, q)) * temp**2
    loss = (1 - alpha) * F.binary_cross_entropy_with_logits(s, y) + alpha * kd
    cases.append({"task": "multilabel", "alpha": alpha, "temperature": temp, "logits": mat(s), "teacher": mat(t),
                  "targets": mat(y), "loss": float(loss)})
print(json.dumps({"generator": "scripts/golden/gen_distill.py", "torch": torch.__version__, "cases": cases}))
