#!/usr/bin/python3
"""Golden lr (and momentum) traces for every kgtrain schedule, one value per optimizer update.

PyTorch's own schedulers are the reference wherever one exists (StepLR, MultiStepLR, ExponentialLR,
CosineAnnealingLR, CosineAnnealingWarmRestarts, CyclicLR, PolynomialLR, ReduceLROnPlateau, and
SequentialLR(LinearLR, main) for the warm-up): each drives a dummy SGD optimizer stepped once per update
and we record param_groups[0]["lr"] before every update. Shapes PyTorch does not have (fastai's flat_cos,
timm's non-integer cycle_mult and cycle_decay) are written out below from fastai's / timm's formulas.

Each case carries the kgtrain recipe that should reproduce it ("optim.lr" + a [schedule] table), the
run's total_steps and steps_per_epoch, and, for plateau, the monitored values fed after each epoch.
  /usr/bin/python3 scripts/golden/gen_schedules.py      -> tests/golden/schedules.json
"""
import json, math, os, warnings

import torch
import torch.nn as nn
from torch.optim import lr_scheduler as S

warnings.filterwarnings("ignore", message="The epoch parameter")  # SequentialLR steps its schedulers with an epoch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden", "schedules.json")


def sgd(lr, momentum=0.0):
    return torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=lr, momentum=momentum)


def trace(opt, sched, total, momentum=False):
    """lr (and momentum) in effect at updates 0..total-1, the scheduler stepped after each update."""
    lr, mom = [], []
    for _ in range(total):
        lr.append(opt.param_groups[0]["lr"])
        mom.append(opt.param_groups[0]["momentum"])
        opt.step()
        if sched is not None:
            sched.step()
    return lr, (mom if momentum else None)


def with_warmup(lr, warmup_lr, W, make_main):
    """timm warmup_prefix: a linear ramp warmup_lr -> lr over W updates, then the main schedule from its step 0."""
    opt = sgd(lr)
    warm = S.LinearLR(opt, start_factor=warmup_lr / lr, end_factor=1.0, total_iters=W)
    main = make_main(opt)
    return opt, S.SequentialLR(opt, [warm, main], milestones=[W])


CASES = []


def case(name, lr, total, spe, schedule, lrs, mom=None, **extra):
    assert len(lrs) == total
    CASES.append(dict(name=name, lr=lr, total_steps=total, steps_per_epoch=spe, schedule=schedule, lr_trace=lrs,
                      momentum=mom, **extra))


# ----------------------------------------------------------------------------------------- constant / step
opt = sgd(0.01)
case("constant", 0.01, 20, 5, {"name": "constant"}, trace(opt, None, 20)[0])

opt = sgd(0.05)
case("step updates", 0.05, 30, 10, {"name": "step", "step_size": 7, "gamma": 0.5},
     trace(opt, S.StepLR(opt, step_size=7, gamma=0.5), 30)[0])

opt = sgd(0.1)  # 2.5 epochs x 4 updates = 10 updates per step
case("step epochs", 0.1, 40, 4, {"name": "step", "step_epochs": 2.5},
     trace(opt, S.StepLR(opt, step_size=10, gamma=0.1), 40)[0])

# ---------------------------------------------------------------------------------------------- multistep
opt = sgd(0.02)
case("multistep updates", 0.02, 30, 10, {"name": "multistep", "milestones": [5, 12, 20], "gamma": 0.3},
     trace(opt, S.MultiStepLR(opt, milestones=[5, 12, 20], gamma=0.3), 30)[0])

opt = sgd(0.1)  # epochs 1.5 and 3 at 10 updates per epoch
case("multistep epochs", 0.1, 45, 10, {"name": "multistep", "milestone_epochs": [1.5, 3.0]},
     trace(opt, S.MultiStepLR(opt, milestones=[15, 30], gamma=0.1), 45)[0])

# -------------------------------------------------------------------------------------------- exponential
opt = sgd(0.1)
case("exponential per update", 0.1, 50, 10, {"name": "exponential", "gamma": 0.95},
     trace(opt, S.ExponentialLR(opt, gamma=0.95), 50)[0])

opt = sgd(0.1)  # halve every epoch of 8 updates, continuously
case("exponential per epoch", 0.1, 40, 8, {"name": "exponential", "gamma_per_epoch": 0.5},
     trace(opt, S.ExponentialLR(opt, gamma=0.5 ** (1.0 / 8)), 40)[0])

# ------------------------------------------------------------------------------------------------- cosine
# One cycle over the run = CosineAnnealingLR(T_max = total - 1): the last update runs at min_lr.
opt = sgd(3e-3)
case("cosine whole run", 3e-3, 50, 10, {"name": "cosine", "min_lr": 1e-5},
     trace(opt, S.CosineAnnealingLR(opt, T_max=49, eta_min=1e-5), 50)[0])

opt = sgd(0.1)
case("cosine whole run to 0", 0.1, 23, 23, {"name": "cosine"},
     trace(opt, S.CosineAnnealingLR(opt, T_max=22, eta_min=0.0), 23)[0])

# Restarts = CosineAnnealingWarmRestarts(T_0 = cycle length, T_mult).
opt = sgd(0.1)
case("cosine restarts mult 2", 0.1, 75, 10, {"name": "cosine", "cycle_steps": 10, "cycle_mult": 2.0, "min_lr": 1e-4},
     trace(opt, S.CosineAnnealingWarmRestarts(opt, T_0=10, T_mult=2, eta_min=1e-4), 75)[0])

opt = sgd(0.05)
case("cosine restarts per epoch", 0.05, 48, 12, {"name": "cosine", "cycle_epochs": 1.0},
     trace(opt, S.CosineAnnealingWarmRestarts(opt, T_0=12, T_mult=1, eta_min=0.0), 48)[0])


def timm_cosine(lr, min_lr, t_initial, mult, decay, total):
    """timm CosineLRScheduler._get_lr (cycle_limit unbounded, no warm-up), t = the update index."""
    out = []
    for t in range(total):
        if mult != 1:
            i = math.floor(math.log(1 - t / t_initial * (1 - mult), mult))
            t_i = mult ** i * t_initial
            t_curr = t - (1 - mult ** i) / (1 - mult) * t_initial
        else:
            i = t // t_initial
            t_i = t_initial
            t_curr = t - (t_initial * i)
        lr_max = lr * decay ** i
        out.append(min_lr + 0.5 * (lr_max - min_lr) * (1 + math.cos(math.pi * t_curr / t_i)))
    return out


case("cosine restarts mult 1.5 decay 0.7 (timm)", 0.1, 70, 10,
     {"name": "cosine", "cycle_steps": 8, "cycle_mult": 1.5, "cycle_decay": 0.7, "min_lr": 1e-3},
     timm_cosine(0.1, 1e-3, 8, 1.5, 0.7, 70))
case("cosine restarts decay 0.5 (timm)", 0.02, 40, 10,
     {"name": "cosine", "cycle_steps": 10, "cycle_decay": 0.5},
     timm_cosine(0.02, 0.0, 10, 1, 0.5, 40))

# ----------------------------------------------------------------------------------------------- flat_cos


def fastai_flat_cos(lr, pct_start, div_final, total):
    """fastai fit_flat_cos: combined_cos(pct_start, lr, lr, lr/div_final) = flat, then SchedCos down.
    fastai samples its schedule at pos = i / n; kgtrain at i / (n - 1), so the last update is the final lr."""
    def sched_cos(start, end, pos):
        return start + (1 + math.cos(math.pi * (1 - pos))) * (end - start) / 2
    out = []
    for t in range(total):
        pos = t / (total - 1)
        if pos < pct_start:
            out.append(sched_cos(lr, lr, pos / pct_start))
        else:
            out.append(sched_cos(lr, lr / div_final, (pos - pct_start) / (1 - pct_start)))
    return out


case("flat_cos defaults (fastai)", 4e-3, 60, 10, {"name": "flat_cos"}, fastai_flat_cos(4e-3, 0.75, 1e5, 60))
case("flat_cos half (fastai)", 0.1, 33, 11, {"name": "flat_cos", "pct_start": 0.5, "div_final": 10.0},
     fastai_flat_cos(0.1, 0.5, 10.0, 33))

# ------------------------------------------------------------------------------------------------- cyclic
opt = sgd(0.01)
case("cyclic triangular", 0.01, 40, 10, {"name": "cyclic", "base_lr": 1e-4, "step_size_up": 5},
     trace(opt, S.CyclicLR(opt, base_lr=1e-4, max_lr=0.01, step_size_up=5, mode="triangular",
                           cycle_momentum=False), 40)[0])

opt = sgd(0.02, momentum=0.9)
lrs, mom = trace(opt, S.CyclicLR(opt, base_lr=1e-3, max_lr=0.02, step_size_up=4, step_size_down=3,
                                 mode="triangular2", cycle_momentum=True, base_momentum=0.8, max_momentum=0.9),
                 45, momentum=True)
case("cyclic triangular2 momentum", 0.02, 45, 7,
     {"name": "cyclic", "base_lr": 1e-3, "step_size_up": 4, "step_size_down": 3, "mode": "triangular2",
      "cycle_momentum": True}, lrs, mom)

opt = sgd(0.1, momentum=0.9)  # half an epoch of 8 updates up, the same down; base lr = optim.lr / 10
lrs, mom = trace(opt, S.CyclicLR(opt, base_lr=0.1 / 10, max_lr=0.1, step_size_up=4, mode="exp_range", gamma=0.97,
                                 cycle_momentum=True, base_momentum=0.85, max_momentum=0.95), 50, momentum=True)
case("cyclic exp_range epochs", 0.1, 50, 8,
     {"name": "cyclic", "step_epochs_up": 0.5, "mode": "exp_range", "gamma": 0.97, "cycle_momentum": True,
      "base_momentum": 0.85, "max_momentum": 0.95}, lrs, mom)

# --------------------------------------------------------------------------------------------------- poly
opt = sgd(0.1)
case("poly linear", 0.1, 30, 10, {"name": "poly"},
     trace(opt, S.PolynomialLR(opt, total_iters=29, power=1.0), 30)[0])

# min_lr: PolynomialLR decays lr - min_lr, min_lr is added back.
opt = sgd(0.05 - 1e-4)
lrs = [v + 1e-4 for v in trace(opt, S.PolynomialLR(opt, total_iters=39, power=2.0), 40)[0]]
case("poly power 2 min_lr", 0.05, 40, 10, {"name": "poly", "power": 2.0, "min_lr": 1e-4}, lrs)

# ------------------------------------------------------------------------------------------------ plateau


def plateau(name, lr, spe, schedule, monitor, values, others, **kw):
    opt = sgd(lr)
    sched = S.ReduceLROnPlateau(opt, **kw)
    lrs = []
    for v in values:
        for _ in range(spe):
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
        sched.step(v)
    epochs = [dict(others, **{monitor: v}) for v in values]
    case(name, lr, spe * len(values), spe, schedule, lrs, epochs=epochs)


plateau("plateau min", 0.1, 5, {"name": "plateau", "patience": 1, "factor": 0.5}, "valid_loss",
        [1.0, 0.8, 0.79995, 0.81, 0.7, 0.7, 0.7, 0.69, 0.7, 0.71, 0.72, 0.5], {"train_loss": 0.3, "accuracy": 0.5},
        mode="min", patience=1, factor=0.5)
plateau("plateau accuracy auto max, cooldown, abs threshold, min_lr", 0.05, 4,
        {"name": "plateau", "monitor": "accuracy", "patience": 0, "cooldown": 1, "threshold": 0.01,
         "threshold_mode": "abs", "min_lr": 0.002, "factor": 0.2},
        "accuracy", [0.5, 0.6, 0.605, 0.62, 0.62, 0.62, 0.63, 0.63, 0.63, 0.63, 0.7, 0.7, 0.7],
        {"valid_loss": 1.0}, mode="max", patience=0, cooldown=1, threshold=0.01, threshold_mode="abs",
        min_lr=0.002, factor=0.2)
# kgtrain's defaults: patience 2 (torch: 10), factor 0.1, rel threshold 1e-4, no cooldown, min_lr 0.
plateau("plateau defaults", 1e-3, 3, {"name": "plateau"}, "valid_loss",
        [2.0, 1.5, 1.6, 1.7, 1.8, 1.5, 1.49, 1.49, 1.49, 1.49, 1.2, 1.2], {}, mode="min", patience=2, factor=0.1,
        threshold=1e-4, threshold_mode="rel", cooldown=0, min_lr=0.0)

# ----------------------------------------------------------------------------------------------- warm-up
opt, sched = with_warmup(3e-3, 1e-5, 5, lambda o: S.CosineAnnealingLR(o, T_max=40 - 5 - 1, eta_min=1e-6))
case("warmup steps + cosine", 3e-3, 40, 10,
     {"name": "cosine", "min_lr": 1e-6, "warmup_steps": 5, "warmup_lr": 1e-5}, trace(opt, sched, 40)[0])

opt, sched = with_warmup(0.1, 1e-3, 5, lambda o: S.StepLR(o, step_size=10, gamma=0.5))  # 0.5 epoch x 10
case("warmup epochs + step", 0.1, 40, 10,
     {"name": "step", "step_size": 10, "gamma": 0.5, "warmup_epochs": 0.5, "warmup_lr": 1e-3},
     trace(opt, sched, 40)[0])

opt, sched = with_warmup(0.05, 5e-4, 8, lambda o: S.MultiStepLR(o, milestones=[10, 20], gamma=0.1))
case("warmup steps + multistep", 0.05, 36, 6,
     {"name": "multistep", "milestones": [10, 20], "warmup_steps": 8, "warmup_lr": 5e-4}, trace(opt, sched, 36)[0])

opt, sched = with_warmup(0.1, 0.01, 3, lambda o: S.PolynomialLR(o, total_iters=30 - 3 - 1, power=1.0))
case("warmup steps + poly", 0.1, 30, 10, {"name": "poly", "warmup_steps": 3, "warmup_lr": 0.01},
     trace(opt, sched, 30)[0])


# The warm-up as kgtrain defines it, to catch a SequentialLR quirk before it becomes a golden value.
for c in CASES:
    w = c["schedule"].get("warmup_steps") or round(c["schedule"].get("warmup_epochs", 0) * c["steps_per_epoch"])
    for t in range(w):
        want = c["schedule"]["warmup_lr"] + (c["lr"] - c["schedule"]["warmup_lr"]) * t / w
        assert abs(c["lr_trace"][t] - want) <= 1e-12 * c["lr"], (c["name"], t, c["lr_trace"][t], want)
    if w:
        assert abs(c["lr_trace"][w] - c["lr"]) <= 1e-12 * c["lr"], (c["name"], c["lr_trace"][w])

with open(OUT, "w") as f:
    f.write('{\n"generator":"scripts/golden/gen_schedules.py",\n"torch":' + json.dumps(torch.__version__) +
            ',\n"cases":[\n' + ",\n".join(json.dumps(c, separators=(",", ":")) for c in CASES) + "]\n}\n")
print(len(CASES), "cases ->", os.path.normpath(OUT))
