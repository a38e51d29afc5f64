"""Writes the torch.save fixtures of tests/model/test_torch_save.cpp into tests/golden/pth/ (committed; 130 KB).

python (PyTorch >= 1.6):  .venv-torch/bin/python scripts/gen_pth_fixtures.py [OUT_DIR]

  resnet9_w4.pth     torch.save(model.state_dict()): an OrderedDict with _metadata, the tensors of
                     tests/golden/resnet9_w4.safetensors (kgtrain's resnet9, width 4, 1 channel, 10 classes)
  checkpoint.pth     a training checkpoint as timm's train.py writes one: epoch, arch, args (an argparse.Namespace,
                     which a reader must never build), an optimizer entry, and state_dict with DataParallel's
                     "module." prefix; its tensors are those of tensors.pth's "f32" and "i64"
  tensors.pth        one tensor per dtype kgtrain reads, a 0-d and an empty one, and views: a transposed one, a
                     slice at an offset and two tensors that share one storage
  module.pth         torch.save(nn.Linear(2, 3)): a pickled module, which kgtrain refuses
  legacy.pth         tensors.pth's f32 in the format before PyTorch 1.6 (_use_new_zipfile_serialization=False)

Every value is a small integer or a multiple of 1/8, exact in every dtype, so the test can state them.
"""
import argparse
import collections
import json
import os
import struct
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "tests", "golden", "pth")
SAFETENSORS = os.path.join(HERE, "..", "tests", "golden", "resnet9_w4.safetensors")
DTYPES = {"F32": torch.float32, "F64": torch.float64, "F16": torch.float16, "BF16": torch.bfloat16,
          "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8, "BOOL": torch.bool}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = collections.OrderedDict()
    for name, d in header.items():
        if name == "__metadata__":
            continue
        lo, hi = d["data_offsets"]
        t = torch.frombuffer(bytearray(data[8 + n + lo:8 + n + hi]), dtype=DTYPES[d["dtype"]])
        out[name] = t.reshape(d["shape"]).clone()
    return out


def tensors():
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 8  # 0, 0.125, ... 2.875
    shared = torch.arange(10, dtype=torch.int64)
    return {
        "f32": base.clone(),
        "f64": base.double(),
        "f16": base.half(),
        "bf16": base.bfloat16(),
        "i64": torch.tensor([-3, 0, 7, 2 ** 40]),
        "i32": torch.tensor([[-1, 2], [3, -4]], dtype=torch.int32),
        "u8": torch.tensor([0, 1, 255], dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]),
        "scalar": torch.tensor(1.5),
        "empty": torch.zeros(0, 3),
        "transposed": base.t(),            # strides (1, 6)
        "slice": base[1:3, 2:5],           # offset 8, strides (6, 1)
        "shared_a": shared[:4],            # one storage, two tensors
        "shared_b": shared[5:],
    }


def main():
    os.makedirs(OUT, exist_ok=True)
    sd = read_safetensors(SAFETENSORS)
    sd._metadata = collections.OrderedDict({"": {"version": 1}})  # as Module.state_dict() sets it
    torch.save(sd, os.path.join(OUT, "resnet9_w4.pth"))

    t = tensors()
    torch.save(t, os.path.join(OUT, "tensors.pth"))
    state = collections.OrderedDict([("module.fc.weight", t["f32"]), ("module.fc.steps", t["i64"])])
    torch.save({"epoch": 3, "arch": "resnet9", "args": argparse.Namespace(model="resnet9", lr=0.1),
                "optimizer": {"state": {}, "param_groups": [{"lr": 0.1, "params": [0, 1]}]},
                "state_dict": state, "metric": 0.5, "version": 2}, os.path.join(OUT, "checkpoint.pth"))
    torch.manual_seed(0)
    torch.save(torch.nn.Linear(2, 3), os.path.join(OUT, "module.pth"))
    torch.save({"f32": t["f32"]}, os.path.join(OUT, "legacy.pth"), _use_new_zipfile_serialization=False)
    for name in sorted(os.listdir(OUT)):
        print(f"{name}: {os.path.getsize(os.path.join(OUT, name))} bytes")


if __name__ == "__main__":
    main()
