#!/usr/bin/env python3
"""fastai peer of scripts/bench_peers.sh: `Learner` + `fit_one_cycle` (or `fine_tune`) on an ImageFolder view
(DATA/train/<class>/*, DATA/validation/<class>/*), configured as kgtrain's recipe and otherwise as fastai's own
documentation recommends:
  - model: scripts/peers/models.py (kgtrain's resnet9, written in PyTorch layer for layer; timm's resnet18 and
    efficientnet_b0), its layer groups as fastai's splitter (what freeze / fine_tune and slice(lr) act on);
  - data: DataBlock(ImageBlock, CategoryBlock) with GrandparentSplitter; item transforms on the PIL images in the
    DataLoader workers (num_workers = fastai's default, the number of CPUs), Normalize as a batch transform;
    pad-crop: CropPad(size + 2 pad, reflection) + RandomCrop(size) + FlipItem; rrc: RandomResizedCrop(size,
    min_scale, val_xtra=0) + FlipItem (validation: the whole image, as kgtrain and timm with crop_pct 1);
  - optimizer: fastai's Adam with decoupled weight decay (true AdamW) at kgtrain's AdamW betas (0.9, 0.999) and
    eps 1e-8, no decay on BatchNorm and bias (fastai's wd_bn_bias=False, kgtrain's decay_norm_bias=false);
  - schedule: fit_one_cycle's defaults, which are kgtrain's one_cycle defaults (pct_start 0.25, div 25,
    div_final 1e5, moms 0.95/0.85/0.95 cycling Adam's beta1); fine_tune(epochs, base_lr, freeze_epochs) as is;
  - loss: LabelSmoothingCrossEntropyFlat(eps); --mixup A adds fastai's MixUp(A) callback;
  - channels_last: learn.to_channelslast(use_amp=False); bf16: fastai's MixedPrecision autocasts on 'cuda' only,
    so on the CPU this runner adds the same callback with torch.autocast('cpu', bfloat16) (CPUMixedPrecision).
Validation runs every epoch on the validation split (the benchmark's test images). --tta-hflip adds a final
identity + horizontal-flip evaluation (mean of probabilities), as kgtrain's tta-predict views identity, hflip.
Prints one JSON line: per epoch training images, seconds, img/s, epoch wall, test accuracy, elapsed; totals.

usage: fastai_fit.py DATA --model resnet9 --epochs 2 [--bf16] [--channels-last] [--aug padcrop|rrc] ...
"""
import argparse
import json
import os
import sys
import time

T_START = time.time()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

p = argparse.ArgumentParser()
p.add_argument("data")
p.add_argument("--model", default="resnet9")
p.add_argument("--width", type=int, default=16, help="resnet9 width")
p.add_argument("--channels", type=int, default=1)
p.add_argument("--size", type=int, default=28)
p.add_argument("--aug", choices=["padcrop", "rrc"], default="padcrop")
p.add_argument("--pad", type=int, default=2)
p.add_argument("--min-scale", type=float, default=0.08)
p.add_argument("--mean", type=float, nargs="+", default=[0.2860])
p.add_argument("--std", type=float, nargs="+", default=[0.3530])
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--bs", type=int, default=256)
p.add_argument("--eval-bs", type=int, default=512)
p.add_argument("--lr", default="3e-3", help="a number, or 'find' (lr_find's valley suggestion, timed)")
p.add_argument("--wd", type=float, default=5e-4)
p.add_argument("--smoothing", type=float, default=0.1)
p.add_argument("--mixup", type=float, default=0.0)
p.add_argument("--fine-tune", action="store_true", help="learn.fine_tune(epochs, lr, freeze_epochs)")
p.add_argument("--freeze-epochs", type=int, default=1)
p.add_argument("--bf16", action="store_true")
p.add_argument("--channels-last", action="store_true")
p.add_argument("--workers", type=int, default=None, help="default: fastai's (defaults.cpus)")
p.add_argument("--threads", type=int, default=2)
p.add_argument("--opt", choices=["fastai", "torch"], default="fastai",
               help="fastai: fastai's Adam (decoupled wd); torch: OptimWrapper(torch.optim.AdamW), foreach")
p.add_argument("--tta-hflip", action="store_true")
p.add_argument("--find-only", action="store_true", help="print lr_find's suggestions as JSON and exit")
p.add_argument("--seed", type=int, default=42)
a = p.parse_args()

import torch  # noqa: E402
torch.set_num_threads(a.threads)
from fastai.vision.all import (Adam, Callback, CategoryBlock, CropPad, DataBlock, FlipItem, GrandparentSplitter,  # noqa: E402
                               ImageBlock, LabelSmoothingCrossEntropyFlat, Learner, MixUp, Normalize, OptimWrapper,
                               PadMode, PILImageBW, RandomCrop, RandomResizedCrop, accuracy, defaults, find_bs,
                               get_image_files, minimum, parent_label, set_seed, slide, steep, valley)
from fastai_cpu import CPUMixedPrecision  # noqa: E402
from functools import partial  # noqa: E402
import fastai  # noqa: E402
import models  # noqa: E402

set_seed(a.seed)


class EpochTimer(Callback):
    """Training seconds and images per epoch, epoch wall, and the validation accuracy Recorder logged."""
    order = 60  # after Recorder (50), which appends the epoch's values in after_epoch

    def __init__(self):
        self.epochs = []

    def before_epoch(self):
        self.t_epoch = time.time()

    def before_train(self):
        self.t_train, self.n = time.time(), 0

    def after_batch(self):
        if self.training:
            self.n += find_bs(self.yb)

    def after_train(self):
        self.train_s = time.time() - self.t_train

    def after_epoch(self):
        now = time.time()
        vals = self.learn.recorder.values[-1] if self.learn.recorder.values else []
        self.epochs.append(dict(epoch=len(self.epochs) + 1, train_images=self.n, train_s=round(self.train_s, 3),
                                train_img_per_s=round(self.n / self.train_s, 1), epoch_wall_s=round(now - self.t_epoch, 3),
                                test_acc=round(float(vals[-1]), 4) if vals else None,
                                elapsed_s=round(now - T_START, 2)))


path = a.data
if a.aug == "padcrop":
    item_tfms = [CropPad(a.size + 2 * a.pad, pad_mode=PadMode.Reflection), RandomCrop(a.size), FlipItem(0.5)]
else:
    item_tfms = [RandomResizedCrop(a.size, min_scale=a.min_scale, ratio=(3 / 4, 4 / 3), val_xtra=0.0), FlipItem(0.5)]
blocks = (ImageBlock(cls=PILImageBW) if a.channels == 1 else ImageBlock, CategoryBlock)
dblock = DataBlock(blocks=blocks, get_items=get_image_files, get_y=parent_label,
                   splitter=GrandparentSplitter(train_name="train", valid_name="validation"),
                   item_tfms=item_tfms, batch_tfms=[Normalize.from_stats(a.mean, a.std)])
workers = defaults.cpus if a.workers is None else a.workers
dls = dblock.dataloaders(path, bs=a.bs, val_bs=a.eval_bs, num_workers=workers, device=torch.device("cpu"))

model = models.create(a.model, len(dls.vocab), a.channels, a.width)
if a.opt == "fastai":
    opt_func = partial(Adam, mom=0.9, sqr_mom=0.999, eps=1e-8)
else:
    opt_func = partial(OptimWrapper, opt=torch.optim.AdamW, betas=(0.9, 0.999), eps=1e-8)
timer = EpochTimer()
learn = Learner(dls, model, loss_func=LabelSmoothingCrossEntropyFlat(eps=a.smoothing), opt_func=opt_func,
                metrics=accuracy, wd=a.wd, splitter=models.layer_groups, cbs=[timer])
if a.channels_last:
    learn.to_channelslast(use_amp=False)
if a.bf16:
    learn.add_cb(CPUMixedPrecision(amp_mode="bf16"))
if a.mixup > 0:
    learn.add_cb(MixUp(a.mixup))

if a.find_only:  # fastai's lr_find with its four suggestions, on the configured Learner (bf16, channels_last)
    with learn.no_bar(), learn.no_logging():
        t0 = time.time()
        sug = learn.lr_find(suggest_funcs=(valley, slide, minimum, steep), show_plot=False)
    print(json.dumps(dict(peer="fastai", lr_find={k: float(v) for k, v in sug._asdict().items()},
                          seconds=round(time.time() - t0, 1), precision="bf16" if a.bf16 else "fp32")))
    sys.exit(0)

t_fit = time.time()
lr_found = None
with learn.no_bar(), learn.no_logging():
    if a.lr == "find":
        lr_found = float(learn.lr_find(suggest_funcs=(valley,), show_plot=False).valley)
    lr = lr_found if lr_found is not None else float(a.lr)
    if a.fine_tune:
        learn.fine_tune(a.epochs, base_lr=lr, freeze_epochs=a.freeze_epochs)
    else:
        learn.fit_one_cycle(a.epochs, lr)
fit_s = time.time() - t_fit

tta = None
if a.tta_hflip:  # identity + hflip, mean of probabilities, over the whole validation split
    t0 = time.time()
    model.eval()
    correct = total = 0
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if a.bf16 else torch.autocast("cpu", enabled=False)
    with torch.no_grad(), ctx:
        for xb, yb in dls.valid:
            x = xb.as_subclass(torch.Tensor)
            if a.channels_last:
                x = x.contiguous(memory_format=torch.channels_last)
            prob = model(x).float().softmax(1) + model(x.flip(3)).float().softmax(1)
            correct += (prob.argmax(1) == yb.as_subclass(torch.Tensor)).sum().item()
            total += len(yb)
    tta = dict(views=["identity", "hflip"], test_acc=round(correct / total, 4), seconds=round(time.time() - t0, 2))

n_train = sum(e["train_images"] for e in timer.epochs)
t_train = sum(e["train_s"] for e in timer.epochs)
print(json.dumps(dict(
    peer="fastai", fastai=fastai.__version__, torch=torch.__version__, model=a.model, precision="bf16" if a.bf16 else "fp32",
    channels_last=a.channels_last, workers=workers, threads=torch.get_num_threads(), batch_size=a.bs,
    lr=lr, lr_found=lr_found, mode="fine_tune" if a.fine_tune else "fit_one_cycle", mixup=a.mixup,
    train_rows=len(dls.train_ds), valid_rows=len(dls.valid_ds), epochs=timer.epochs,
    train_img_per_s=round(n_train / t_train, 1) if t_train else None,
    test_acc=timer.epochs[-1]["test_acc"] if timer.epochs else None, tta=tta,
    startup_s=round(t_fit - T_START, 2), fit_s=round(fit_s, 2), wall_s=round(time.time() - T_START, 2))))
