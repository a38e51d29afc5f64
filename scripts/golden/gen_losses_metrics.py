#!/usr/bin/python3
"""Golden values for kgtrain's losses and metrics (tests/loss/test_losses.cpp, tests/metric/test_metrics.cpp).

Losses come from PyTorch itself (F.cross_entropy with weight/label_smoothing, BCEWithLogits with
pos_weight, torchvision.ops.sigmoid_focal_loss, mse/l1/huber); the softmax focal loss and SMAPE, which
PyTorch lacks, are written out from their formulas. Metrics come from independent NumPy implementations
written here (AUC by explicit pairwise counting, QWK from the confusion matrix, F1 from per-class
counts, sklearn's log-loss recipe, R2, SMAPE), not from kgtrain's algorithms. Everything is float64.

  /usr/bin/python3 scripts/golden/gen_losses_metrics.py   -> tests/golden/losses_metrics.json
"""
import json, os

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden", "losses_metrics.json")
rng = np.random.default_rng(20240605)


def r(x):
    return np.round(np.asarray(x, dtype=np.float64), 6)


def t64(x):
    return torch.tensor(np.asarray(x), dtype=torch.float64)


def toml_list(v):
    return "[" + ", ".join(repr(float(x)) for x in v) + "]"


# ---------------------------------------------------------------- fixed inputs (rounded to 6 places,
# so the JSON holds exactly what the reference computed on)
mc_logits = r(rng.normal(0, 2, (6, 4)))
mc_hard = np.array([0, 3, 1, 1, 2, 3])
mc_soft = r(rng.dirichlet(np.ones(4), 6))
bin_logits = r(rng.normal(0, 2, (8, 1)))
bin_t = np.array([[1.], [0.], [0.], [1.], [1.], [0.], [1.], [0.]])
ml_logits = r(rng.normal(0, 2, (6, 3)))
ml_t = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 0, 0], [1, 0, 1], [0, 1, 1]], dtype=np.float64)
ml_soft = r(rng.uniform(0, 1, (6, 3)))
reg_out = r(rng.normal(0, 3, (6, 2)))
reg_t = r(rng.normal(0, 3, (6, 2)))
reg_t[2, 0] = 0.0
reg_out[2, 0] = 0.0  # a 0/0 cell

losses = []


def loss_case(name, task, toml, logits, targets, value, note):
    tgt = targets.tolist() if isinstance(targets, np.ndarray) else targets
    losses.append({"name": name, "task": task, "note": note, "toml": "[loss]\nname = \"%s\"\n%s" % (name, toml),
                   "logits": np.asarray(logits).tolist(), "targets": tgt, "hard": bool(np.asarray(targets).ndim == 1),
                   "value": float(value)})


# cross_entropy: torch's own function (weighted mean for hard targets, per-class weights for soft ones)
w4 = [1.0, 2.0, 0.5, 1.5]
X, H, S = t64(mc_logits), torch.tensor(mc_hard), t64(mc_soft)
for ls in [0.0, 0.1]:
    for w in [None, w4]:
        toml = "label_smoothing = %r\n" % ls + ("class_weights = %s\n" % toml_list(w) if w else "")
        wt = t64(w) if w else None
        loss_case("cross_entropy", "multiclass", toml, mc_logits, mc_hard,
                  F.cross_entropy(X, H, weight=wt, label_smoothing=ls).item(), "hard targets")
        loss_case("cross_entropy", "multiclass", toml, mc_logits, mc_soft,
                  F.cross_entropy(X, S, weight=wt, label_smoothing=ls).item(), "soft targets")

# bce_with_logits: BCEWithLogitsLoss, timm-style smoothing done on the targets first
for task, L, T in [("binary", bin_logits, bin_t), ("multilabel", ml_logits, ml_t), ("multilabel", ml_logits, ml_soft)]:
    k = L.shape[1]
    pw_list = [2.0, 0.5, 3.0][:k]
    for pw, pw_toml in [(None, ""), (2.0, "pos_weight = 2.0\n"), (pw_list, "pos_weight = %s\n" % toml_list(pw_list))]:
        for eps in [0.0, 0.1]:
            tt = t64(T) * (1 - eps) + eps / 2
            pwt = None if pw is None else (t64(pw) if isinstance(pw, list) else torch.full((k,), pw, dtype=torch.float64))
            v = F.binary_cross_entropy_with_logits(t64(L), tt, pos_weight=pwt).item()
            loss_case("bce_with_logits", task, pw_toml + "label_smoothing = %r\n" % eps, L, T, v, "")

# focal, sigmoid form: torchvision's reference
for task, L, T in [("binary", bin_logits, bin_t), ("multilabel", ml_logits, ml_t), ("multilabel", ml_logits, ml_soft)]:
    for gamma, alpha in [(2.0, 0.25), (2.0, -1.0), (1.5, 0.6), (0.0, -1.0)]:
        v = torchvision.ops.sigmoid_focal_loss(t64(L), t64(T), alpha=alpha, gamma=gamma, reduction="mean").item()
        loss_case("focal", task, "gamma = %r\nalpha = %r\n" % (gamma, alpha), L, T, v, "torchvision")


# focal, softmax form (Lin et al. eq. 4 with the softmax p): -sum_c t_c (1 - p_c)^gamma log p_c, mean over rows
def softmax_focal(logits, t, gamma):
    z = logits - logits.max(1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(1, keepdims=True))
    return float((-(t * (1 - np.exp(logp)) ** gamma * logp).sum(1)).mean())


onehot = np.eye(4)[mc_hard]
for gamma in [2.0, 1.5, 0.0]:
    loss_case("focal", "multiclass", "gamma = %r\n" % gamma, mc_logits, mc_hard, softmax_focal(mc_logits, onehot, gamma), "hard")
    loss_case("focal", "multiclass", "gamma = %r\n" % gamma, mc_logits, mc_soft, softmax_focal(mc_logits, mc_soft, gamma), "soft")
# gamma = 0 must be plain cross-entropy (a cross-check of the formula above against torch)
assert abs(softmax_focal(mc_logits, onehot, 0.0) - F.cross_entropy(X, H).item()) < 1e-12

# regression
P, Y = t64(reg_out), t64(reg_t)
loss_case("mse", "regression", "", reg_out, reg_t, F.mse_loss(P, Y).item(), "")
loss_case("l1", "regression", "", reg_out, reg_t, F.l1_loss(P, Y).item(), "")
for d in [1.0, 0.5, 3.0]:
    loss_case("huber", "regression", "delta = %r\n" % d, reg_out, reg_t, F.huber_loss(P, Y, delta=d).item(), "")
loss_case("smape", "regression", "", reg_out, reg_t,
          200 * np.mean(np.abs(reg_t - reg_out) / (np.abs(reg_t) + np.abs(reg_out) + 1e-8)), "percent, eps 1e-8")

# ---------------------------------------------------------------- metrics (NumPy references)


def auc_pairs(score, pos):
    """Probability that a random positive outranks a random negative, ties counting 1/2."""
    p, n = score[pos], score[~pos]
    if len(p) == 0 or len(n) == 0:
        return None
    gt = (p[:, None] > n[None, :]).sum()
    eq = (p[:, None] == n[None, :]).sum()
    return (gt + 0.5 * eq) / (len(p) * len(n))


def auc_macro(preds, pos):
    vals = [auc_pairs(preds[:, c], pos[:, c]) for c in range(preds.shape[1])]
    vals = [v for v in vals if v is not None]
    return float(np.mean(vals)) if vals else None


def f1_counts(yp, yt):
    tp = (yp & yt).sum(0)
    fp = (yp & ~yt).sum(0)
    fn = (~yp & yt).sum(0)
    return tp, fp, fn


def f1_of(tp, fp, fn):
    d = 2 * tp + fp + fn
    return 2 * tp / d if d > 0 else 0.0


def f1(yp, yt, average, present_only):
    tp, fp, fn = f1_counts(yp, yt)
    if average == "micro":
        return float(f1_of(tp.sum(), fp.sum(), fn.sum()))
    cols = [c for c in range(len(tp)) if not present_only or (tp[c] + fp[c] + fn[c]) > 0]
    return float(np.mean([f1_of(tp[c], fp[c], fn[c]) for c in cols]))


def qwk(a, b, lo, hi):
    R = hi - lo + 1
    O = np.zeros((R, R))
    for x, y in zip(a, b):
        O[x - lo, y - lo] += 1
    i, j = np.meshgrid(np.arange(R), np.arange(R), indexing="ij")
    W = (i - j) ** 2 / (R - 1) ** 2
    E = np.outer(O.sum(1), O.sum(0)) / O.sum()
    return float(1 - (W * O).sum() / (W * E).sum())


def softmax(z):
    z = z - z.max(1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(1, keepdims=True)


metrics = []


def metric_case(name, task, preds, targets, value, note=""):
    metrics.append({"name": name, "task": task, "note": note, "num_outputs": int(np.asarray(preds).shape[1]),
                    "preds": np.asarray(preds).tolist(), "targets": np.asarray(targets).tolist(),
                    "hard": bool(np.asarray(targets).ndim == 1), "value": value})


def multiclass_metrics(probs, y, note):
    K = probs.shape[1]
    oh = np.eye(K, dtype=bool)[y]
    am = probs.argmax(1)
    metric_case("accuracy", "multiclass", probs, y, float((am == y).mean()), note)
    for name, k in [("top_k", 5), ("top_3", 3)]:
        topk = np.argsort(-probs, 1, kind="stable")[:, :min(k, K)]
        metric_case(name, "multiclass", probs, y, float((topk == y[:, None]).any(1).mean()), note)
    p = np.clip(probs, 1e-15, 1 - 1e-15)
    p = p / p.sum(1, keepdims=True)
    metric_case("log_loss", "multiclass", probs, y, float(-np.log(p[np.arange(len(y)), y]).mean()), note)
    metric_case("auc", "multiclass", probs, y, auc_macro(probs, oh), note)
    ap = np.eye(K, dtype=bool)[am]
    metric_case("f1", "multiclass", probs, y, f1(ap, oh, "macro", True), note)
    metric_case("f1_micro", "multiclass", probs, y, f1(ap, oh, "micro", True), note)
    metric_case("qwk", "multiclass", probs, y, qwk(y, am, 0, K - 1), note)


# A: 30 rows, 6 classes, every class present
logits = rng.normal(0, 1.5, (30, 6))
probs_a = r(softmax(logits))
y_a = rng.integers(0, 6, 30)
y_a[:6] = np.arange(6)
multiclass_metrics(probs_a, y_a, "all classes present")
# B: class 4 never a target, class 5 neither target nor prediction: sklearn's label sets
probs_b = probs_a.copy()
probs_b[:, 5] = 0.0
probs_b = r(probs_b / probs_b.sum(1, keepdims=True))
y_b = y_a.copy()
y_b[y_b >= 4] = rng.integers(0, 4, (y_b >= 4).sum())
multiclass_metrics(probs_b, y_b, "classes 4 (no target) and 5 (no target, no prediction)")
# soft targets count as their arg-max class for accuracy; log_loss uses them as given
soft_y = r(rng.dirichlet(np.ones(6) * 0.5, 30))
metric_case("accuracy", "multiclass", probs_a, soft_y, float((probs_a.argmax(1) == soft_y.argmax(1)).mean()), "soft targets")
pc = np.clip(probs_a, 1e-15, 1 - 1e-15)
pc = pc / pc.sum(1, keepdims=True)
metric_case("log_loss", "multiclass", probs_a, soft_y, float(-(soft_y * np.log(pc)).sum(1).mean()), "soft targets")


def binlike_metrics(task, probs, t, note):
    pos = t > 0.5
    yp = probs > 0.5
    metric_case("accuracy", task, probs, t, float((yp == pos).mean()), note)
    p = np.clip(probs, 1e-15, 1 - 1e-15)
    metric_case("log_loss", task, probs, t, float(-(t * np.log(p) + (1 - t) * np.log(1 - p)).mean()), note)
    metric_case("auc", task, probs, t, auc_macro(probs, pos), note)
    metric_case("f1", task, probs, t, f1(yp, pos, "macro", False), note)
    metric_case("f1_micro", task, probs, t, f1(yp, pos, "micro", False), note)


# binary: 14 rows with tied scores across classes, and exact 0 / 1 probabilities (log-loss clipping)
bp = np.array([0.9, 0.8, 0.8, 0.7, 0.5, 0.5, 0.5, 0.3, 0.3, 0.2, 0.1, 1.0, 0.0, 0.6]).reshape(-1, 1)
bt = np.array([1, 1, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 0], dtype=np.float64).reshape(-1, 1)
binlike_metrics("binary", bp, bt, "ties, p = 0 and 1")
# multilabel: 12 rows, 4 labels; label 3 has no positive target (AUC skips it, F1 macro counts it 0)
mp = r(rng.uniform(0, 1, (12, 4)))
mp[:, 1] = np.round(mp[:, 1], 1)  # ties
mt = (rng.uniform(0, 1, (12, 4)) < 0.5).astype(np.float64)
mt[:, 3] = 0
mt[0, 0], mt[1, 0] = 1, 0
binlike_metrics("multilabel", mp, mt, "label 3 without positives, ties in label 1")

# regression: 10 rows, 2 columns, one 0/0 cell for SMAPE
rp = r(rng.normal(1, 2, (10, 2)))
rt = r(rng.normal(1, 2, (10, 2)))
rp[3, 1] = rt[3, 1] = 0.0
metric_case("rmse", "regression", rp, rt, float(np.mean(np.sqrt(((rp - rt) ** 2).mean(0)))), "mean of column RMSEs")
metric_case("mae", "regression", rp, rt, float(np.abs(rp - rt).mean()))
den = np.abs(rp) + np.abs(rt)
cell = np.where(den > 0, 2 * np.abs(rp - rt) / np.where(den > 0, den, 1), 0.0)
metric_case("smape", "regression", rp, rt, float(100 * cell.mean()), "percent, 0/0 cell counts 0")
r2 = [1 - ((rt[:, c] - rp[:, c]) ** 2).sum() / ((rt[:, c] - rt[:, c].mean()) ** 2).sum() for c in range(2)]
metric_case("r2", "regression", rp, rt, float(np.mean(r2)), "uniform average over columns")
# one column: rmse, r2; qwk on rounded, clipped predictions
ry = np.array([0, 1, 2, 3, 4, 2, 1, 3, 4, 0, 2, 2], dtype=np.float64).reshape(-1, 1)
rq = np.array([0.2, 1.6, 2.4, 2.6, 5.7, 1.5, 0.5, 3.49, 3.9, -1.3, 2.5, 1.2]).reshape(-1, 1)
a = ry[:, 0].astype(int)
b = np.clip(np.round(rq[:, 0]), a.min(), a.max()).astype(int)  # numpy rounds half to even
metric_case("qwk", "regression", rq, ry, qwk(a, b, a.min(), a.max()), "rounded half to even, clipped to [0, 4]")
metric_case("rmse", "regression", rq, ry, float(np.sqrt(((rq - ry) ** 2).mean())), "one column")
metric_case("r2", "regression", rq, ry,
            float(1 - ((ry - rq) ** 2).sum() / ((ry - ry.mean()) ** 2).sum()), "one column")

with open(OUT, "w") as f:
    f.write("{\n\"losses\":[\n" + ",\n".join(json.dumps(c, separators=(",", ":")) for c in losses) + "],\n")
    f.write("\"metrics\":[\n" + ",\n".join(json.dumps(c, separators=(",", ":")) for c in metrics) + "]\n}\n")
print(len(losses), "loss cases,", len(metrics), "metric cases ->", os.path.normpath(OUT))
