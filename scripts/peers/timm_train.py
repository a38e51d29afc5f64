#!/usr/bin/env python3
"""timm peer of scripts/bench_peers.sh: a replica of timm's train.py, single process on the CPU.

Why a replica: train.py lives in timm's GitHub repository only. Neither the timm wheel nor the sdist on PyPI
carries it (timm-1.0.31.tar.gz, sha256 baa0b333339c46d3d6d4965d99b69f5053afed71210e8f433d7ea5ee6a18f0ec, holds
timm/ and tests/ -- tests/test_train_resume.py even `import train`s it from a repository checkout), and this
machine reaches PyPI only. So this file repeats train.py's single-process path with timm's own building
blocks, flag for flag (same names, same defaults, as train.py of the timm 1.0 series):
  create_model -> resolve_data_config -> model.to(channels_last) -> create_optimizer_v2(**optimizer_kwargs)
  -> torch.autocast(dtype) for --amp -> create_dataset (ImageFolder: DATA/train, DATA/validation)
  -> Mixup / FastCollateMixup -> create_loader (timm's transforms, fast_collate + PrefetchLoader unless
  --no-prefetcher) -> loss: SoftTargetCrossEntropy (mixup) / LabelSmoothingCrossEntropy (--smoothing) / CE
  -> create_scheduler_v2(**scheduler_kwargs, updates_per_epoch) -> per epoch train_one_epoch (train.py's
  loop: forward under autocast, backward, optimizer.step, zero_grad, lr_scheduler.step_update per update)
  -> validate (top-1) -> CheckpointSaver.save_checkpoint (when --output is set) -> lr_scheduler.step(epoch + 1).
Left out: distributed training, apex, EMA, gradient accumulation / clipping, AugMix splits, wandb, torch.compile,
resume -- none is used by the benchmark.
Departures, each marked `# bench:` below: the device is the CPU (--threads sets torch's intra-op threads);
--warmup-epochs takes a fraction (train.py: an integer; with --sched-on-updates timm's scheduler counts updates,
so 0.25 x epochs becomes the same warm-up as kgtrain's one_cycle pct_start 0.25); --pad-crop P replaces timm's
training transform by reflect-pad P + random crop + hflip (the Fashion-MNIST recipe's augmentation; timm's
transforms have random-resized-crop, not pad-crop); --tta-hflip adds a final identity + hflip evaluation;
per-epoch timings are printed as one JSON line at the end (--json).
kgtrain's resnet9 is the timm model `kg_resnet9` (scripts/peers/models.py registers it; --model-kwargs width=16).

usage: timm_train.py --data-dir DATA --model resnet18 --opt adamw --lr 2e-3 ... (train.py's flags)
"""
import argparse
import json
import os
import sys
import time
from collections import OrderedDict
from contextlib import suppress
from functools import partial

T_START = time.time()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torchvision.transforms as T  # noqa: E402

import timm  # noqa: E402
from timm import utils  # noqa: E402
from timm.data import FastCollateMixup, Mixup, create_dataset, create_loader, resolve_data_config  # noqa: E402
from timm.data.transforms import MaybePILToTensor  # noqa: E402
from timm.loss import LabelSmoothingCrossEntropy, SoftTargetCrossEntropy  # noqa: E402
from timm.models import create_model  # noqa: E402
from timm.optim import create_optimizer_v2, optimizer_kwargs  # noqa: E402
from timm.scheduler import create_scheduler_v2, scheduler_kwargs  # noqa: E402

import models  # noqa: E402,F401  (registers kg_resnet9)

parser = argparse.ArgumentParser(description="timm train.py replica (CPU, single process)")
g = parser.add_argument
# Dataset
g("--data-dir", metavar="DIR", required=True)
g("--dataset", default="")
g("--train-split", default="train")
g("--val-split", default="validation")
g("--input-img-mode", default=None)
# Model
g("--model", default="resnet50")
g("--pretrained", action="store_true", default=False)
g("--num-classes", type=int, default=None)
g("--gp", default=None)
g("--img-size", type=int, default=None)
g("--in-chans", type=int, default=None)
g("--input-size", default=None, nargs=3, type=int)
g("--crop-pct", default=None, type=float)
g("--mean", type=float, nargs="+", default=None)
g("--std", type=float, nargs="+", default=None)
g("--interpolation", default="")
g("-b", "--batch-size", type=int, default=128)
g("-vb", "--validation-batch-size", type=int, default=None)
g("--channels-last", action="store_true", default=False)
g("--model-kwargs", nargs="*", default={}, action=utils.ParseKwargs)
# Optimizer
g("--opt", default="sgd")
g("--opt-eps", default=None, type=float)
g("--opt-betas", default=None, type=float, nargs="+")
g("--momentum", type=float, default=0.9)
g("--weight-decay", type=float, default=2e-5)
# Learning rate schedule
g("--sched", type=str, default="cosine")
g("--sched-on-updates", action="store_true", default=False)
g("--lr", type=float, default=None)
g("--lr-base", type=float, default=0.1)
g("--lr-base-size", type=int, default=256)
g("--lr-base-scale", type=str, default="")
g("--warmup-lr", type=float, default=1e-5)
g("--min-lr", type=float, default=0)
g("--epochs", type=int, default=300)
g("--warmup-epochs", type=float, default=5)  # bench: float (train.py: int)
g("--warmup-prefix", action="store_true", default=False)
g("--cooldown-epochs", type=int, default=0)
# Augmentation and regularization
g("--no-aug", action="store_true", default=False)
g("--scale", type=float, nargs="+", default=[0.08, 1.0])
g("--ratio", type=float, nargs="+", default=[3. / 4., 4. / 3.])
g("--hflip", type=float, default=0.5)
g("--vflip", type=float, default=0.)
g("--color-jitter", type=float, default=0.4)
g("--aa", type=str, default=None)
g("--reprob", type=float, default=0.)
g("--remode", type=str, default="pixel")
g("--recount", type=int, default=1)
g("--mixup", type=float, default=0.0)
g("--cutmix", type=float, default=0.0)
g("--cutmix-minmax", type=float, nargs="+", default=None)
g("--mixup-prob", type=float, default=1.0)
g("--mixup-switch-prob", type=float, default=0.5)
g("--mixup-mode", type=str, default="batch")
g("--smoothing", type=float, default=0.1)
g("--train-interpolation", type=str, default="random")
g("--drop", type=float, default=0.0)
g("--drop-path", type=float, default=None)
# Misc
g("--seed", type=int, default=42)
g("--worker-seeding", type=str, default="all")
g("--log-interval", type=int, default=50)
g("--checkpoint-hist", type=int, default=10)
g("-j", "--workers", type=int, default=4)
g("--amp", action="store_true", default=False)
g("--amp-dtype", default="float16", type=str)
g("--pin-mem", action="store_true", default=False)
g("--no-prefetcher", action="store_true", default=False)
g("--output", default="", type=str)
g("--eval-metric", default="top1", type=str)
# bench: extensions
g("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
g("--pad-crop", type=int, default=0, help="training transform: reflect-pad P, random crop, hflip (0: timm's)")
g("--tta-hflip", action="store_true", help="final evaluation with identity + hflip views")
g("--json", action="store_true", help="print the run as one JSON line at the end")


def train_one_epoch(epoch, model, loader, optimizer, loss_fn, args, device, lr_scheduler=None,
                    amp_autocast=suppress, mixup_fn=None):
    losses_m = utils.AverageMeter()
    model.train()
    updates_per_epoch = len(loader)
    num_updates = epoch * updates_per_epoch
    optimizer.zero_grad()
    n_images = 0
    for batch_idx, (input, target) in enumerate(loader):
        if not args.prefetcher:
            input, target = input.to(device), target.to(device)
            if mixup_fn is not None:
                input, target = mixup_fn(input, target)
        if args.channels_last:
            input = input.contiguous(memory_format=torch.channels_last)
        with amp_autocast():
            output = model(input)
            loss = loss_fn(output, target)
        loss.backward()
        optimizer.step()
        losses_m.update(loss.item(), input.size(0))
        n_images += input.size(0)
        num_updates += 1
        optimizer.zero_grad()
        if lr_scheduler is not None:
            lr_scheduler.step_update(num_updates=num_updates, metric=losses_m.avg)
    return OrderedDict([("loss", losses_m.avg)]), n_images


def validate(model, loader, loss_fn, args, device, amp_autocast=suppress, hflip=False):
    losses_m, top1_m = utils.AverageMeter(), utils.AverageMeter()
    model.eval()
    with torch.no_grad():
        for input, target in loader:
            if not args.prefetcher:
                input, target = input.to(device), target.to(device)
            if args.channels_last:
                input = input.contiguous(memory_format=torch.channels_last)
            with amp_autocast():
                output = model(input)
                if hflip:  # bench: identity + hflip, mean of probabilities
                    output = output.float().softmax(1) + model(input.flip(3)).float().softmax(1)
                loss = loss_fn(output, target) if not hflip else torch.zeros(())
            acc1 = utils.accuracy(output, target, topk=(1,))[0]
            losses_m.update(loss.item(), input.size(0))
            top1_m.update(acc1.item(), output.size(0))
    return OrderedDict([("loss", losses_m.avg), ("top1", top1_m.avg)])


def main():
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    args.prefetcher = not args.no_prefetcher
    device = torch.device("cpu")  # bench: the CPU (train.py: utils.init_distributed_device)
    args.distributed, args.world_size, args.rank = False, 1, 0

    use_amp, amp_dtype = None, torch.float16
    if args.amp:
        use_amp = "native"
        assert args.amp_dtype in ("float16", "bfloat16")
        if args.amp_dtype == "bfloat16":
            amp_dtype = torch.bfloat16
    utils.random_seed(args.seed, args.rank)

    in_chans = 3
    if args.in_chans is not None:
        in_chans = args.in_chans
    elif args.input_size is not None:
        in_chans = args.input_size[0]
    model = create_model(args.model, pretrained=args.pretrained, in_chans=in_chans, num_classes=args.num_classes,
                         drop_rate=args.drop, drop_path_rate=args.drop_path, global_pool=args.gp,
                         **args.model_kwargs)
    if args.num_classes is None:
        args.num_classes = model.num_classes
    data_config = resolve_data_config(vars(args), model=model, verbose=False)
    model.to(device=device)
    if args.channels_last:
        model.to(memory_format=torch.channels_last)

    if not args.lr:
        global_batch_size = args.batch_size * args.world_size
        batch_ratio = global_batch_size / args.lr_base_size
        if not args.lr_base_scale:
            on = args.opt.lower()
            args.lr_base_scale = "sqrt" if any([o in on for o in ("ada", "lamb")]) else "linear"
        if args.lr_base_scale == "sqrt":
            batch_ratio = batch_ratio ** 0.5
        args.lr = args.lr_base * batch_ratio
    optimizer = create_optimizer_v2(model, **optimizer_kwargs(cfg=args))

    amp_autocast = suppress
    if use_amp == "native":
        amp_autocast = partial(torch.autocast, device_type=device.type, dtype=amp_dtype)
        # (train.py adds a loss scaler for float16 on CUDA only; bfloat16 needs none)

    dataset_train = create_dataset(args.dataset, root=args.data_dir, split=args.train_split, is_training=True,
                                   batch_size=args.batch_size, seed=args.seed,
                                   **({"input_img_mode": args.input_img_mode} if args.input_img_mode else {}))
    dataset_eval = create_dataset(args.dataset, root=args.data_dir, split=args.val_split, is_training=False,
                                  batch_size=args.batch_size,
                                  **({"input_img_mode": args.input_img_mode} if args.input_img_mode else {}))

    collate_fn = mixup_fn = None
    mixup_active = args.mixup > 0 or args.cutmix > 0. or args.cutmix_minmax is not None
    if mixup_active:
        mixup_args = dict(mixup_alpha=args.mixup, cutmix_alpha=args.cutmix, cutmix_minmax=args.cutmix_minmax,
                          prob=args.mixup_prob, switch_prob=args.mixup_switch_prob, mode=args.mixup_mode,
                          label_smoothing=args.smoothing, num_classes=args.num_classes)
        if args.prefetcher:
            collate_fn = FastCollateMixup(**mixup_args)
        else:
            mixup_fn = Mixup(**mixup_args)

    train_interpolation = args.train_interpolation
    if args.no_aug or not train_interpolation:
        train_interpolation = data_config["interpolation"]
    loader_train = create_loader(
        dataset_train, input_size=data_config["input_size"], batch_size=args.batch_size, is_training=True,
        use_prefetcher=args.prefetcher, no_aug=args.no_aug, re_prob=args.reprob, re_mode=args.remode,
        re_count=args.recount, scale=args.scale, ratio=args.ratio, hflip=args.hflip, vflip=args.vflip,
        color_jitter=args.color_jitter, auto_augment=args.aa, interpolation=train_interpolation,
        mean=data_config["mean"], std=data_config["std"], num_workers=args.workers, distributed=False,
        collate_fn=collate_fn, pin_memory=args.pin_mem, device=device, worker_seeding=args.worker_seeding)
    if args.pad_crop:  # bench: the Fashion-MNIST recipe's pad-crop + flip instead of timm's random-resized-crop
        size = data_config["input_size"][-1]
        tfl = [T.RandomCrop(size, padding=args.pad_crop, padding_mode="reflect"), T.RandomHorizontalFlip(args.hflip)]
        if args.prefetcher:
            tfl += [MaybePILToTensor()]  # uint8; fast_collate + PrefetchLoader normalise, as timm's own transforms
        else:
            tfl += [T.ToTensor(), T.Normalize(data_config["mean"], data_config["std"])]
        loader_train.dataset.transform = T.Compose(tfl)
    loader_eval = create_loader(
        dataset_eval, input_size=data_config["input_size"], batch_size=args.validation_batch_size or args.batch_size,
        is_training=False, use_prefetcher=args.prefetcher, interpolation=data_config["interpolation"],
        mean=data_config["mean"], std=data_config["std"], num_workers=args.workers, distributed=False,
        crop_pct=data_config["crop_pct"], pin_memory=args.pin_mem, device=device)

    if mixup_active:
        train_loss_fn = SoftTargetCrossEntropy()
    elif args.smoothing:
        train_loss_fn = LabelSmoothingCrossEntropy(smoothing=args.smoothing)
    else:
        train_loss_fn = nn.CrossEntropyLoss()
    validate_loss_fn = nn.CrossEntropyLoss()

    saver = None
    if args.output:
        os.makedirs(args.output, exist_ok=True)
        saver = utils.CheckpointSaver(model=model, optimizer=optimizer, args=args, checkpoint_dir=args.output,
                                      recovery_dir=args.output, decreasing=args.eval_metric == "loss",
                                      max_history=args.checkpoint_hist)

    updates_per_epoch = len(loader_train)
    lr_scheduler, num_epochs = create_scheduler_v2(optimizer, **scheduler_kwargs(args),
                                                   updates_per_epoch=updates_per_epoch)
    t_fit = time.time()
    epochs = []
    for epoch in range(num_epochs):
        t0 = time.time()
        train_metrics, n = train_one_epoch(epoch, model, loader_train, optimizer, train_loss_fn, args, device,
                                           lr_scheduler=lr_scheduler, amp_autocast=amp_autocast, mixup_fn=mixup_fn)
        train_s = time.time() - t0
        eval_metrics = validate(model, loader_eval, validate_loss_fn, args, device, amp_autocast=amp_autocast)
        if saver is not None:
            saver.save_checkpoint(epoch, metric=eval_metrics[args.eval_metric])
        if lr_scheduler is not None:
            lr_scheduler.step(epoch + 1, eval_metrics[args.eval_metric])
        now = time.time()
        epochs.append(dict(epoch=epoch + 1, train_images=n, train_s=round(train_s, 3),
                           train_img_per_s=round(n / train_s, 1), epoch_wall_s=round(now - t0, 3),
                           train_loss=round(train_metrics["loss"], 4),
                           test_acc=round(eval_metrics["top1"] / 100, 4), elapsed_s=round(now - T_START, 2)))
        if not args.json:
            print(json.dumps(epochs[-1]), flush=True)
    fit_s = time.time() - t_fit

    tta = None
    if args.tta_hflip:
        t0 = time.time()
        m = validate(model, loader_eval, validate_loss_fn, args, device, amp_autocast=amp_autocast, hflip=True)
        tta = dict(views=["identity", "hflip"], test_acc=round(m["top1"] / 100, 4), seconds=round(time.time() - t0, 2))

    n_train = sum(e["train_images"] for e in epochs)
    t_train = sum(e["train_s"] for e in epochs)
    print(json.dumps(dict(
        peer="timm", timm=timm.__version__, torch=torch.__version__, model=args.model,
        precision=("bf16" if amp_dtype == torch.bfloat16 else "fp16") if use_amp else "fp32",
        channels_last=args.channels_last, workers=args.workers, threads=torch.get_num_threads(),
        batch_size=args.batch_size, lr=args.lr, prefetcher=args.prefetcher, mixup=args.mixup,
        input_size=list(data_config["input_size"]), train_rows=len(dataset_train), valid_rows=len(dataset_eval),
        epochs=epochs, train_img_per_s=round(n_train / t_train, 1) if t_train else None,
        test_acc=epochs[-1]["test_acc"] if epochs else None, tta=tta,
        startup_s=round(t_fit - T_START, 2), fit_s=round(fit_s, 2), wall_s=round(time.time() - T_START, 2))))


if __name__ == "__main__":
    main()
