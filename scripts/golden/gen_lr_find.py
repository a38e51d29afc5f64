#!/usr/bin/python3
"""Golden values for the lr finder: fastai 2.7's LRFinder / AvgSmoothLoss / lr_find trimming and its four
suggestion functions (valley, slide, minimum, steep), written out in numpy from fastai's source
(fastai/callback/schedule.py) on fixed synthetic loss curves.

Cases:
  sweep_*   raw losses fed to a sweep of num_steps updates: the expected lrs, smoothed losses, where the
            sweep stops (stop_div: smoothed > div_factor x best; a NaN smoothed loss), and the suggestions
            read off the trimmed curve [num_steps // 10 : -5] cut at the first NaN.
  curve_*   a recorded curve (lrs, smoothed losses, NaN allowed) given directly to the trimming and the
            suggestion functions.
NaN is written as null.
  /usr/bin/python3 scripts/golden/gen_lr_find.py      -> tests/golden/lr_find.json
"""
import json, math, os

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "golden", "lr_find.json")


# --- fastai's pieces -------------------------------------------------------------------------------

def sched_exp(start, end, pos):
    """fastai SchedExp."""
    return start * (end / start) ** pos


def run_sweep(raw, start_lr, end_lr, num_steps, beta, stop_div, div_factor):
    """LRFinder + Recorder + AvgSmoothLoss: one recorded (lr, loss, smoothed) per batch, then the stop rules."""
    lrs, losses, smooth = [], [], []
    val, count, best = 0.0, 0, math.inf
    stopped = False
    for i in range(num_steps):
        lr = sched_exp(start_lr, end_lr, i / num_steps)  # before_batch: train_iter / num_it
        loss = raw[i]
        count += 1
        val = loss + beta * (val - loss)  # torch.lerp(loss, val, beta)
        s = val / (1 - beta ** count)
        lrs.append(lr)
        losses.append(loss)
        smooth.append(s)
        if s < best:
            best = s
        if s > div_factor * best and stop_div:
            stopped = i + 1 < num_steps
            break
        if math.isnan(s) or math.isinf(s):
            stopped = True
            break
    return lrs, losses, smooth, stopped


def trim(lrs, smooth, num_steps):
    lrs, smooth = np.array(lrs[num_steps // 10:-5]), np.array(smooth[num_steps // 10:-5])
    bad = np.nonzero(~np.isfinite(smooth))[0]
    if len(bad):
        lrs, smooth = lrs[:bad[0]], smooth[:bad[0]]
    return lrs, smooth


def valley(lrs, losses):
    n = len(losses)
    max_start, max_end = 0, 0
    lds = [1] * n
    for i in range(1, n):
        for j in range(0, i):
            if (losses[i] < losses[j]) and (lds[i] < lds[j] + 1):
                lds[i] = lds[j] + 1
            if lds[max_end] < lds[i]:
                max_end = i
                max_start = max_end - lds[max_end]
    sections = (max_end - max_start) / 3
    idx = max_start + int(sections) + int(sections / 2)
    return float(lrs[idx])


def slide(lrs, losses, lr_diff=15, thresh=.005, adjust_value=1.):
    if len(losses) < lr_diff + 1:
        return None
    loss_grad = np.gradient(losses)
    r_idx = -1
    l_idx = r_idx - lr_diff
    local_min_lr = lrs[l_idx]
    while (l_idx >= -len(losses)) and (abs(loss_grad[r_idx] - loss_grad[l_idx]) > thresh):
        local_min_lr = lrs[l_idx]
        r_idx -= 1
        l_idx -= 1
    return float(local_min_lr) * adjust_value


def minimum(lrs, losses):
    return float(lrs[np.argmin(losses)]) / 10


def steep(lrs, losses):
    grads = (losses[1:] - losses[:-1]) / (np.log(lrs[1:]) - np.log(lrs[:-1]))
    return float(lrs[np.argmin(grads)])


def suggestions(lrs, losses):
    return {"valley": valley(lrs, losses), "slide": slide(lrs, losses), "minimum": minimum(lrs, losses),
            "steep": steep(lrs, losses)}


def nan_to_none(xs):
    return [None if (isinstance(x, float) and math.isnan(x)) else float(x) for x in xs]


# --- synthetic curves ------------------------------------------------------------------------------

def loss_shape(log_lr, rng, noise):
    """Flat at 2.3 for small lrs, a descent to ~0.4 around 1e-2, then an exponential blow-up."""
    t = 1 / (1 + np.exp(-(log_lr + 3.0) * 2.2))           # 0 -> 1 around lr 1e-3
    blow = np.exp(np.maximum(0.0, log_lr + 1.2) * 4.0) - 1  # grows past lr ~0.06
    return float(2.3 - 1.9 * t + 0.6 * blow + rng.normal(0, noise))


def sweep_case(name, num_steps, start_lr, end_lr, beta, stop_div, div_factor, raw):
    lrs, losses, smooth, stopped = run_sweep(raw, start_lr, end_lr, num_steps, beta, stop_div, div_factor)
    tl, ts = trim(lrs, smooth, num_steps)
    return {"name": name, "num_steps": num_steps, "start_lr": start_lr, "end_lr": end_lr, "beta": beta, "stop_div": stop_div,
            "div_factor": div_factor, "raw": nan_to_none(raw), "lrs": lrs, "losses": nan_to_none(losses),
            "smoothed": nan_to_none(smooth), "steps": len(lrs), "stopped_early": stopped, "trimmed": len(tl),
            "suggestions": suggestions(tl, ts)}


def main():
    rng = np.random.RandomState(0)
    cases = []
    n = 100
    log_lrs = [math.log10(sched_exp(1e-7, 10, i / n)) for i in range(n)]
    raw = [loss_shape(x, rng, 0.04) for x in log_lrs]
    cases.append(sweep_case("sweep_diverges", n, 1e-7, 10.0, 0.98, True, 4.0, raw))
    cases.append(sweep_case("sweep_no_stop_div", n, 1e-7, 10.0, 0.98, False, 4.0, raw))

    # A milder curve over a different range, 150 steps, beta 0.9, div_factor 3.
    n2 = 150
    raw2 = [float(1.0 + 0.8 * math.cos(i / 25.0) + 0.3 * rng.rand()) for i in range(n2)]
    cases.append(sweep_case("sweep_wavy", n2, 1e-5, 1.0, 0.9, True, 3.0, raw2))

    # A NaN loss at update 40: the sweep stops there; trimming [10:-5] keeps 26 points.
    raw3 = list(raw)
    raw3[40] = float("nan")
    cases.append(sweep_case("sweep_nan", n, 1e-7, 10.0, 0.98, True, 4.0, raw3))

    curves = []
    # A recorded curve with a NaN in the middle: the suggestions see the points before it only.
    lrs = [sched_exp(1e-6, 1.0, i / n) for i in range(n)]
    sm = [2.0 - 1.5 / (1 + math.exp(-(i - 45) / 6.0)) + 0.02 * math.sin(i) for i in range(n)]
    sm[60] = float("nan")
    tl, ts = trim(lrs, sm, n)
    curves.append({"name": "curve_nan", "num_steps": n, "lrs": lrs, "smoothed": nan_to_none(sm), "trimmed": len(tl),
                   "suggestions": suggestions(tl, ts)})
    # Curves given untrimmed to the suggestion functions (num_steps 0: nothing dropped at the front;
    # the last 5 still go): two and three falling points (valley's Python index -1 wraps to the last).
    for name, vals in [("curve_two_falling", [3.0, 2.0, 1.5, 1.4, 1.3, 1.2, 1.1]),
                       ("curve_three", [3.0, 2.0, 2.5, 9.0, 9.0, 9.0, 9.0, 9.0])]:
        lr = [10.0 ** (-4 + 0.5 * i) for i in range(len(vals))]
        tl, ts = trim(lr, vals, 0)
        s = suggestions(tl, ts)
        curves.append({"name": name, "num_steps": 0, "lrs": lr, "smoothed": vals, "trimmed": len(tl), "suggestions": s})

    with open(OUT, "w") as f:
        json.dump({"generator": "scripts/golden/gen_lr_find.py", "sweeps": cases, "curves": curves}, f, indent=1)
        f.write("\n")
    for c in cases + curves:
        print(c["name"], c.get("steps"), c["trimmed"], c["suggestions"])


if __name__ == "__main__":
    main()
