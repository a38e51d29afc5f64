#!/usr/bin/env python3
"""The Python peer of `kgtrain bench-model` on a GPU: torchvision's resnet50 (the same network as
kgtrain's resnet50), one training step = forward + cross-entropy + backward + AdamW, bf16 autocast,
channels_last, synthetic images, in eager PyTorch. Prints the median images/s over timed steps
(CUDA-synchronized), the way bench-model reports it.
  python3 scripts/peer_resnet50.py [--batch 256] [--size 224] [--steps 20] [--warmup 5] [--layout channels_last]
Run by scripts/bench_gpu.sh beside kgtrain's figure (same GPU, same batch, same run)."""
import argparse, json, statistics, time
import torch, torchvision

p = argparse.ArgumentParser()
p.add_argument("--batch", type=int, default=256)
p.add_argument("--size", type=int, default=224)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--warmup", type=int, default=5)
p.add_argument("--classes", type=int, default=1000)
p.add_argument("--layout", default="channels_last", choices=["channels_last", "nchw"])
p.add_argument("--precision", default="bf16", choices=["bf16", "fp32"])
p.add_argument("--compile", action="store_true", help="torch.compile the model (not eager)")
p.add_argument("--foreach", default="auto", choices=["auto", "off", "fused"],
               help="AdamW's implementation: PyTorch's default (multi-tensor on CUDA), per parameter, or fused")
a = p.parse_args()

torch.backends.cudnn.benchmark = True
dev = torch.device("cuda")
fmt = torch.channels_last if a.layout == "channels_last" else torch.contiguous_format
model = torchvision.models.resnet50(num_classes=a.classes).to(dev, memory_format=fmt)
if a.compile:
    model = torch.compile(model)
impl = {"auto": {}, "off": {"foreach": False}, "fused": {"fused": True}}[a.foreach]
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2, **impl)
x = torch.randn(a.batch, 3, a.size, a.size, device=dev).contiguous(memory_format=fmt)
y = torch.randint(0, a.classes, (a.batch,), device=dev)
loss_fn = torch.nn.CrossEntropyLoss()

def step():
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
        loss = loss_fn(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()

for _ in range(a.warmup):
    step()
torch.cuda.synchronize()
times = []
for _ in range(a.steps):
    t0 = time.perf_counter()
    step()
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
med = statistics.median(times)
print(json.dumps({"peer": "pytorch-eager" + ("+compile" if a.compile else ""), "torch": torch.__version__,
                  "gpu": torch.cuda.get_device_name(), "batch": a.batch, "size": a.size, "layout": a.layout,
                  "precision": a.precision, "adamw": a.foreach, "median_step_s": med, "images_per_s": a.batch / med,
                  "peak_allocated_gib": torch.cuda.max_memory_allocated() / 2**30}))
