#!/usr/bin/env python3
"""torchvision's standard JPEG training pipeline, timed on kgtrain's photo benchmark data (issue 24 item 4).

The peer of `kgtrain bench-data` on data/photos (scripts/make_photo_jpegs.sh): a Dataset reading train.csv
(id,label; images at IMAGE_DIR/<id>.jpg), each item
    PIL.Image.open(path).convert("RGB")                       # the whole JPEG decoded (Pillow's libjpeg-turbo)
    transforms.RandomResizedCrop(224)                          # scale (0.08, 1), ratio (3/4, 4/3), bilinear, antialias
    transforms.RandomHorizontalFlip()
    transforms.ToTensor()
    transforms.Normalize(imagenet mean, std)
through a DataLoader(batch_size=64, shuffle=True, num_workers=N, persistent_workers), torch.set_num_threads(1) in
the main process and in each worker. One warm-up pass over the data (page cache, worker start), then --passes
timed passes; decode, augmentation, collation and the transfer of batches out of the workers are all inside the
time. Prints one JSON line: images/s in total and per core (per worker; workers=0 is one core), and images per
CPU-second (this process + its workers, from /proc): on a busy machine the wall-clock rates fall with the load,
the CPU-time rate much less.

--mode picks the decode:
  plain        the above, exactly torchvision's pipeline (the default).
  draft-short  Pillow's JPEG DCT-domain scaling before RandomResizedCrop: img.draft("RGB", (224, 224)) decodes at
               1/s, s in {1, 2, 4, 8} the largest power of two keeping both sides >= 224 (Pillow's rule: s <=
               min(W // 224, H // 224)); on 400-800 px photos s is 1 or 2 (2 when the short side >= 448). The crop is
               then drawn on the reduced image. Its geometry has the same distribution (RandomResizedCrop works in
               fractions of the area), but a crop narrower than 2 x 224 source pixels is now cut from fewer than 224
               decoded pixels and upsampled: small crops lose detail, so the crops' statistics CHANGE (what the
               usual PIL trick, "draft to >= 224 on the short side", gives).
  draft-crop   crop-aware reduced decoding, the scheme of issue 24 item 4: the RandomResizedCrop box is drawn
               first on the header's full size (Image.open reads no pixels), then img.draft asks for the whole
               image at a size where the crop stays >= 224 x 224 decoded pixels: draft("RGB", (ceil(W * 224 / cw),
               ceil(H * 224 / ch))), so s <= min(cw, ch) // 224: s >= 2 only when both crop sides are >= 2 x 224;
               then the box / s is resized to 224 x 224 (bilinear, antialiased, float box), flipped, normalized. The
               crop geometry is identical to plain's in distribution; the pixels differ only by libjpeg's scaled
               IDCT standing in for part of the antialiased downscale.
--stats prints, per mode, per-channel mean/std of the normalized output and the mean |horizontal gradient|
(a sharpness measure) over the timed passes, and how many images decoded at each 1/s, so the modes' crop
statistics can be compared. The sums' time is taken out of the wall time (not out of cpu_s), but with workers=0
they still slow the pipeline (caches): take rates from runs without --stats.

usage: .venv-torch/bin/python scripts/peers/pil_pipeline.py [--root data/photos] [--workers 0] [--mode plain]
       [--passes 2] [--batch 64] [--limit N] [--stats]
"""
import argparse
import json
import math
import os
import platform
import sys
import time

import torch
import torchvision
from PIL import Image, features
from torchvision import transforms

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


class Photos(torch.utils.data.Dataset):
    """The rows of a kgtrain-style CSV table (id,label), one JPEG per row at image_dir/<id>.jpg."""

    def __init__(self, root, csv, image_dir, mode, size, limit):
        with open(os.path.join(root, csv)) as f:
            header = f.readline().strip().split(",")
            id_col, label_col = header.index("id"), header.index("label")
            rows = [line.strip().split(",") for line in f if line.strip()]
        if limit:
            rows = rows[:limit]
        self.items = [(os.path.join(root, image_dir, r[id_col] + ".jpg"), int(r[label_col])) for r in rows]
        self.mode, self.size = mode, size
        # torchvision's defaults: scale (0.08, 1), ratio (3/4, 4/3), bilinear, antialias
        self.rrc = transforms.RandomResizedCrop(size)
        self.tail = transforms.Compose([
            transforms.RandomHorizontalFlip(),
            transforms.ToTensor(),
            transforms.Normalize(MEAN, STD),
        ])

    def __len__(self):
        return len(self.items)

    def __getitem__(self, k):
        path, label = self.items[k]
        scale = 1
        if self.mode == "plain":
            img = self.rrc(Image.open(path).convert("RGB"))
        elif self.mode == "draft-short":
            img = Image.open(path)
            scale = draft(img, (self.size, self.size))
            img = self.rrc(img.convert("RGB"))
        else:  # draft-crop
            img = Image.open(path)
            W, H = img.size
            top, left, ch, cw = self.rrc.get_params(img, self.rrc.scale, self.rrc.ratio)  # header size only
            s = scale = draft(img, (math.ceil(W * self.size / cw), math.ceil(H * self.size / ch)))
            img = img.convert("RGB")  # decoded at ceil(W / s) x ceil(H / s)
            box = (left / s, top / s, (left + cw) / s, (top + ch) / s)
            img = img.resize((self.size, self.size), Image.BILINEAR, box=box)  # antialiased, like F.resize on PIL
        return self.tail(img), label, scale


def draft(img, size):
    """Image.draft("RGB", size) and its s (decoding at 1/s): draft answers (mode, (0, 0, W / s, H / s)), or None
    when it changed nothing."""
    width = img.size[0]
    drafted = img.draft("RGB", size)
    return 1 if drafted is None else round(width / drafted[1][2])


def cpu_seconds(loader):
    """User + system CPU seconds of this process and of the loader's live worker processes (/proc)."""
    t = time.process_time()
    workers = getattr(getattr(loader, "_iterator", None), "_workers", None) or []
    for w in workers:
        try:
            with open(f"/proc/{w.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            t += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return t


def one_thread(_worker_id=None):
    torch.set_num_threads(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default="data/photos")
    ap.add_argument("--csv", default="train.csv")
    ap.add_argument("--image-dir", default="train")
    ap.add_argument("--mode", choices=("plain", "draft-short", "draft-crop"), default="plain")
    ap.add_argument("--draft", action="store_true", help="same as --mode draft-short")
    ap.add_argument("--workers", type=int, default=0, help="DataLoader workers (0: in this process, one core)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--passes", type=int, default=2, help="timed passes after the warm-up pass")
    ap.add_argument("--limit", type=int, default=0, help="only the first N rows (0: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--stats", action="store_true", help="also output mean/std/|gradient| of the batches")
    args = ap.parse_args()
    if args.draft:
        args.mode = "draft-short"
    one_thread()
    torch.manual_seed(args.seed)
    ds = Photos(args.root, args.csv, args.image_dir, args.mode, args.size, args.limit)
    dl = torch.utils.data.DataLoader(
        ds, batch_size=args.batch, shuffle=True, num_workers=args.workers, worker_init_fn=one_thread,
        persistent_workers=args.workers > 0, drop_last=False)

    def run_pass(acc=None):
        """(images, seconds) of one pass over the loader; the --stats sums are left out of the time."""
        n, t_stats = 0, 0.0
        t0 = time.perf_counter()
        for x, _y, s in dl:
            n += x.shape[0]
            if acc is not None:
                t = time.perf_counter()
                acc["sum"] += x.sum(dim=(0, 2, 3), dtype=torch.float64)
                acc["sq"] += (x.double() ** 2).sum(dim=(0, 2, 3))
                acc["grad"] += (x[..., 1:] - x[..., :-1]).abs().sum(dtype=torch.float64).item()
                acc["px"] += x.shape[0] * x.shape[2] * x.shape[3]
                acc["gpx"] += x.shape[0] * x.shape[1] * x.shape[2] * (x.shape[3] - 1)
                for v in s.tolist():
                    acc["scales"][str(v)] = acc["scales"].get(str(v), 0) + 1
                t_stats += time.perf_counter() - t
        return n, time.perf_counter() - t0 - t_stats

    load0 = os.getloadavg()
    _, warm_s = run_pass()  # warm-up: page cache, worker processes
    cpu0 = cpu_seconds(dl)
    acc = {"sum": torch.zeros(3, dtype=torch.float64), "sq": torch.zeros(3, dtype=torch.float64), "grad": 0.0,
           "px": 0, "gpx": 0, "scales": {}} if args.stats else None
    times, images = [], 0
    for _ in range(args.passes):
        n, t = run_pass(acc)
        images += n
        times.append(t)
    seconds = sum(times)
    cpu = cpu_seconds(dl) - cpu0  # includes the --stats sums when asked for
    cores = max(1, args.workers)
    out = {
        "pipeline": "torchvision-pil", "mode": args.mode, "workers": args.workers, "cores": cores,
        "batch": args.batch, "size": args.size, "files": len(ds), "passes": args.passes, "images": images,
        "seconds": round(seconds, 3), "images_per_s": round(images / seconds, 1),
        "images_per_s_per_core": round(images / seconds / cores, 1),
        "cpu_s": round(cpu, 3), "images_per_cpu_s": round(images / cpu, 1) if cpu > 0 else None,
        "pass_images_per_s": [round(len(ds) / t, 1) for t in times], "warmup_s": round(warm_s, 2),
        "loadavg_before": [round(v, 2) for v in load0], "loadavg_after": [round(v, 2) for v in os.getloadavg()],
        "nproc": os.cpu_count(), "pillow": Image.__version__, "libjpeg": features.version("jpg"),
        "libjpeg_turbo": features.check_feature("libjpeg_turbo"), "torch": torch.__version__,
        "torchvision": torchvision.__version__, "python": platform.python_version(),
    }
    if acc is not None:
        mean = acc["sum"] / acc["px"]
        std = (acc["sq"] / acc["px"] - mean ** 2).sqrt()
        out["stats"] = {"mean": [round(v, 4) for v in mean.tolist()], "std": [round(v, 4) for v in std.tolist()],
                        "mean_abs_dx": round(acc["grad"] / acc["gpx"], 4), "decode_scales": acc["scales"]}
    print(json.dumps(out))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
