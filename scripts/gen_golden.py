#!/usr/bin/python3
"""Regenerates the committed golden fixtures under tests/golden/ from Python PyTorch.

The C++ tests compare kgtrain against these files; CI never runs Python. Run with Debian's
python3 (torch 1.13, numpy):  /usr/bin/python3 scripts/gen_golden.py [OUT_DIR]

  one_cycle.json              lr and beta1 at every step of torch's OneCycleLR on Adam, several configs
  tiny.safetensors            a safetensors file from a hand-written writer (F32, F16, I64, BF16, 0-d)
  tiny_safetensors.json       each tensor's dtype, shape and values (as floats) in that file
  resnet9_w4.safetensors      the peer's resnet9 (../shared/bench/peer_fmnist.py), width 4, 1 channel, 10
                              classes, seed 0, random BN statistics, under kgtrain's parameter names
  resnet9_forward.json        a fixed input (torch.manual_seed(1) randn, 2x1x28x28) and its eval-mode logits
"""
import json, os, struct, sys

import numpy as np
import torch
import torch.nn as nn

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden")


def write_json(name, obj):
    """One top-level key per line, values compact (lists of cases one per line): small and diffable."""
    def dump(v):
        return json.dumps(v, separators=(",", ":"))
    lines = []
    for k, v in obj.items():
        if isinstance(v, list) and v and isinstance(v[0], dict):
            lines.append(f"{dump(k)}:[\n" + ",\n".join(dump(x) for x in v) + "]")
        else:
            lines.append(f"{dump(k)}:{dump(v)}")
    with open(os.path.join(OUT, name), "w") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")


# ---------------------------------------------------------------------------------------------- one-cycle
# pct_start * total_steps must not be exactly 1: torch divides by the warm-up's end step (0 -> ZeroDivisionError).
ONE_CYCLE = [
    dict(total_steps=100, max_lr=3e-3, pct_start=0.25, anneal="cos"),
    dict(total_steps=100, max_lr=0.1, pct_start=0.3, anneal="linear"),
    dict(total_steps=37, max_lr=0.1, pct_start=0.3, anneal="linear"),
    dict(total_steps=37, max_lr=3e-3, pct_start=0.25, anneal="cos"),
    dict(total_steps=2, max_lr=3e-3, pct_start=0.25, anneal="cos"),
    dict(total_steps=2, max_lr=0.1, pct_start=0.3, anneal="linear"),
]


def one_cycle():
    cases = []
    for c in ONE_CYCLE:
        p = nn.Parameter(torch.zeros(1))
        opt = torch.optim.Adam([p], lr=c["max_lr"])
        sched = torch.optim.lr_scheduler.OneCycleLR(
            opt, max_lr=c["max_lr"], total_steps=c["total_steps"], pct_start=c["pct_start"], div_factor=25,
            final_div_factor=4000, anneal_strategy=c["anneal"], cycle_momentum=True, base_momentum=0.85,
            max_momentum=0.95)
        lr, mom = [], []
        for _ in range(c["total_steps"]):
            lr.append(opt.param_groups[0]["lr"])
            mom.append(opt.param_groups[0]["betas"][0])
            opt.step()
            sched.step()
        # kgtrain's keys for the same schedule: div_final = max_lr / final lr = div_factor * final_div_factor.
        cases.append(dict(c, div=25.0, div_final=25.0 * 4000.0, moms=[0.95, 0.85, 0.95], lr=lr, momentum=mom))
    write_json("one_cycle.json", {"generator": "scripts/gen_golden.py", "torch": torch.__version__, "cases": cases})


# -------------------------------------------------------------------------------------------- safetensors
ST_DTYPES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
             torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8",
             torch.bool: "BOOL"}


def tensor_bytes(t):
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: reinterpret the 16-bit patterns
        t = t.view(torch.int16)
    assert sys.byteorder == "little"  # safetensors data is little-endian
    return t.numpy().tobytes()


def encode_safetensors(tensors, metadata=None):
    """The layout of the reference `safetensors` library: u64 LE header length, the JSON header (keys
    sorted, __metadata__ first, compact) padded with spaces to 8 bytes, then each tensor's raw LE bytes."""
    header, blobs, offset = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name in sorted(tensors):
        b = tensor_bytes(tensors[name])
        header[name] = {"dtype": ST_DTYPES[tensors[name].dtype], "shape": list(tensors[name].shape),
                        "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def tiny_safetensors():
    tensors = {
        "layer.weight": torch.tensor([[1.5, -2.25, 3.0], [0.1, -0.0, 1e-8]], dtype=torch.float32),
        "half": torch.tensor([0.5, -1.0, 65504.0, 0.1], dtype=torch.float16),  # 0.1 rounds in fp16
        "steps": torch.tensor([0, -7, 1 << 40], dtype=torch.int64),
        "brain.float": torch.tensor([[1.0, -3.5], [0.1, 256.0]], dtype=torch.bfloat16),  # 0.1 rounds in bf16
        "scalar": torch.tensor(42.25, dtype=torch.float32),
    }
    with open(os.path.join(OUT, "tiny.safetensors"), "wb") as f:
        f.write(encode_safetensors(tensors, {"format": "pt"}))
    desc = {name: {"dtype": ST_DTYPES[t.dtype], "shape": list(t.shape), "values": t.double().flatten().tolist()}
            for name, t in sorted(tensors.items())}
    write_json("tiny_safetensors.json", {"generator": "scripts/gen_golden.py", "tensors": desc})


# ------------------------------------------------------------------------------------------------ resnet9
def block(ci, co):  # exactly ../shared/bench/peer_fmnist.py
    return nn.Sequential(nn.Conv2d(ci, co, 3, padding=1, bias=False), nn.BatchNorm2d(co), nn.ReLU(inplace=True))


class Res(nn.Module):
    def __init__(s, c):
        super().__init__(); s.a = block(c, c); s.b = block(c, c)

    def forward(s, x):
        return x + s.b(s.a(x))


def peer_resnet9(w, cin=1, classes=10):
    return nn.Sequential(block(cin, w), block(w, 2 * w), nn.MaxPool2d(2), Res(2 * w), block(2 * w, 4 * w),
                         nn.MaxPool2d(2), block(4 * w, 8 * w), nn.MaxPool2d(2), Res(8 * w), nn.AdaptiveMaxPool2d(1),
                         nn.Flatten(), nn.Linear(8 * w, classes))


# Sequential index -> kgtrain module name (lib/model/resnet9.cpp); inside a block 0 = conv, 1 = bn.
SEQ_TO_KG = {"0": "prep", "1": "layer1", "3": "res1", "4": "layer2", "6": "layer3", "8": "res3", "11": "fc"}


def kg_name(key):
    parts = key.split(".")
    out = [SEQ_TO_KG[parts[0]]]
    rest = parts[1:]
    if out[0] in ("res1", "res3"):
        out.append(rest[0]); rest = rest[1:]  # a | b
    if out[0] != "fc":
        out.append({"0": "conv", "1": "bn"}[rest[0]]); rest = rest[1:]
    return ".".join(out + rest)


def f32_short(v):
    """The shortest decimal that round-trips the float32 `v`, as a Python float (JSON-friendly)."""
    return float(np.format_float_positional(np.float32(v), unique=True, trim="-"))


def resnet9():
    torch.manual_seed(0)
    model = peer_resnet9(4)
    # BN statistics: first calibrated on random images (cumulative averages), so activations keep a useful scale
    # and the logits depend on the input; then scaled by random positive factors, with random affine parameters,
    # so that loading every BN tensor under the right name matters.
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn(16, 1, 28, 28))
    g = torch.Generator().manual_seed(123)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            with torch.no_grad():
                m.running_mean.mul_(torch.rand(c, generator=g) * 0.4 + 0.8)
                m.running_var.mul_(torch.rand(c, generator=g) + 0.5)
                m.weight.copy_(torch.rand(c, generator=g) + 0.5)
                m.bias.copy_(torch.randn(c, generator=g) * 0.1)
            m.num_batches_tracked.fill_(7)
            m.momentum = 0.1
    model.eval()
    sd = {kg_name(k): v for k, v in model.state_dict().items()}
    assert len(sd) == len(model.state_dict())
    with open(os.path.join(OUT, "resnet9_w4.safetensors"), "wb") as f:
        f.write(encode_safetensors(sd, {"format": "pt"}))

    torch.manual_seed(1)
    x = torch.randn(2, 1, 28, 28)
    values = [f32_short(v) for v in x.flatten().tolist()]
    x = torch.tensor(values, dtype=torch.float32).reshape(2, 1, 28, 28)  # exactly what the JSON holds
    with torch.no_grad():
        y = model(x).double()
    write_json("resnet9_forward.json", {
        "generator": "scripts/gen_golden.py", "torch": torch.__version__, "width": 4, "in_chans": 1,
        "num_outputs": 10, "weights": "resnet9_w4.safetensors", "input_shape": list(x.shape),
        "logits_shape": list(y.shape), "logits": y.flatten().tolist(), "input": values})


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    torch.set_num_threads(1)
    one_cycle()
    tiny_safetensors()
    resnet9()
    for n in sorted(os.listdir(OUT)):
        print(f"{os.path.getsize(os.path.join(OUT, n)):8d}  {os.path.join(OUT, n)}")
