#!/usr/bin/env python3
"""fastai's fine_tune LR/momentum trace, written from fastai's own code (fastai/callback/schedule.py:
SchedCos, combine_scheds with float32 torch positions, fit_one_cycle, fine_tune, Learner lr_range),
for tests/train/test_plan.cpp. fastai itself is not in Debian; these functions are transcribed verbatim.

Writes tests/golden/fine_tune.json.
"""
import json, math, os

import torch


def sched_cos(start, end, pos):
    return start + (1 + math.cos(math.pi * (1 - pos))) * (end - start) / 2


def combine_scheds(pcts, scheds):
    assert sum(pcts) == 1.
    pcts = torch.tensor([0] + list(pcts))
    assert torch.all(pcts >= 0)
    pcts = torch.cumsum(pcts, 0)
    pct_lim = len(pcts) - 2

    def _inner(pos):
        idx = min((pos >= pcts).nonzero().max(), pct_lim)
        actual_pos = (pos - pcts[idx]) / (pcts[idx + 1] - pcts[idx])
        return scheds[idx](actual_pos.item())
    return _inner


def combined_cos(pct, start, middle, end):
    return combine_scheds([pct, 1 - pct], [lambda p: sched_cos(start, middle, p), lambda p: sched_cos(middle, end, p)])


def even_mults(start, stop, n):
    step = (stop / start) ** (1 / (n - 1))
    return [start * (step ** i) for i in range(n)]


def lr_range(lr, n):
    if not isinstance(lr, slice):
        return [lr] * n
    if lr.start:
        return even_mults(lr.start, lr.stop, n)
    return [lr.stop / 10] * (n - 1) + [lr.stop]


def fit_one_cycle(n_epoch, n_iter, lr_max, n_groups, div=25., div_final=1e5, pct_start=0.25, moms=(0.95, 0.85, 0.95)):
    lrs = lr_range(lr_max, n_groups)
    total = n_epoch * n_iter
    out = []
    for it in range(total):
        pos = it / total
        lr = [combined_cos(pct_start, l / div, l, l / div_final)(pos) for l in lrs]
        mom = combined_cos(pct_start, *moms)(pos)
        out.append({"lr": lr, "mom": mom})
    return out


def fine_tune(epochs, n_iter, n_groups, base_lr=2e-3, freeze_epochs=1, lr_mult=100, pct_start=0.3, div=5.0):
    trace, frozen = [], []
    trace += fit_one_cycle(freeze_epochs, n_iter, slice(base_lr), n_groups, pct_start=0.99)
    frozen += [n_groups - 1] * freeze_epochs
    base_lr /= 2
    trace += fit_one_cycle(epochs, n_iter, slice(base_lr / lr_mult, base_lr), n_groups, pct_start=pct_start, div=div)
    frozen += [0] * epochs
    return trace, frozen


cases = []
for (epochs, n_iter, n_groups, base_lr, freeze_epochs, lr_mult) in [(3, 5, 4, 2e-3, 1, 100), (2, 7, 3, 1e-3, 2, 10)]:
    trace, frozen = fine_tune(epochs, n_iter, n_groups, base_lr, freeze_epochs, lr_mult)
    cases.append({"epochs": epochs, "steps_per_epoch": n_iter, "groups": n_groups, "base_lr": base_lr,
                  "freeze_epochs": freeze_epochs, "lr_mult": lr_mult, "trace": trace, "frozen": frozen})
out = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden", "fine_tune.json")
with open(out, "w") as f:
    json.dump({"source": "scripts/golden/gen_fine_tune.py (fastai fine_tune transcribed)", "cases": cases}, f, indent=1)
print("wrote", out)
