#!/usr/bin/python3
"""Golden values for kgtrain's EMA and SWA callbacks.

swalr: torch.optim.swa_utils.SWALR (torch 1.13) stepped once per epoch, as Lightning's
StochasticWeightAveraging drives it (interval "epoch"): a dummy SGD optimizer at the lr in force when
SWA starts, SWALR built on it (its constructor takes the first step), and param_groups[0]["lr"]
recorded for SWA epochs k = 0 .. epochs-1, the scheduler stepped after each epoch.

ema_decay: timm ModelEmaV3.get_decay(step) (update_after_step 0, min_decay 0) written out from timm's
source, for steps 0..12 (timm's train.py passes num_updates, counted after the update).
  /usr/bin/python3 scripts/golden/gen_swa.py      -> tests/golden/swa.json
"""
import json, os

import torch
import torch.nn as nn
from torch.optim.swa_utils import SWALR

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden", "swa.json")


def swalr_trace(lr0, swa_lr, anneal_epochs, strategy, epochs):
    opt = torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=lr0)
    sched = SWALR(opt, swa_lr=swa_lr, anneal_epochs=anneal_epochs, anneal_strategy=strategy)
    lrs = []
    for _ in range(epochs):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return lrs


def timm_decay(step, decay, warmup, gamma, power):
    step = max(0, step - 0 - 1)
    if step <= 0:
        return 0.0
    if warmup:
        d = 1 - (1 + step / gamma) ** -power
        return max(min(d, decay), 0.0)
    return decay


def main():
    swalr = []
    for lr0, swa_lr, a, strat, n in [
        (0.1, 0.01, 3, "cos", 6),
        (0.1, 0.01, 4, "linear", 7),
        (0.05, 0.002, 10, "cos", 12),
        (0.001, 0.05, 5, "cos", 8),   # annealing upwards (swa_lr above the schedule's lr)
        (0.1, 0.01, 1, "cos", 3),
        (0.1, 0.01, 0, "cos", 3),     # no annealing: swa_lr from the first SWA epoch
        (0.2, 0.03, 2, "linear", 4),
    ]:
        swalr.append({"lr0": lr0, "swa_lr": swa_lr, "anneal_epochs": a, "strategy": strat,
                      "lr": swalr_trace(lr0, swa_lr, a, strat, n)})
    ema = []
    for decay, warmup, gamma, power in [(0.9998, True, 1.0, 2 / 3), (0.999, True, 10.0, 0.75), (0.9, False, 1.0, 2 / 3),
                                        (0.5, True, 1.0, 2 / 3)]:
        ema.append({"decay": decay, "warmup": warmup, "warmup_gamma": gamma, "warmup_power": power,
                    "decays": [timm_decay(s, decay, warmup, gamma, power) for s in range(13)]})
    with open(OUT, "w") as f:
        json.dump({"torch": torch.__version__, "swalr": swalr, "ema_decay": ema}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
