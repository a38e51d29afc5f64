#!/usr/bin/python3
"""Optimizer parity fixtures: torch 1.13's SGD, Adam, AdamW, RAdam and RMSprop run for a few steps on
two fixed float64 tensors (a [3, 4] weight and a [3] bias) with fixed gradients per step. LAMB (timm's
formula) and Lookahead (Zhang et al. 2019) have no torch.optim class: their references are written here
independently, LAMB in numpy and Lookahead as slow weights around torch's own AdamW / SGD.
kgtrain's tests feed the same gradients through the recipe path and must reproduce every step.
  /usr/bin/python3 scripts/golden/gen_optimizers.py      -> tests/golden/optimizers.json
"""
import json, math, os

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden", "optimizers.json")
torch.set_default_dtype(torch.float64)

SHAPES = {"w": [3, 4], "b": [3]}
STEPS = 8
g = torch.Generator().manual_seed(1234)
INIT = {k: torch.randn(s, generator=g) for k, s in SHAPES.items()}
GRADS = [{k: torch.randn(s, generator=g) * (0.5 + 0.1 * t) for k, s in SHAPES.items()} for t in range(STEPS)]
# A schedule's lr and momentum change between steps: cases with "cycled" follow these.
LRS = [0.01 * (1.0 + 0.5 * math.sin(t)) for t in range(STEPS)]
MOMS = [0.95 - 0.01 * t for t in range(STEPS)]


def flat(t):
    return [float(x) for x in t.detach().reshape(-1).tolist()]


def fresh():
    return {k: v.clone().requires_grad_(True) for k, v in INIT.items()}


def run_torch(make, lr, wd, cycled=None, pre_step=None):
    ps = fresh()
    opt = make([ps["w"], ps["b"]])
    out = []
    for t in range(STEPS):
        for group in opt.param_groups:
            group["lr"] = LRS[t] if cycled else lr
            group["weight_decay"] = wd
            if cycled == "betas":
                group["betas"] = (MOMS[t], group["betas"][1])
            elif cycled == "momentum":
                group["momentum"] = MOMS[t]
        for k in ps:
            ps[k].grad = GRADS[t][k].clone()
        if pre_step:
            pre_step(ps, LRS[t] if cycled else lr)
        opt.step()
        out.append({k: flat(v) for k, v in ps.items()})
    return out


def lamb_numpy(lr, wd, beta1, beta2, eps, trust_clip, always_adapt):
    # timm.optim.Lamb without gradient clipping: Adam moments with bias correction, update
    # u = m_hat / (sqrt(v_hat) + eps) + wd * p, scaled by ||p|| / ||u|| (1 when either is 0).
    p = {k: v.numpy().copy() for k, v in INIT.items()}
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(x) for k, x in p.items()}
    out = []
    for t in range(1, STEPS + 1):
        for k in p:
            gr = GRADS[t - 1][k].numpy()
            m[k] = beta1 * m[k] + (1 - beta1) * gr
            v[k] = beta2 * v[k] + (1 - beta2) * gr * gr
            m_hat = m[k] / (1 - beta1 ** t)
            v_hat = v[k] / (1 - beta2 ** t)
            u = m_hat / (np.sqrt(v_hat) + eps) + wd * p[k]
            ratio = 1.0
            if wd != 0 or always_adapt:
                wn, un = np.linalg.norm(p[k]), np.linalg.norm(u)
                ratio = wn / un if wn > 0 and un > 0 else 1.0
                if trust_clip:
                    ratio = min(ratio, 1.0)
            p[k] = p[k] - lr * ratio * u
        out.append({k: [float(x) for x in p[k].reshape(-1)] for k in p})
    return out


def lookahead_torch(make, lr, wd, k, alpha):
    # Slow weights start at the initial params; every k fast steps slow += alpha * (fast - slow), fast = slow.
    ps = fresh()
    opt = make([ps["w"], ps["b"]])
    slow = {n: v.detach().clone() for n, v in ps.items()}
    out = []
    for t in range(STEPS):
        for group in opt.param_groups:
            group["lr"] = lr
            group["weight_decay"] = wd
        for n in ps:
            ps[n].grad = GRADS[t][n].clone()
        opt.step()
        if (t + 1) % k == 0:
            with torch.no_grad():
                for n in ps:
                    slow[n] += alpha * (ps[n] - slow[n])
                    ps[n].copy_(slow[n])
        out.append({n: flat(v) for n, v in ps.items()})
    return out


def decoupled(wd):
    # torch 2.x RAdam(decoupled_weight_decay=True): p *= 1 - lr * wd before the undecayed update.
    def pre(ps, lr):
        with torch.no_grad():
            for v in ps.values():
                v.mul_(1 - lr * wd)
    return pre


O = torch.optim
cases = []


def case(name, recipe, lr, wd, steps, cycled=None):
    cases.append({"name": name, "recipe": recipe, "lr": lr, "weight_decay": wd, "cycled": cycled or "", "steps": steps})


def torch_case(name, recipe, lr, wd, make, cycled=None, pre_step=None, torch_wd=None):
    case(name, recipe, lr, wd, run_torch(make, lr, wd if torch_wd is None else torch_wd, cycled, pre_step), cycled)


torch_case("sgd_plain", 'name = "sgd"\nmomentum = 0.0', 0.1, 0.0, lambda p: O.SGD(p, lr=0.1, foreach=False))
torch_case("sgd_momentum_wd", 'name = "sgd"\nmomentum = 0.9', 0.1, 0.01,
           lambda p: O.SGD(p, lr=0.1, momentum=0.9, foreach=False))
torch_case("sgd_nesterov_wd", 'name = "sgd"\nmomentum = 0.9\nnesterov = true', 0.1, 0.05,
           lambda p: O.SGD(p, lr=0.1, momentum=0.9, nesterov=True, foreach=False))
torch_case("sgd_dampening", 'name = "sgd"\nmomentum = 0.8\ndampening = 0.3', 0.05, 0.0,
           lambda p: O.SGD(p, lr=0.1, momentum=0.8, dampening=0.3, foreach=False))
torch_case("sgd_cycled", 'name = "sgd"\nmomentum = 0.9', 0.0, 0.01,
           lambda p: O.SGD(p, lr=0.1, momentum=0.9, foreach=False), cycled="momentum")
torch_case("adam_l2", 'name = "adam"\nbetas = [0.9, 0.99]', 0.01, 0.01,
           lambda p: O.Adam(p, lr=0.01, betas=(0.9, 0.99), foreach=False))
torch_case("adam_amsgrad", 'name = "adam"\namsgrad = true\neps = 1e-6', 0.02, 0.0,
           lambda p: O.Adam(p, lr=0.01, eps=1e-6, amsgrad=True, foreach=False))
torch_case("adamw", 'name = "adamw"\nbetas = [0.9, 0.99]', 0.01, 0.1,
           lambda p: O.AdamW(p, lr=0.01, betas=(0.9, 0.99), foreach=False))
torch_case("adamw_amsgrad", 'name = "adamw"\namsgrad = true', 0.01, 0.05,
           lambda p: O.AdamW(p, lr=0.01, amsgrad=True, foreach=False))
torch_case("adamw_cycled", 'name = "adamw"', 0.0, 0.01,
           lambda p: O.AdamW(p, lr=0.01, foreach=False), cycled="betas")
# beta2 0.99: rho_t passes 5 at step 6, so both RAdam branches run (rho_5 = 4.96, rho_6 = 5.94).
torch_case("radam_l2", 'name = "radam"\nbetas = [0.9, 0.99]\ndecoupled_weight_decay = false', 0.01, 0.01,
           lambda p: O.RAdam(p, lr=0.01, betas=(0.9, 0.99), foreach=False))
torch_case("radam_decoupled", 'name = "radam"\nbetas = [0.9, 0.99]', 0.01, 0.1,
           lambda p: O.RAdam(p, lr=0.01, betas=(0.9, 0.99), foreach=False), pre_step=decoupled(0.1), torch_wd=0.0)
torch_case("rmsprop", 'name = "rmsprop"', 0.01, 0.01, lambda p: O.RMSprop(p, lr=0.01, foreach=False))
torch_case("rmsprop_centered_momentum", 'name = "rmsprop"\ncentered = true\nmomentum = 0.9\nalpha = 0.9', 0.01, 0.01,
           lambda p: O.RMSprop(p, lr=0.01, alpha=0.9, centered=True, momentum=0.9, foreach=False))

case("lamb", 'name = "lamb"', 0.01, 0.01, lamb_numpy(0.01, 0.01, 0.9, 0.999, 1e-6, False, False))
case("lamb_trust_clip", 'name = "lamb"\ntrust_clip = true\nbetas = [0.9, 0.99]', 0.05, 0.1,
     lamb_numpy(0.05, 0.1, 0.9, 0.99, 1e-6, True, False))
case("lamb_no_decay", 'name = "lamb"', 0.01, 0.0, lamb_numpy(0.01, 0.0, 0.9, 0.999, 1e-6, False, False))
case("lamb_always_adapt", 'name = "lamb"\nalways_adapt = true', 0.01, 0.0, lamb_numpy(0.01, 0.0, 0.9, 0.999, 1e-6, False, True))

case("lookahead_adamw", 'name = "lookahead"\nk = 3\nalpha = 0.5\n\n[optim.inner]\nname = "adamw"\nbetas = [0.9, 0.99]',
     0.01, 0.1, lookahead_torch(lambda p: O.AdamW(p, lr=0.01, betas=(0.9, 0.99), foreach=False), 0.01, 0.1, 3, 0.5))
case("lookahead_sgd", 'name = "lookahead"\nk = 2\nalpha = 0.8\n\n[optim.inner]\nname = "sgd"\nmomentum = 0.9',
     0.1, 0.01, lookahead_torch(lambda p: O.SGD(p, lr=0.1, momentum=0.9, foreach=False), 0.1, 0.01, 2, 0.8))

out = {
    "torch_version": torch.__version__,
    "dtype": "float64",
    "shapes": SHAPES,
    "init": {k: flat(v) for k, v in INIT.items()},
    "grads": [{k: flat(v) for k, v in gs.items()} for gs in GRADS],
    "lrs": LRS,
    "moms": MOMS,
    "cases": cases,
}
with open(OUT, "w") as f:
    json.dump(out, f, separators=(",", ":"))
    f.write("\n")
print(len(cases), "cases ->", os.path.normpath(OUT))
