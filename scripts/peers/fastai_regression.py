#!/usr/bin/env python3
"""fastai peer of kgtrain's price-from-image regression (recipes/examples/fashion_mnist_price.toml): fastai 2.8's
`Learner` + `fit_one_cycle` on the same images, table and validation rows, set up the way fastai's documentation
does regression; prints the validation SMAPE every epoch and one final JSON line.

  - data: DataBlock(blocks=(ImageBlock(cls=PILImageBW), RegressionBlock(n_out=1))) over DATA/train/<id>.png and
    DATA/<table> (id,price); the item transforms of scripts/peers/fastai_fit.py's padcrop (CropPad(28 + 2*2,
    reflection) + RandomCrop(28) + FlipItem(0.5)) in the DataLoader workers (num_workers: fastai's default, the
    number of CPUs), Normalize(0.2860, 0.3530) as a batch transform; batch 256 (drop-last, fastai's default for
    training, as kgtrain), validation batch 512;
  - validation rows: fold 0 of a kgtrain run's folds.csv (--folds, default runs/price/none_4/folds.csv: kgtrain's
    20 folds stratified by target quantile, seed 42, i.e. its exact 3,000 validation rows); when that file is
    absent, a seeded random 5 % of the rows (said in the JSON as split);
  - model: kgtrain's resnet9 (scripts/peers/models.py, width 16) with 1 output; with a y_range (the default,
    fastai's tutorials' (0, 1.2 * max target)) a final SigmoidRange(lo, hi) = sigmoid(x) * (hi - lo) + lo, as
    fastai's cnn_learner / tabular_learner append it; --no-y-range: the plain linear head (kgtrain's raw head);
    layer groups as fastai's splitter;
  - loss: a differentiable SMAPE in percent, 100 * mean 2|p - y| / (|p| + |y|), a cell with p = y = 0 counting 0;
    --log-target: the other common fastai recipe, train on log1p(price) with L1 (or --log-loss mse), y_range in
    log space (0, 1.2 * log1p(max)), SMAPE reported on expm1 of the predictions;
  - metric: SMAPE as kgtrain's metric (lib/metric/smape.cpp), summed over all validation cells;
  - optimizer / schedule: fastai's Adam with decoupled weight decay (AdamW) at betas 0.9/0.999, eps 1e-8, wd 5e-4,
    no decay on BatchNorm and bias; fit_one_cycle(epochs, 3e-3) with its defaults (kgtrain's one_cycle defaults);
  - --bf16: fastai_cpu.py's CPUMixedPrecision (fastai's MixedPrecision(bf16) with torch.autocast on the CPU);
    the network's output is cast to float32 before the SigmoidRange. --channels-last: learn.to_channelslast.

usage: fastai_regression.py [--data data/fashion_mnist] [--table price_train.csv|price100_train.csv] [--epochs 4]
                            [--no-y-range] [--bf16] [--channels-last] [--log-target [--log-loss l1|mse]]
"""
import argparse
import json
import math
import os
import sys
import time

T_START = time.time()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

p = argparse.ArgumentParser()
p.add_argument("--data", default="data/fashion_mnist")
p.add_argument("--table", default="price_train.csv", help="id,price table in --data")
p.add_argument("--image-dir", default="train")
p.add_argument("--folds", default="runs/price/none_4/folds.csv",
               help="a kgtrain run's folds.csv (id,fold); fold --fold is validation. Absent: a random --valid-pct")
p.add_argument("--fold", type=int, default=0)
p.add_argument("--valid-pct", type=float, default=0.05)
p.add_argument("--width", type=int, default=16)
p.add_argument("--pad", type=int, default=2)
p.add_argument("--size", type=int, default=28)
p.add_argument("--mean", type=float, default=0.2860)
p.add_argument("--std", type=float, default=0.3530)
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--bs", type=int, default=256)
p.add_argument("--eval-bs", type=int, default=512)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--wd", type=float, default=5e-4)
p.add_argument("--no-y-range", action="store_true", help="plain linear head, no SigmoidRange")
p.add_argument("--y-range-mult", type=float, default=1.2, help="y_range = (0, mult * max training target)")
p.add_argument("--log-target", action="store_true", help="train on log1p(price); SMAPE on expm1(pred)")
p.add_argument("--log-loss", choices=["l1", "mse"], default="l1")
p.add_argument("--bf16", action="store_true")
p.add_argument("--channels-last", action="store_true")
p.add_argument("--workers", type=int, default=None, help="default: fastai's (defaults.cpus)")
p.add_argument("--threads", type=int, default=2)
p.add_argument("--seed", type=int, default=42)
p.add_argument("--limit", type=int, default=0, help="smoke test: only the first N rows of the table")
a = p.parse_args()

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
torch.set_num_threads(a.threads)
from fastai.vision.all import (Adam, Callback, ColReader, ColSplitter, CropPad, DataBlock, FlipItem,  # noqa: E402
                               ImageBlock, L1LossFlat, Learner, Metric, MSELossFlat, Normalize, PadMode, PILImageBW,
                               RandomCrop, RegressionBlock, SigmoidRange, defaults, find_bs, set_seed)
from fastai_cpu import CPUMixedPrecision  # noqa: E402
from functools import partial  # noqa: E402
import fastai  # noqa: E402
import models  # noqa: E402

set_seed(a.seed)


def smape_cells(pred, y):
    """2|p - y| / (|p| + |y|) per cell, 0 where p = y = 0 (kgtrain's metric and the brief's loss)."""
    den = pred.abs() + y.abs()
    return torch.where(den > 0, 2.0 * (pred - y).abs() / den.clamp_min(torch.finfo(den.dtype).tiny),
                       torch.zeros_like(den))


def smape_loss(pred, y):
    """Differentiable SMAPE in percent (0..200), mean over cells."""
    pred, y = pred.float().reshape(-1), y.float().reshape(-1)
    return 100.0 * smape_cells(pred, y).mean()


class SMAPE(Metric):
    """SMAPE in percent over the whole validation set (sum of cells / count, float64), on prices: with
    --log-target the predictions and targets are mapped back with expm1 first."""
    def __init__(self, log_target=False):
        self.log_target = log_target

    def reset(self):
        self.total, self.count = 0.0, 0

    def accumulate(self, learn):
        pred = learn.pred.detach().double().reshape(-1)
        y = learn.y.detach().double().reshape(-1)
        if self.log_target:
            pred, y = torch.expm1(pred), torch.expm1(y)
        self.total += smape_cells(pred, y).sum().item()
        self.count += pred.numel()

    @property
    def value(self):
        return 100.0 * self.total / self.count if self.count else float("nan")

    @property
    def name(self):
        return "smape"


class ToFloat(nn.Module):
    def forward(self, x):
        return x.float()


class EpochLog(Callback):
    """Prints each epoch's losses and validation SMAPE as Recorder logged them."""
    order = 60  # after Recorder (50)

    def __init__(self):
        self.epochs = []

    def before_epoch(self):
        self.t_epoch = time.time()

    def before_train(self):
        self.n = 0

    def after_batch(self):
        if self.training:
            self.n += find_bs(self.yb)

    def after_epoch(self):
        names = list(self.learn.recorder.metric_names[1:-1])  # train_loss, valid_loss, smape (epoch, time cut)
        vals = self.learn.recorder.values[-1]
        d = dict(zip(names, [round(float(v), 4) for v in vals]))
        e = dict(epoch=len(self.epochs) + 1, train_images=self.n, **d, epoch_s=round(time.time() - self.t_epoch, 1),
                 elapsed_s=round(time.time() - T_START, 1))
        self.epochs.append(e)
        print(f"epoch {e['epoch']}: train_loss {d.get('train_loss')}, valid_loss {d.get('valid_loss')}, "
              f"valid smape {d.get('smape')}  ({e['epoch_s']} s)", flush=True)


# the table, the validation rows
df = pd.read_csv(os.path.join(a.data, a.table))
df["id"] = df["id"].astype(str)
if a.limit:
    df = df.head(a.limit).copy()
price_max = float(df["price"].max())
if a.folds and os.path.exists(a.folds):
    folds = pd.read_csv(a.folds, dtype={"id": str})
    df = df.merge(folds[["id", "fold"]], on="id", how="left", validate="one_to_one")
    if df["fold"].isna().any():
        sys.exit(f"fastai_regression: {df['fold'].isna().sum()} ids of {a.table} are missing from {a.folds}")
    df["is_valid"] = df["fold"].astype(int) == a.fold
    split = f"{a.folds} fold {a.fold} (kgtrain's own fold assignment)"
else:
    rng = np.random.default_rng(a.seed)
    df["is_valid"] = False
    df.loc[rng.permutation(len(df))[:int(round(a.valid_pct * len(df)))], "is_valid"] = True
    split = f"random {a.valid_pct:.0%} (numpy default_rng seed {a.seed}); kgtrain's quantile folds not reproduced"
if a.log_target:
    df["target"] = np.log1p(df["price"].astype(np.float64))
else:
    df["target"] = df["price"].astype(np.float64)
train_max = float(df.loc[~df["is_valid"], "target"].max())
y_range = None if a.no_y_range else (0.0, a.y_range_mult * train_max)

item_tfms = [CropPad(a.size + 2 * a.pad, pad_mode=PadMode.Reflection), RandomCrop(a.size), FlipItem(0.5)]
dblock = DataBlock(blocks=(ImageBlock(cls=PILImageBW), RegressionBlock(n_out=1)),
                   get_x=ColReader("id", pref=os.path.join(a.data, a.image_dir) + os.sep, suff=".png"),
                   get_y=ColReader("target"), splitter=ColSplitter("is_valid"),
                   item_tfms=item_tfms, batch_tfms=[Normalize.from_stats([a.mean], [a.std])])
workers = defaults.cpus if a.workers is None else a.workers
dls = dblock.dataloaders(df, bs=a.bs, val_bs=a.eval_bs, num_workers=workers, device=torch.device("cpu"))

body = models.create("resnet9", 1, 1, a.width)
if y_range is not None:
    model = nn.Sequential(body, ToFloat(), SigmoidRange(*y_range))
else:
    model = nn.Sequential(body, ToFloat())
if a.log_target:
    loss_func = L1LossFlat() if a.log_loss == "l1" else MSELossFlat()
else:
    loss_func = smape_loss
opt_func = partial(Adam, mom=0.9, sqr_mom=0.999, eps=1e-8)
log = EpochLog()
learn = Learner(dls, model, loss_func=loss_func, opt_func=opt_func, metrics=SMAPE(a.log_target), wd=a.wd,
                splitter=lambda m: models.layer_groups(m[0]), cbs=[log])
if a.channels_last:
    learn.to_channelslast(use_amp=False)
if a.bf16:
    learn.add_cb(CPUMixedPrecision(amp_mode="bf16"))

print(f"fastai_regression: {a.table}, {len(dls.train_ds)} train / {len(dls.valid_ds)} valid rows ({split}); "
      f"target {'log1p(price)' if a.log_target else 'price'}, y_range {y_range}, "
      f"loss {(a.log_loss + ' on log1p') if a.log_target else 'smape'}, {'bf16' if a.bf16 else 'fp32'}, "
      f"workers {workers}, threads {torch.get_num_threads()}", flush=True)
t_fit = time.time()
with learn.no_bar(), learn.no_logging():
    learn.fit_one_cycle(a.epochs, a.lr)
fit_s = time.time() - t_fit

print(json.dumps(dict(
    peer="fastai", task="price regression", fastai=fastai.__version__, torch=torch.__version__, table=a.table,
    price_max=price_max, target="log1p" if a.log_target else "price",
    loss=(a.log_loss + "_log1p") if a.log_target else "smape", y_range=y_range, model=f"resnet9 w{a.width}",
    precision="bf16" if a.bf16 else "fp32", channels_last=a.channels_last, workers=workers,
    threads=torch.get_num_threads(), batch_size=a.bs, lr=a.lr, wd=a.wd, schedule="fit_one_cycle", split=split,
    train_rows=len(dls.train_ds), valid_rows=len(dls.valid_ds), epochs=log.epochs,
    smape=log.epochs[-1].get("smape") if log.epochs else None,
    best_smape=min((e.get("smape", math.inf) for e in log.epochs), default=None),
    fit_s=round(fit_s, 1), wall_s=round(time.time() - T_START, 1))), flush=True)
