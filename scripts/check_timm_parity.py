"""kgtrain and PyPI timm agree on every backbone kgtrain builds, weights moving both ways; torchvision's files load.

  bash scripts/check_timm_parity.sh [--all | -- ARGS]      (makes .venv-timm; CI runs one model of each block kind)
  .venv-timm/bin/python scripts/check_timm_parity.py [--kgtrain build-cuda/kgtrain] [--models resnet18 ...]
      [--torchvision efficientnet_b0 ...] [--keep DIR] [--seed 0]
Checked with timm 1.0.31, torchvision 0.26.0, torch 2.11.

For each model, in a scratch folder (--keep DIR keeps it):
  forward  timm.create_model(arch, pretrained=False, num_classes=10, in_chans=3; a ViT or Swin for 64 px), seeded,
           made less degenerate than timm's init (which zeroes the last BatchNorm of each residual block, sets
           ConvNeXt's layer scale to 1e-6 and NFNet's last conv gains to 0): 1-D weights, layer scales, gains, biases
           and positions are redrawn; the BatchNorm running statistics are the average of 4 train-mode batches of 8
           of the images plus noise, so eval-mode BatchNorm is really tested; the classifier is scaled to logits of
           standard deviation 2, so the softmax is not saturated. Saved with
           safetensors.torch.save_file(model.state_dict()), exactly as a timm Hugging Face model.safetensors (no
           renaming). `kgtrain tta-predict --weights` predicts 16 generated 64 px RGB PNGs (one identity view, fp32,
           CPU; the images are already 64 px, so no resize); timm predicts the same pixels, preprocessed as kgtrain
           does (x / 255 as float32, then (x - mean) / std in double, ImageNet mean and std).
  reverse  `kgtrain fit --weights` that file for 2 updates (8 training images, batch 4, AdamW at a constant lr
           1e-3) saves checkpoints/last/model.safetensors; timm.create_model(arch, pretrained=False, num_classes=10)
           .load_state_dict(..., strict=True) loads it, and predicts the same images as `kgtrain tta-predict` does
           with it.
  224 px   (ViT, DeiT, Swin) weights of timm's 224 px model, loaded by kgtrain at 64 px (positions or relative
           position tables resampled) and by timm's own checkpoint_filter_fn at 64 px: the same predictions.
For each --torchvision name: torchvision.models.<name>(num_classes=10; a ViT for 64 px), made less degenerate the same
way, saved with torch.save(model.state_dict()) (torchvision's names: features.*, encoder.*, classifier.*), predicted
through `tta-predict --weights file.pth` by kgtrain's network of the same computation (TORCHVISION below: the name,
or timm's name for it, or tv_efficientnet_b5..b7 for the TF-ported weights) against torchvision's own forward.
--rest-forward-only: every model not in --models too, the forward check alone, but the _384 names (their network is
their _224 sibling's; CI: 59 of the 68 models, all 16 torchvision files).
Pass: max |p_timm - p_kgtrain| < 1e-4 in every direction (float32), a strict load, and weights that changed in fit.
Prints one row a check; exit 1 on any failure.
"""
import argparse
import csv
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import safetensors.torch
import timm
import torch
from timm.models import swin_transformer, vision_transformer
from PIL import Image

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
MODELS = ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "resnext50_32x4d", "resnext101_32x8d",
          "seresnext50_32x4d", "seresnext101_32x8d", "efficientnet_b0", "efficientnet_b2", "efficientnet_b5",
          "tf_efficientnet_b0", "tf_efficientnet_b1", "tf_efficientnet_b2", "tf_efficientnet_b3", "tf_efficientnet_b4",
          "tf_efficientnet_b5", "tf_efficientnet_b6", "tf_efficientnet_b7", "efficientnetv2_s", "efficientnetv2_m",
          "tf_efficientnetv2_s", "tf_efficientnetv2_m", "efficientnetv2_rw_s", "efficientnetv2_rw_m", "convnext_tiny",
          "convnext_base",
          "convnext_large", "vit_tiny_patch16_224", "vit_small_patch16_224", "vit_base_patch16_224",
          "vit_base_patch32_224", "deit_small_patch16_224", "deit3_small_patch16_224", "swin_tiny_patch4_window7_224",
          "swin_small_patch4_window7_224", "swin_base_patch4_window12_384", "eca_nfnet_l0", "eca_nfnet_l1",
          "wide_resnet50_2", "resnext101_64x4d", "efficientnetv2_l", "tf_efficientnetv2_l",
          # the rest of kgtrain's registry: each a larger (or smaller) sibling of a model above, its own figure
          "efficientnet_b1", "efficientnet_b3", "efficientnet_b4", "efficientnet_b6", "efficientnet_b7",
          "convnext_small", "wide_resnet101_2", "eca_nfnet_l2", "vit_large_patch16_224", "deit_tiny_patch16_224",
          "deit_base_patch16_224", "deit3_base_patch16_224", "deit3_large_patch16_224",
          "swin_base_patch4_window7_224", "swin_large_patch4_window7_224",
          # the _384 names: timm's and kgtrain's networks for data.image_size, the same as their _224 sibling's
          "vit_tiny_patch16_384", "vit_small_patch16_384", "vit_base_patch16_384", "vit_large_patch16_384",
          "vit_base_patch32_384", "deit_base_patch16_384", "deit3_small_patch16_384", "deit3_base_patch16_384",
          "deit3_large_patch16_384")
# The _384 names build their _224 sibling's network for data.image_size, in timm and in kgtrain: --rest-forward-only
# (CI) leaves them out; --all and --models check them like any other.
ALIASES = {m: m.replace("_384", "_224") for m in MODELS if m.endswith("_384") and m.replace("_384", "_224") in MODELS}
# Transformers built for the image size: timm builds them for 64 px too, and their 224 px weights are resampled.
SIZED = ("vit_", "deit", "swin_")
# torchvision's name -> kgtrain's network of the same computation (model/weights/torchvision_names.h).
TORCHVISION = {"resnet50": "resnet50", "resnext50_32x4d": "resnext50_32x4d", "wide_resnet50_2": "wide_resnet50_2",
               "efficientnet_b0": "efficientnet_b0", "efficientnet_b3": "efficientnet_b3",
               "efficientnet_b4": "efficientnet_b4", "efficientnet_b5": "tv_efficientnet_b5",
               "efficientnet_v2_s": "efficientnet_v2_s", "efficientnet_v2_m": "efficientnet_v2_m",
               "convnext_tiny": "convnext_tiny", "vit_b_16": "vit_base_patch16_224", "vit_b_32": "vit_base_patch32_224",
               "swin_t": "swin_tiny_patch4_window7_224", "efficientnet_b6": "tv_efficientnet_b6",
               "efficientnet_b7": "tv_efficientnet_b7", "efficientnet_v2_l": "efficientnet_v2_l"}
N_IMAGES, SIZE, CLASSES, TOL = 16, 64, 10, 1e-4
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
RECIPE = """# check_timm_parity.py: identity view only, fp32 on the CPU, images already at data.image_size (no resize).
[run]
name = "timm_parity"
seed = {seed}
[data]
root = "{root}"
channels = 3
image_size = {size}
num_classes = {classes}
num_workers = 0
augment = [{{ name = "normalize", mean = {mean}, std = {std} }}]
[device]
name = "cpu"
precision = "fp32"
channels_last = false
[cv]
folds = 2
fold = 0
[optim]
name = "adamw"
lr = 1e-3
[schedule]
name = "step"
step_size = 100
[train]
epochs = 1
batch_size = 4
eval_batch_size = {n}
[tta]
views = ["identity"]
"""


def make_data(root, seed, size=SIZE):
    """16 RGB images (smooth colour fields plus noise, each channel its own) in kgtrain's csv layout."""
    rng = np.random.default_rng(seed)
    ids = [f"img{i:02d}" for i in range(N_IMAGES)]
    for sub in ("train", "test"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    for i, name in enumerate(ids):
        coarse = rng.uniform(0, 255, (8, 8, 3)).astype(np.uint8)
        img = np.asarray(Image.fromarray(coarse).resize((size, size), Image.BILINEAR), dtype=np.float64)
        img = np.clip(img + rng.normal(0, 20, img.shape), 0, 255).astype(np.uint8)
        for sub in ("train", "test"):
            Image.fromarray(img, "RGB").save(os.path.join(root, sub, name + ".png"))
    with open(os.path.join(root, "train.csv"), "w", newline="") as f:
        csv.writer(f).writerows([("id", "label")] + [(n, i % CLASSES) for i, n in enumerate(ids)])
    with open(os.path.join(root, "test.csv"), "w", newline="") as f:
        csv.writer(f).writerows([("id",)] + [(n,) for n in ids])
    return ids


def setup(work, seed, size):
    """The images of `size` px, their recipe and their preprocessed tensor: (recipe path, x, ids)."""
    suffix = "" if size == SIZE else f"_{size}"
    data = os.path.join(work, "data" + suffix)
    ids = make_data(data, seed, size)
    recipe = os.path.join(work, f"timm_parity{suffix}.toml")
    with open(recipe, "w") as f:
        f.write(RECIPE.format(seed=seed, root=data, size=size, classes=CLASSES, n=N_IMAGES, mean=list(MEAN),
                              std=list(STD)))
    return recipe, preprocess(os.path.join(data, "test"), ids), ids


def preprocess(folder, ids):
    """kgtrain's normalize: uint8 * float32(1/255), then (x - mean) / std in double, stored as float32."""
    xs = []
    for name in ids:
        u8 = np.asarray(Image.open(os.path.join(folder, name + ".png")).convert("RGB"))
        x = u8.astype(np.float32) * np.float32(1.0 / 255.0)
        x = ((x.astype(np.float64) - np.array(MEAN)) / np.array(STD)).astype(np.float32)
        xs.append(torch.from_numpy(x).permute(2, 0, 1))
    return torch.stack(xs)


def create(arch, **kwargs):
    """timm's model; a ViT for the images' size (kgtrain builds it for data.image_size)."""
    if arch.startswith(SIZED):
        kwargs.setdefault("img_size", SIZE)
    return timm.create_model(arch, pretrained=False, num_classes=CLASSES, in_chans=3, **kwargs)


def timm_model(arch, seed, x, **kwargs):
    """timm's random init made less degenerate, with BatchNorm statistics and a head scale that suit the images x."""
    torch.manual_seed(seed)
    model = create(arch, **kwargs)
    return nontrivial(model, model.get_classifier(), x)


def nontrivial(model, head, x):
    """The model's init made less degenerate, with BatchNorm statistics and a head scale that suit the images x."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 and name.endswith(("weight", "gamma")):
                p.uniform_(0.5, 1.5)
            elif p.dim() == 1:
                p.normal_(0, 0.1)
            elif name in ("cls_token", "pos_embed", "class_token", "encoder.pos_embedding"):  # (nearly) zero at init
                p.normal_(0, 0.5)
            elif name.endswith(".gain"):  # NFNet's conv gains: conv3's start at 0, which would mute every branch
                p.uniform_(0.5, 1.5)
            elif name.endswith("layer_scale"):  # torchvision's ConvNeXt layer scale [C, 1, 1], 1e-6 at init
                p.uniform_(0.5, 1.5)
        # Running statistics: the average of 4 train-mode batches of 8 noisy images (not the 16-image batch's own).
        bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        for m in bns:
            m.momentum = None  # cumulative average
        model.train()
        for _ in range(4):
            batch = x[torch.randperm(len(x))[:8]]
            model(batch + 0.5 * torch.randn_like(batch))
        for m in bns:
            m.momentum = 0.1
        # The head scaled to logits of standard deviation 2 per image: a softmax neither flat nor saturated,
        # so probabilities show a logit difference.
        scale = 2.0 / model.eval()(x).std(dim=1).mean().item()
        head.weight.mul_(scale)
        head.bias.mul_(scale)
    return model.eval()


def probs(model, x):
    with torch.no_grad():
        return torch.softmax(model.eval()(x), dim=1)


def logit_diff(p, q):
    """Max difference of logit_k - logit_top between two probability tables: p_k / p_top's log, over the
    classes where both tables have p_k > 1e-20 (the CSV has 6 significant digits; a float32 softmax underflows)."""
    p, q = p.double(), q.double()
    top = q.argmax(dim=1, keepdim=True)
    lp, lq = (p / p.gather(1, top)).log(), (q / q.gather(1, top)).log()
    both = (p > 1e-20) & (q > 1e-20)
    return (lp - lq)[both].abs().max().item()


def kgtrain(exe, args, log):
    t0 = time.time()
    with open(log, "w") as f:
        r = subprocess.run([exe] + args, stdout=f, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        with open(log) as f:
            tail = f.read()[-3000:]
        raise RuntimeError(f"kgtrain {args[0]} exited {r.returncode} (log {log}):\n{tail}")
    return time.time() - t0


def read_probs(path, ids):
    with open(path) as f:
        rows = list(csv.reader(f))
    header, body = rows[0], {r[0]: [float(v) for v in r[1:]] for r in rows[1:]}
    assert len(header) == CLASSES + 1, f"{path}: {len(header) - 1} probability columns, expected {CLASSES}"
    assert sorted(body) == sorted(ids), f"{path}: other ids than the test table's"
    return torch.tensor([body[i] for i in ids])


def predict(exe, recipe, arch, weights, out_dir, ids):
    path = os.path.join(out_dir, "probs.csv")
    kgtrain(exe, ["tta-predict", recipe, f"model.name={arch}", "--weights", weights, "--probs", path,
                  "--run-dir", out_dir, "-q"], os.path.join(out_dir + ".log"))
    return read_probs(path, ids)


def check_model(exe, arch, work, recipe, x, ids, seed, forward_only=False):
    res = {"model": arch}
    # Forward: timm's file as-is into kgtrain.
    model = timm_model(arch, seed, x)
    timm_file = os.path.join(work, f"{arch}_timm.safetensors")
    safetensors.torch.save_file(model.state_dict(), timm_file)
    want = probs(model, x)
    got = predict(exe, recipe, arch, timm_file, os.path.join(work, f"{arch}_predict_timm"), ids)
    res["forward"] = (got - want).abs().max().item()
    res["forward_logit"] = logit_diff(got, want)
    res["max_p"] = want.max().item()
    if forward_only:
        res["forward_only"] = True
        return res
    # Reverse: kgtrain-trained weights into timm, strictly.
    fit_dir = os.path.join(work, f"{arch}_fit")
    kgtrain(exe, ["fit", recipe, f"model.name={arch}", "--weights", timm_file, "--run-dir", fit_dir, "-q"],
            fit_dir + ".log")
    found = glob.glob(os.path.join(fit_dir, "**", "checkpoints", "last", "model.safetensors"), recursive=True)
    assert len(found) == 1, f"{fit_dir}: expected one checkpoints/last/model.safetensors, found {found}"
    trained = safetensors.torch.load_file(found[0])
    start = dict(model.named_parameters())
    res["changed"] = max((trained[k].double() - p.detach().double()).abs().max().item() for k, p in start.items())
    back = create(arch)
    try:
        back.load_state_dict(trained, strict=True)
        res["strict"] = True
    except RuntimeError as e:
        res["strict"] = False
        res["error"] = str(e)[:2000]
        return res
    got = predict(exe, recipe, arch, found[0], os.path.join(work, f"{arch}_predict_fit"), ids)
    want = probs(back, x)
    res["reverse"] = (got - want).abs().max().item()
    res["reverse_logit"] = logit_diff(got, want)
    if arch.startswith(SIZED):
        # Weights saved at timm's 224 px into kgtrain at 64 px: pos_embed resampled on load, against timm's own
        # load at 64 px (checkpoint_filter_fn, what create_model(pretrained=True, img_size=64) does).
        big = timm.create_model(arch, pretrained=False, num_classes=CLASSES, in_chans=3)
        with torch.no_grad():  # the same weights, but the positions (and a swin's bias tables) of the 224 px model
            big.load_state_dict({k: v for k, v in model.state_dict().items()
                                 if k != "pos_embed" and "relative_position" not in k}, strict=False)
            for k, p in big.named_parameters():
                if k == "pos_embed" or "relative_position_bias_table" in k:
                    p.normal_(0, 0.5)
        big_file = os.path.join(work, f"{arch}_224.safetensors")
        safetensors.torch.save_file(big.state_dict(), big_file)
        small = create(arch)
        filter_fn = (swin_transformer if arch.startswith("swin_") else vision_transformer).checkpoint_filter_fn
        small.load_state_dict(filter_fn(big.state_dict(), small), strict=True)
        want = probs(small, x)
        got = predict(exe, recipe, arch, big_file, os.path.join(work, f"{arch}_predict_224"), ids)
        res["resampled"] = (got - want).abs().max().item()
    return res


def torchvision_head(model):
    """The final linear layer of torchvision's ResNet / ResNeXt (fc), EfficientNet (classifier.1), ConvNeXt
    (classifier.2), ViT (heads.head), Swin (head)."""
    for attr in ("fc", "head"):
        if isinstance(getattr(model, attr, None), torch.nn.Linear):
            return getattr(model, attr)
    return model.heads[-1] if hasattr(model, "heads") else model.classifier[-1]


def check_torchvision(exe, arch, work, recipe, x, ids, seed):
    """torchvision's model of the same name, its state_dict saved by torch.save (torchvision's names), predicted by
    kgtrain's timm network of that name: the names mapped on load (model/weights/torchvision_names.h)."""
    import torchvision
    torch.manual_seed(seed)
    kwargs = {"image_size": SIZE} if arch.startswith("vit_") else {}  # torchvision's ViT is built for one size
    if arch.startswith("swin_"):  # below 224 px torchvision pads its maps to 7x7 windows where timm shrinks them
        recipe, x, ids = setup(work, seed, 224)
    model = getattr(torchvision.models, arch)(weights=None, num_classes=CLASSES, **kwargs)
    model = nontrivial(model, torchvision_head(model), x)
    path = os.path.join(work, f"{arch}_torchvision.pth")
    torch.save(model.state_dict(), path)
    got = predict(exe, recipe, TORCHVISION[arch], path, os.path.join(work, f"{arch}_predict_torchvision"), ids)
    want = probs(model, x)
    return {"model": f"tv {arch} ({TORCHVISION[arch]})", "forward": (got - want).abs().max().item(),
            "forward_logit": logit_diff(got, want), "max_p": want.max().item(), "torchvision": True}


def passed(r):
    if r.get("torchvision") or r.get("forward_only"):
        return r["forward"] < TOL
    return (r.get("strict") and r["forward"] < TOL and r.get("reverse", 1) < TOL and r.get("changed", 0) > 0
            and r.get("resampled", 0) < TOL)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kgtrain", default=os.path.join(ROOT, "build-debian", "kgtrain"))
    ap.add_argument("--models", nargs="*", default=list(MODELS), choices=MODELS)
    ap.add_argument("--torchvision", nargs="*", default=list(TORCHVISION), choices=TORCHVISION,
                    help="also torchvision's model of each name, saved by torch.save with torchvision's names")
    ap.add_argument("--rest-forward-only", action="store_true",
                    help="also every model not in --models, forward only (timm's file into kgtrain): CI's check of "
                         "the models beyond one of each block kind, which it checks all ways")
    ap.add_argument("--forward-only", nargs="*", default=[], choices=MODELS, metavar="MODEL",
                    help="also these models, forward only (CI's check of smaller variants beyond --models)")
    ap.add_argument("--keep", help="work in DIR and keep it (default: a temporary folder, removed)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    exe = os.path.abspath(a.kgtrain)
    if not os.access(exe, os.X_OK):
        sys.exit(f"check_timm_parity: no kgtrain binary at {exe} (--kgtrain PATH)")
    work = os.path.abspath(a.keep) if a.keep else tempfile.mkdtemp(prefix="timm_parity_")
    os.makedirs(work, exist_ok=True)
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    recipe, x, ids = setup(work, a.seed, SIZE)
    print(f"timm {timm.__version__}, torch {torch.__version__}, {exe}; {N_IMAGES} images of {SIZE} px; "
          f"pass: max |p_timm - p_kgtrain| < {TOL:g} (fp32, CPU)")
    print("|dp|: max probability difference (the test); |dlogit|: max difference of logit_k - logit_top, from those "
          "probabilities; fit moved: max parameter change in fit; max p: timm's largest probability")
    print(f"{'model':<30} {'fwd |dp|':>9} {'fwd |dlogit|':>12} {'rev |dp|':>9} {'rev |dlogit|':>12} {'strict':>6} "
          f"{'fit moved':>9} {'max p':>6} {'224 |dp|':>9} {'time':>5}  result")
    failed = 0
    rest = [m for m in MODELS if m not in a.models and m not in ALIASES] if a.rest_forward_only else []
    rest += [m for m in a.forward_only if m not in a.models and m not in rest]
    forward = lambda *args: check_model(*args, forward_only=True)  # noqa: E731
    jobs = ([(arch, check_model) for arch in a.models] + [(arch, forward) for arch in rest] +
            [(arch, check_torchvision) for arch in a.torchvision])
    for i, (arch, check) in enumerate(jobs):
        t0 = time.time()
        # Each model's files in a folder of its own, removed after it unless --keep: a large model's are GBs.
        job = os.path.join(work, f"{i:02d}_{arch}")
        os.makedirs(job, exist_ok=True)
        try:
            r = check(exe, arch, job, recipe, x, ids, a.seed + i)
        except (RuntimeError, AssertionError) as e:
            r = {"model": arch, "forward": float("nan"), "error": str(e)}
        if not a.keep:
            shutil.rmtree(job, ignore_errors=True)
        arch = r["model"]
        ok = passed(r)
        failed += not ok
        fmt = lambda k: f"{r[k]:.2e}" if k in r else "-"  # noqa: E731
        strict = {True: "yes", False: "NO"}.get(r.get("strict"), "-")
        print(f"{arch:<30} {fmt('forward'):>9} {fmt('forward_logit'):>12} {fmt('reverse'):>9} "
              f"{fmt('reverse_logit'):>12} {strict:>6} {fmt('changed'):>9} {r.get('max_p', float('nan')):6.3f} {fmt('resampled'):>9} {time.time() - t0:4.0f}s  "
              f"{'ok' if ok else 'FAIL'}", flush=True)
        if "error" in r:
            print("  " + r["error"].replace("\n", "\n  "))
    if a.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
