#!/usr/bin/python3
"""kgtrain's own Python reference: the training loop a Kaggle competitor writes in PyTorch for the same
job as recipes/fashion_mnist.toml, so `kgtrain fit` can be compared with it (scripts/bench_vs_python.sh).

Data: the Kaggle layout (DATA/train.csv id,label with DATA/train/<id>.png; DATA/test_labels.csv id,label
with DATA/test/<id>.png), read with PIL in a Dataset, batched by DataLoader worker processes.
Model: resnet9 (Page's DAWNBench network, the nn.Sequential of ../shared/bench/peer_fmnist.py) at width 16.
Training: batch 256 (drop_last), pad-2 reflect random crop + horizontal flip, normalize 0.2860/0.3530,
AdamW lr 3e-3 weight decay 5e-4 (none on biases and BatchNorm weights, as kgtrain's optim.decay_norm_bias =
false), OneCycleLR(pct_start=0.25, div_factor=25, final_div_factor=4000) stepped per batch (kgtrain's
one_cycle defaults: div 25, div_final 1e5, moms 0.95/0.85/0.95, cos), cross-entropy with label smoothing 0.1.

Prints one JSON line: training images/s per epoch, eval images/s, test accuracy, wall seconds.
usage: peer_reference.py DATA EPOCHS [--limit N] [--workers N] [--threads N] [--width W] [--bs N] [--seed S]
  --limit N   use only the first N rows of train.csv and of test_labels.csv (quick runs)
Needs Debian's python3-torch and python3-pil: run it with /usr/bin/python3."""
import argparse, csv, json, os, time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image

p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
p.add_argument("data", help="folder with train.csv, train/, test_labels.csv, test/")
p.add_argument("epochs", type=int)
p.add_argument("--limit", type=int, default=0, help="first N rows of train.csv and test_labels.csv (0: all)")
p.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
p.add_argument("--threads", type=int, default=os.cpu_count(), help="torch intra-op threads")
p.add_argument("--width", type=int, default=16)
p.add_argument("--bs", type=int, default=256)
p.add_argument("--seed", type=int, default=42)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(a.seed)
np.random.seed(a.seed)
MEAN, STD = 0.2860, 0.3530


class KaggleImages(torch.utils.data.Dataset):
    def __init__(self, csv_name, image_dir, train):
        with open(os.path.join(a.data, csv_name), newline="") as f:
            rows = list(csv.DictReader(f))
        if a.limit:
            rows = rows[:a.limit]
        self.ids = [r["id"] for r in rows]
        self.labels = [int(r["label"]) for r in rows]
        self.dir, self.train = os.path.join(a.data, image_dir), train

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        with Image.open(os.path.join(self.dir, f"{self.ids[i]}.png")) as im:
            x = torch.from_numpy(np.asarray(im.convert("L"), dtype=np.float32) / 255.0).unsqueeze(0)
        if self.train:
            x = F.pad(x.unsqueeze(0), (2, 2, 2, 2), mode="reflect").squeeze(0)
            dx, dy = np.random.randint(0, 5, 2)
            x = x[:, dy:dy + 28, dx:dx + 28]
            if np.random.rand() < 0.5:
                x = x.flip(2)
        return (x - MEAN) / STD, self.labels[i]


def worker_init(worker_id):  # distinct augmentation streams per worker and epoch
    np.random.seed((torch.initial_seed() + worker_id) % 2**32)


def conv_bn(ci, co):
    return nn.Sequential(nn.Conv2d(ci, co, 3, padding=1, bias=False), nn.BatchNorm2d(co), nn.ReLU(inplace=True))


class Residual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.a, self.b = conv_bn(c, c), conv_bn(c, c)

    def forward(self, x):
        return x + self.b(self.a(x))


def resnet9(w, in_chans=1, classes=10):
    return nn.Sequential(conv_bn(in_chans, w), conv_bn(w, 2 * w), nn.MaxPool2d(2), Residual(2 * w),
                         conv_bn(2 * w, 4 * w), nn.MaxPool2d(2), conv_bn(4 * w, 8 * w), nn.MaxPool2d(2),
                         Residual(8 * w), nn.AdaptiveMaxPool2d(1), nn.Flatten(), nn.Linear(8 * w, classes))


train_set = KaggleImages("train.csv", "train", True)
test_set = KaggleImages("test_labels.csv", "test", False)
kw = dict(num_workers=a.workers, pin_memory=False, persistent_workers=a.workers > 0,
          worker_init_fn=worker_init if a.workers > 0 else None)
train_dl = torch.utils.data.DataLoader(train_set, batch_size=a.bs, shuffle=True, drop_last=True, **kw)
test_dl = torch.utils.data.DataLoader(test_set, batch_size=512, shuffle=False, **kw)
if len(train_dl) * a.epochs < 2:
    raise SystemExit(f"need at least 2 optimizer steps: {len(train_set)} rows, batch {a.bs}, {a.epochs} epochs")

model = resnet9(a.width)
decay = [p for p in model.parameters() if p.ndim > 1]
no_decay = [p for p in model.parameters() if p.ndim <= 1]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": 5e-4}, {"params": no_decay, "weight_decay": 0.0}], lr=3e-3)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=a.epochs * len(train_dl), pct_start=0.25,
                                            div_factor=25, final_div_factor=4000)
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

ips, losses = [], []
t_start = time.time()
for epoch in range(a.epochs):
    model.train()
    t0, n, total = time.time(), 0, 0.0
    for x, y in train_dl:
        opt.zero_grad(set_to_none=True)
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
        sched.step()
        n += len(y)
        total += loss.item() * len(y)
    ips.append(n / (time.time() - t0))
    losses.append(total / max(n, 1))

model.eval()
correct, t0 = 0, time.time()
with torch.no_grad():
    for x, y in test_dl:
        correct += (model(x).argmax(1) == y).sum().item()
eval_s = time.time() - t0
print(json.dumps({"reference": "kgtrain scripts/peer_reference.py", "torch": torch.__version__, "epochs": a.epochs,
                  "width": a.width, "batch_size": a.bs, "workers": a.workers, "threads": a.threads,
                  "train_rows": len(train_set), "train_img_per_s": [round(v, 1) for v in ips],
                  "train_loss": [round(v, 4) for v in losses], "eval_img_per_s": round(len(test_set) / eval_s, 1),
                  "test_acc": round(correct / max(len(test_set), 1), 4), "wall_s": round(time.time() - t_start, 1)}))
