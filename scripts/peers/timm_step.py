"""timm's own training step on synthetic input, timed as `kgtrain bench-model` times kgtrain's (scripts/bench_backbones.sh).

  python scripts/peers/timm_step.py --model vit_small_patch16_224 --size 128 --batch 16 --steps 5 --warmup 1 \
      --layout channels_last --threads 2 [--bf16]
One model, one layout: timm.create_model(model, num_classes=10) (a ViT or Swin built for --size, as kgtrain builds
it for data.image_size), train mode, timm's AdamW (create_optimizer_v2("adamw", lr 1e-3, weight_decay 0.05: no decay
on biases, norms and the model's no_weight_decay() names, as kgtrain's), cross-entropy on random labels; each step is
zero_grad, forward, backward, optimizer step, on the same input tensor (uniform [0, 1) as kgtrain's synthetic batch),
--warmup untimed steps first. --bf16: torch.autocast("cpu", torch.bfloat16) around forward and loss, as kgtrain's
bf16 precision. Prints one JSON line: model, layout, batch, size, median_step_seconds, images_per_s, peer.
kgtrain's networks for torchvision's files that timm has no model of (tv_efficientnet_b5..b7: TF's weights with
PyTorch's padding; efficientnet_v2_s/m/l: torchvision's EfficientNetV2) are timed against torchvision's own model
(torchvision.models.<name>(num_classes=10, dropout=0, stochastic_depth_prob=0), as kgtrain's and timm's defaults:
no dropout, no drop path) with the same timm optimizer and step; "peer" says which library built the model.
"""
import argparse
import json
import statistics
import time

import timm
import torch
import torch.nn.functional as F
from timm.optim import create_optimizer_v2

# kgtrain's model.name -> torchvision's builder, for the networks timm has no model of (model/weights/torchvision_names.h).
TORCHVISION_ONLY = {"tv_efficientnet_b5": "efficientnet_b5", "tv_efficientnet_b6": "efficientnet_b6",
                    "tv_efficientnet_b7": "efficientnet_b7", "efficientnet_v2_s": "efficientnet_v2_s",
                    "efficientnet_v2_m": "efficientnet_v2_m", "efficientnet_v2_l": "efficientnet_v2_l"}


def build(name, size):
    """(model, peer): timm's model of that name, or torchvision's for kgtrain's torchvision-only networks."""
    if name in TORCHVISION_ONLY:
        import torchvision
        builder = getattr(torchvision.models, TORCHVISION_ONLY[name])
        model = builder(weights=None, num_classes=10, dropout=0.0, stochastic_depth_prob=0.0)
        return model, f"torchvision {torchvision.__version__} {TORCHVISION_ONLY[name]}"
    kwargs = {"img_size": size} if name.startswith(("vit_", "deit", "swin_")) else {}
    return timm.create_model(name, pretrained=False, num_classes=10, **kwargs), f"timm {timm.__version__}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--layout", choices=("nchw", "channels_last"), default="nchw")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--bf16", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model, peer = build(a.model, a.size)
    model = model.train()
    fmt = torch.channels_last if a.layout == "channels_last" else torch.contiguous_format
    model = model.to(memory_format=fmt)
    opt = create_optimizer_v2(model, "adamw", lr=1e-3, weight_decay=0.05)
    x = torch.rand(a.batch, 3, a.size, a.size).contiguous(memory_format=fmt)
    y = torch.randint(0, 10, (a.batch,))
    times = []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(json.dumps({"model": a.model, "layout": a.layout, "batch": a.batch, "size": a.size, "bf16": a.bf16,
                      "peer": peer, "median_step_seconds": med, "images_per_s": a.batch / med, "step_seconds": times}))


if __name__ == "__main__":
    main()
