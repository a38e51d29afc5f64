"""Golden names, shapes and logits of timm's own models for tests/model/test_timm_parity.cpp.

The other architecture fixtures (gen_resnet.py, gen_efficientnet.py, gen_convnext.py) come from torchvision
with its names mapped to timm's; this one comes from PyPI timm itself, so CI (which has no timm) checks
that kgtrain's resnet18/34/50, efficientnet_b0/b2, convnext_tiny, resnext50_32x4d, seresnext50_32x4d,
tf_efficientnet_b0, tf_efficientnetv2_s, vit_tiny_patch16_224, deit3_small_patch16_224 and swin_tiny_patch4_window7_224
(the last three built for 64 px) are timm's networks: the same state_dict names and shapes (num_batches_tracked included, shape []), and
the same logits for the same weights. For each model, timm.create_model(arch, pretrained=False, num_classes=10, in_chans=3,
drop_rate=0, drop_path_rate=0), filled from det_weights.py by timm's names (no renaming: kgtrain uses
timm's), forward in float64 on det_input([2, 3, 64, 64]):
  eval_logits             eval mode, the filled running statistics
  train_logits            train mode (batch statistics), BatchNorm momentum 1, so the pass sets every running
                          statistic to the batch's
  calibrated_eval_logits  eval mode again with those statistics: logits that depend on the input (through
                          ~50 BatchNorms with det_fill's statistics the signal fades; efficientnet's
                          eval_logits are the same for both images)
Fill: det_fill for the BatchNorm networks; ConvNeXt, the ViTs and Swin (no BatchNorm to calibrate) takes det_fill's values
read at flat index (k * 7919) % numel, as gen_convnext.py does (plain det_fill collapses its output to
nearly a constant; eca_nfnet_l0's weight-standardised convs collapse either fill's output to a constant, so it is
checked against timm by scripts/check_timm_parity.py alone, in CI). No weights are stored: the C++ test makes the same ones.
  .venv-torch/bin/python scripts/golden/gen_timm.py   (PyPI torch + timm; writes tests/golden/timm_parity.json)
"""
import json
import os
import sys

import timm
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from det_weights import det_fill, det_input, det_tensor, three_logits  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
OUT = os.path.join(ROOT, "tests", "golden", "timm_parity.json")
MODELS = ("resnet18", "resnet34", "resnet50", "efficientnet_b0", "efficientnet_b2", "convnext_tiny", "resnext50_32x4d",
          "seresnext50_32x4d", "tf_efficientnet_b0", "tf_efficientnetv2_s", "vit_tiny_patch16_224",
          "deit3_small_patch16_224", "swin_tiny_patch4_window7_224")
NUM_CLASSES = 10
INPUT_SHAPE = [2, 3, 64, 64]
SCRAMBLE = 7919


def det_fill_scrambled(model):
    """Parameters: det_tensor's values at flat index (k * 7919) % numel; buffers: det_fill's."""
    with torch.no_grad():
        params = dict(model.named_parameters())
        for name, t in model.state_dict().items():
            if not t.is_floating_point():
                continue
            v = det_tensor(name, list(t.shape)).flatten()
            if name in params:
                n = v.numel()
                assert n % SCRAMBLE != 0, name + ": the scramble is no permutation"
                v = v[(torch.arange(n, dtype=torch.int64) * SCRAMBLE) % n]
            t.copy_(v.reshape(t.shape))


def generate(arch):
    # A ViT or Swin is built for the input's size, as kgtrain builds it for data.image_size.
    size = {"img_size": INPUT_SHAPE[2]} if arch.startswith(("vit_", "deit", "swin_")) else {}
    model = timm.create_model(arch, pretrained=False, num_classes=NUM_CLASSES, in_chans=INPUT_SHAPE[1],
                              drop_rate=0.0, drop_path_rate=0.0, **size)
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    fill = "det_fill" if bns else "det_fill_scrambled"
    (det_fill if bns else det_fill_scrambled)(model)
    shapes = {name: list(t.shape) for name, t in model.state_dict().items()}
    model.double()
    x = det_input(INPUT_SHAPE).double()
    eval_logits, train_logits, calibrated = three_logits(model, bns, x)
    spread = float((calibrated[0] - calibrated[1]).abs().max())
    assert spread > 0.005, f"{arch}: the calibrated logits hardly depend on the input ({spread:.3g})"
    print(f"{arch}: {len(shapes)} tensors, {fill}; calibrated logits max |.| {float(calibrated.abs().max()):.3g}, "
          f"the two images differ by {spread:.3g}")
    return {
        "model": arch,
        "fill": fill,
        "num_params": sum(p.numel() for p in model.parameters()),
        "logits_shape": list(eval_logits.shape),
        "eval_logits": eval_logits.flatten().tolist(),
        "train_logits": train_logits.flatten().tolist(),
        "calibrated_eval_logits": calibrated.flatten().tolist(),
        "shapes": shapes,
    }


def dump(v):
    return json.dumps(v, separators=(",", ":"))


def main():
    head = {"generator": "scripts/golden/gen_timm.py", "timm": timm.__version__, "torch": torch.__version__,
            "dtype": "float64", "in_chans": INPUT_SHAPE[1], "num_outputs": NUM_CLASSES, "input": "det_input",
            "input_shape": INPUT_SHAPE}
    lines = [f"{dump(k)}:{dump(v)}" for k, v in head.items()]
    models = []
    for arch in MODELS:
        g = generate(arch)
        # One key per line and one tensor per line of "shapes": small and diffable.
        shapes = ",\n".join(f"{dump(n)}:{dump(s)}" for n, s in g.pop("shapes").items())
        body = ",\n".join(f"{dump(k)}:{dump(v)}" for k, v in g.items())
        models.append("{\n" + body + ',\n"shapes":{\n' + shapes + "}}")
    lines.append('"models":[\n' + ",\n".join(models) + "]")
    with open(OUT, "w") as f:
        f.write("{\n" + ",\n".join(lines) + "\n}\n")
    json.load(open(OUT))  # well formed
    print(f"wrote {os.path.relpath(OUT, ROOT)}: {os.path.getsize(OUT)} bytes")


if __name__ == "__main__":
    main()
