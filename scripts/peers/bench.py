#!/usr/bin/env python3
"""The driver of scripts/bench_peers.sh (run it through that script: it makes the venv and the data first).

Runs every contender on the same files, interleaved (round r runs each setting's contenders in an order rotated
by r), one process per run, and compares training images/s, wall per epoch and test accuracy:
  kgtrain-pip     build-cuda/kgtrain (LibTorch 2.11 from PyPI's torch wheel: the very libtorch the peers' torch loads)
  kgtrain-debian  build-debian/kgtrain (Debian's LibTorch 1.13 + OpenBLAS)
  fastai          scripts/peers/fastai_fit.py (Learner + fit_one_cycle / fine_tune)
  timm            scripts/peers/timm_train.py (timm's train.py, replicated: see its header)
Cases (each in fp32 and/or bf16 autocast; channels_last everywhere; 2 intra-op threads everywhere):
  fmnist            Fashion-MNIST 28x28 gray, kgtrain's resnet9 width 16, batch 256, pad-crop 2 + hflip,
                    AdamW lr 3e-3 wd 5e-4, one-cycle, label smoothing 0.1 (recipes/fashion_mnist.toml)
  rgb_resnet18      the derived 3x128 RGB JPEGs, resnet18 (7x7 stem), batch 64, random-resized-crop + hflip +
  rgb_effnet_b0     ImageNet normalisation, AdamW lr 2e-3 wd 0.01, one-cycle, label smoothing 0.1
                    (scripts/peers/rgb128.toml); efficientnet_b0 with drop 0.2, drop path 0.2
  rgb_resnet18_mixup   the same with mixup alpha 0.8 (smoothing inside the mixed targets)
  rgb_resnet18_finetune  fastai's fine_tune (1 frozen epoch + E epochs, discriminative lr) against kgtrain's
                    train.mode = "fine_tune" (timm has no such mode); random init: no pretrained weights offline
  fmnist_tta        time to 94 % test accuracy on all of Fashion-MNIST (60,000 train, 10,000 test), each side
                    with its own recipe (overridable), validation on the test set every epoch, then identity +
                    hflip TTA of the last weights
Every side trains on exactly the view's training rows and validates on its test rows every epoch (kgtrain:
cv.strategy = "column" on a table listing both), so the per-epoch accuracy is test accuracy everywhere.
Rounds: --rounds (2) for fmnist and rgb_resnet18, --extra-rounds (1) for the others, one fmnist_tta run per side;
kgtrain-debian is left out of the mixup / fine_tune cases (--extra-contenders) and of fmnist_tta (--tta-contenders).
Prints a table and writes the whole run (commands, per-epoch figures, versions, load averages) as JSON.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PEERS = os.path.join(REPO, "scripts", "peers")
FMNIST = os.path.join(REPO, "data", "fashion_mnist")
RGB = os.path.join(REPO, "data", "bench_peers", "rgb128")
VIEWS = os.path.join(REPO, "data", "bench_peers")
KG = {"kgtrain-pip": os.path.join(REPO, "build-cuda", "kgtrain"),
      "kgtrain-debian": os.path.join(REPO, "build-debian", "kgtrain")}
ALL_CONTENDERS = ["kgtrain-pip", "kgtrain-debian", "fastai", "timm"]
PEER_NAMES = ["fastai", "timm"]


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--py", default=sys.executable, help="the Python with torch, fastai and timm")
    p.add_argument("--out", help="JSON file to write")
    p.add_argument("--table", metavar="JSON", help="print the table of a JSON this script wrote, and exit")
    p.add_argument("--quick", action="store_true", help="tiny subsets, 1 epoch, 1 round: checks that all runs")
    p.add_argument("--rounds", type=int, default=None, help="rounds of fmnist and rgb_resnet18")
    p.add_argument("--extra-rounds", type=int, default=1, help="rounds of rgb_effnet_b0 and the mixup / fine_tune cases")
    p.add_argument("--extra-contenders", default="kgtrain-pip,fastai,timm", help="of the mixup and fine_tune cases")
    p.add_argument("--cases", default=None, help="comma list (default: all but fmnist_tta in --quick)")
    p.add_argument("--contenders", default=",".join(ALL_CONTENDERS))
    p.add_argument("--precisions", default="fp32,bf16", help="for fmnist and rgb_resnet18")
    p.add_argument("--effnet-precisions", default="fp32")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers of the peers (fastai's default here)")
    p.add_argument("--fmnist-train", type=int, default=None)
    p.add_argument("--fmnist-test", type=int, default=None)
    p.add_argument("--fmnist-epochs", type=int, default=None)
    p.add_argument("--rgb-train", type=int, default=None)
    p.add_argument("--rgb-test", type=int, default=None)
    p.add_argument("--rgb-epochs", type=int, default=None)
    p.add_argument("--tta-contenders", default="kgtrain-pip,fastai,timm")
    p.add_argument("--tta-limit", type=int, default=None, help="fmnist_tta on the first N training rows (0 = all)")
    p.add_argument("--tta-test", type=int, default=None, help="fmnist_tta on the first N test rows (0 = all)")
    p.add_argument("--tta-target", type=float, default=0.94)
    p.add_argument("--tta-kgtrain", default=None, help="overrides for kgtrain fit (recipe + these); default "
                   "train.epochs=16 (recipes/fashion_mnist.toml: bf16 on this CPU, channels_last, lr 3e-3; its 12 epochs "
                   "end at 93.96 %% test accuracy with TTA, 16 at 94.3 %%, docs/performance.md)")
    p.add_argument("--tta-fastai", default=None, help="flags for fastai_fit.py; default --epochs 12 --lr 3e-3 --bf16")
    p.add_argument("--tta-timm", default=None, help="flags for timm_train.py (after the case's own); default "
                   "--epochs 12 --lr 3e-3 --amp --amp-dtype bfloat16")
    p.add_argument("--keep", action="store_true", help="keep kgtrain run folders and timm checkpoints")
    a = p.parse_args()
    q = a.quick
    ep = 1 if q else 12  # --quick: the time-to-accuracy code path on a sliver, to see that it runs
    dflt = dict(rounds=1 if q else 2, fmnist_train=2048 if q else 6144, fmnist_test=512 if q else 2048,
                fmnist_epochs=1 if q else 2, rgb_train=256 if q else 640, rgb_test=128 if q else 256,
                rgb_epochs=1 if q else 2, tta_limit=2048 if q else 0, tta_test=1024 if q else 0,
                tta_kgtrain=f"train.epochs={1 if q else 16}", tta_fastai=f"--epochs {ep} --lr 3e-3 --bf16",
                tta_timm=f"--epochs {ep} --lr 3e-3 --amp --amp-dtype bfloat16")
    for k, v in dflt.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    if a.cases is None:
        a.cases = "fmnist,rgb_resnet18,rgb_effnet_b0,rgb_resnet18_mixup,rgb_resnet18_finetune,fmnist_tta"
    return a


def view(root, ext, n_train, n_test, py):
    name = f"{os.path.basename(root)}-{n_train or 'all'}-{n_test or 'all'}"
    dst = os.path.join(VIEWS, name)
    subprocess.run([py, os.path.join(PEERS, "make_data.py"), "view", root, dst, "--ext", ext,
                    "--train", str(n_train), "--test", str(n_test)], check=True)
    return dst


# ---- one setting = case + precision; its runs = one per contender ------------------------------------------

class Setting:
    def __init__(self, case, precision, a, epochs, view_dir):
        self.case, self.precision, self.a, self.epochs, self.view = case, precision, a, epochs, view_dir
        self.fmnist = case.startswith("fmnist")
        self.model = ("resnet9" if self.fmnist else "efficientnet_b0" if "effnet" in case else "resnet18")
        self.mixup = 0.8 if case.endswith("_mixup") else 0.0
        self.finetune = case.endswith("_finetune")
        self.tta = case == "fmnist_tta"
        self.extra = self.mixup > 0 or self.finetune
        self.rounds = 1 if self.tta else a.extra_rounds if (self.extra or "effnet" in case) else a.rounds
        self.bs, self.ebs = (256, 512) if self.fmnist else (64, 128)
        self.lr, self.wd = (3e-3, 5e-4) if self.fmnist else (2e-3, 0.01)

    @property
    def key(self):
        return f"{self.case}/{self.precision}"

    def contenders(self):
        want = (self.a.tta_contenders if self.tta else self.a.extra_contenders if self.extra
                else self.a.contenders).split(",")
        if self.finetune:
            want = [c for c in want if c != "timm"]  # train.py has no fine_tune mode
        return [c for c in ALL_CONTENDERS if c in want]

    def command(self, who, workdir):
        a = self
        if who.startswith("kgtrain"):
            if a.fmnist:
                cmd = [KG[who], "fit", "recipes/fashion_mnist.toml"]
            else:
                cmd = [KG[who], "fit", "scripts/peers/rgb128.toml", f"data.root={RGB}"]
                cmd += ["model=resnet18", "model.small_input=false"] if a.model == "resnet18" else ["model=efficientnet_b0"]
            cmd += [f"data.train_csv={a.view}/kg.csv", "data.image_dir=.", "data.path_col=path", "cv.strategy=column",
                    "cv.folds=2", "cv.fold=0", f"device.threads={a.a.threads}", "device.channels_last=true"]
            if a.tta:
                cmd += a.a.tta_kgtrain.split()
            else:
                cmd += [f"train.epochs={a.epochs}", f"device.precision={a.precision}"]
            if a.mixup:
                cmd += [f"mixup.mixup_alpha={a.mixup}", "mixup.label_smoothing=0.1", "loss.label_smoothing=0"]
            if a.finetune:
                cmd += ["train.mode=fine_tune", "train.freeze_epochs=1"]
            return cmd + ["--run-dir", os.path.join(workdir, "run"), "--quiet"]
        if who == "fastai":
            cmd = [a.a.py, os.path.join(PEERS, "fastai_fit.py"), os.path.join(a.view, "if"), "--model", a.model,
                   "--bs", str(a.bs), "--eval-bs", str(a.ebs), "--wd", str(a.wd), "--smoothing", "0.1",
                   "--workers", str(a.a.workers), "--threads", str(a.a.threads), "--channels-last"]
            if a.fmnist:
                cmd += ["--channels", "1", "--size", "28", "--aug", "padcrop", "--pad", "2", "--width", "16"]
            else:
                cmd += ["--channels", "3", "--size", "128", "--aug", "rrc", "--min-scale", "0.08",
                        "--mean", "0.485", "0.456", "0.406", "--std", "0.229", "0.224", "0.225"]
            if a.tta:
                return cmd + a.a.tta_fastai.split() + ["--tta-hflip"]
            cmd += ["--epochs", str(a.epochs), "--lr", str(a.lr)] + (["--bf16"] if a.precision == "bf16" else [])
            if a.mixup:
                cmd += ["--mixup", str(a.mixup)]
            if a.finetune:
                cmd += ["--fine-tune", "--freeze-epochs", "1"]
            return cmd
        if who == "timm":
            cmd = [a.a.py, os.path.join(PEERS, "timm_train.py"), "--data-dir", os.path.join(a.view, "if"),
                   "--num-classes", "10", "-b", str(a.bs), "-vb", str(a.ebs), "--opt", "adamw", "--opt-eps", "1e-8",
                   "--opt-betas", "0.9", "0.999", "--weight-decay", str(a.wd), "--sched", "cosine",
                   "--sched-on-updates", "--smoothing", "0.1", "--color-jitter", "0", "--crop-pct", "1.0",
                   "-j", str(a.a.workers), "--threads", str(a.a.threads), "--channels-last",
                   "--output", os.path.join(workdir, "timm_out"), "--checkpoint-hist", "1", "--json"]
            if a.fmnist:
                cmd += ["--model", "kg_resnet9", "--model-kwargs", "width=16", "--in-chans", "1", "--input-img-mode", "L",
                        "--input-size", "1", "28", "28", "--mean", "0.2860", "--std", "0.3530",
                        "--interpolation", "bilinear", "--pad-crop", "2"]
            else:
                cmd += ["--model", a.model, "--input-size", "3", "128", "128", "--scale", "0.08", "1.0",
                        "--train-interpolation", "bilinear", "--interpolation", "bilinear"]
                if a.model == "efficientnet_b0":
                    cmd += ["--drop", "0.2", "--drop-path", "0.2"]
            if a.tta:
                flags = a.a.tta_timm.split()
                epochs = int(flags[flags.index("--epochs") + 1]) if "--epochs" in flags else 12
                lr = float(flags[flags.index("--lr") + 1]) if "--lr" in flags else a.lr
                return cmd + timm_schedule(epochs, lr) + flags + ["--tta-hflip"]
            cmd += ["--epochs", str(a.epochs), "--lr", str(a.lr)] + timm_schedule(a.epochs, a.lr)
            if a.precision == "bf16":
                cmd += ["--amp", "--amp-dtype", "bfloat16"]
            if a.mixup:
                cmd += ["--mixup", str(a.mixup)]
            return cmd
        raise ValueError(who)


def timm_schedule(epochs, lr):
    """timm's nearest to one-cycle: linear warm-up over the first 25 % of the updates from lr/25, then cosine to
    lr/1e5, stepped per update (kgtrain's / fastai's one_cycle: pct_start 0.25, div 25, div_final 1e5)."""
    return ["--warmup-epochs", f"{0.25 * epochs:g}", "--warmup-lr", f"{lr / 25:.6g}", "--min-lr", f"{lr / 1e5:.6g}"]


# ---- running and parsing -----------------------------------------------------------------------------------

def loadavg():
    try:
        return open("/proc/loadavg").read().split()[:3]
    except OSError:
        return None


def kg_result(workdir, setting, wall):
    run = os.path.join(workdir, "run")
    rows = [json.loads(l) for l in open(os.path.join(run, "metrics.jsonl")) if l.strip()]
    summ = json.load(open(os.path.join(run, "summary.json")))
    epochs, prev_step, prev_t = [], 0, 0.0
    for r in rows:
        n = (r["step"] - prev_step) * setting.bs
        epochs.append(dict(epoch=r["epoch"], train_images=n, train_s=round(n / r["train_images_per_s"], 3),
                           train_img_per_s=round(r["train_images_per_s"], 1),
                           epoch_wall_s=round(r["elapsed_s"] - prev_t, 3), test_acc=round(r["accuracy"], 4),
                           elapsed_s=round(r["elapsed_s"], 2)))
        prev_step, prev_t = r["step"], r["elapsed_s"]
    return dict(epochs=epochs, train_img_per_s=round(summ["train_images_per_s"], 1),
                test_acc=epochs[-1]["test_acc"] if epochs else None, fit_wall_s=round(summ.get("wall_s", 0), 2),
                device=summ.get("device", ""), wall_s=round(wall, 2),
                startup_s=round(wall - rows[-1]["elapsed_s"], 2) if rows else None)


def kg_tta(who, workdir, setting, a):
    """tta-predict of the run's last weights on the view's test rows with the recipe's views (identity, hflip)."""
    cmd = [KG[who], "tta-predict", "recipes/fashion_mnist.toml", f"data.test_csv={setting.view}/test_labels.csv",
           "data.sample_submission=",
           f"device.threads={a.threads}", "--checkpoint", os.path.join(workdir, "run", "checkpoints", "last"),
           "--out", os.path.join(workdir, "submission.csv"), "--run-dir", os.path.join(workdir, "pred"), "--quiet"]
    t0 = time.time()
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    secs = time.time() - t0
    if r.returncode != 0:
        return dict(error=r.stderr[-2000:], command=cmd)
    s = json.load(open(os.path.join(workdir, "pred", "summary.json")))
    return dict(views=["identity", "hflip"], test_acc=round(s["metric"]["value"], 4), seconds=round(secs, 2),
                command=cmd)


def run_one(setting, who, logdir, a):
    tag = f"{setting.case}-{setting.precision}-{who}"
    workdir = os.path.join(logdir, "work", tag)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    cmd = setting.command(who, workdir)
    res = dict(case=setting.case, precision=setting.precision, contender=who, command=cmd, load_before=loadavg())
    t0 = time.time()
    with open(os.path.join(logdir, tag + ".log"), "a") as log:
        log.write(f"\n$ {' '.join(cmd)}\n")
        log.flush()
        r = subprocess.run(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=log, text=True)
        log.write(r.stdout)
    wall = time.time() - t0
    res["load_after"] = loadavg()
    if r.returncode != 0:
        res["error"] = f"exit {r.returncode}; see {os.path.join(logdir, tag + '.log')}"
        return res
    try:
        if who.startswith("kgtrain"):
            res.update(kg_result(workdir, setting, wall))
            if setting.tta:
                res["tta"] = kg_tta(who, workdir, setting, a)
                res["wall_s"] = round(wall + res["tta"].get("seconds", 0), 2)
        else:
            j = json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1])
            j["wall_s"] = round(wall, 2)  # the whole process, start-up included (its own wall_s: from import)
            j["precision_used"] = j.pop("precision", None)
            j.pop("model", None)
            res.update(j)
    except (OSError, ValueError, KeyError, IndexError) as e:
        res["error"] = f"could not read the results: {e!r}"
    if not a.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return res


def time_to_target(res, target):
    """Seconds from the process start to the end of the first epoch whose test accuracy reached the target."""
    for e in res.get("epochs", []):
        if e.get("test_acc") is not None and e["test_acc"] >= target:
            # kgtrain's elapsed_s counts from the start of training: add its start-up (process wall - last elapsed)
            startup = (res.get("startup_s") or 0) if res["contender"].startswith("kgtrain") else 0
            return round(e["elapsed_s"] + startup, 1)
    return None


# ---- report --------------------------------------------------------------------------------------------------

def summarise(results, settings, a):
    out = []
    for s in settings:
        rows = {}
        for who in s.contenders():
            rs = [r for r in results if r["case"] == s.case and r["precision"] == s.precision
                  and r["contender"] == who and "error" not in r]
            if not rs:
                rows[who] = dict(runs=0)
                continue
            n_ep = min(len(r["epochs"]) for r in rs)
            med = lambda f: round(statistics.median(f(r) for r in rs), 4)  # noqa: E731
            row = dict(runs=len(rs), train_img_per_s=med(lambda r: r["train_img_per_s"]),
                       epoch_img_per_s=[med(lambda r: r["epochs"][i]["train_img_per_s"]) for i in range(n_ep)],
                       epoch_wall_s=[med(lambda r: r["epochs"][i]["epoch_wall_s"]) for i in range(n_ep)],
                       test_acc=med(lambda r: r["test_acc"]), wall_s=med(lambda r: r["wall_s"]))
            if s.tta:  # one run per side
                r = rs[0]
                row["best_epoch_test_acc"] = max(e["test_acc"] for e in r["epochs"])
                row["first_epoch_at_target_s"] = time_to_target(r, a.tta_target)
                row["tta_test_acc"] = (r.get("tta") or {}).get("test_acc")
                row["tta_at_target_wall_s"] = r["wall_s"] if (row["tta_test_acc"] or 0) >= a.tta_target else None
            rows[who] = row
        # kgtrain's training img/s over the fastest peer's: over all epochs, and in the last epoch (steady state:
        # no first-epoch warm-up of oneDNN kernels, worker processes, caches)
        for key, get in (("vs_fastest_peer", lambda r: r["train_img_per_s"]),
                         ("vs_fastest_peer_last_epoch", lambda r: r["epoch_img_per_s"][-1])):
            peers = [get(rows[p]) for p in PEER_NAMES if rows.get(p, {}).get("runs")]
            for who in ("kgtrain-pip", "kgtrain-debian"):
                if peers and rows.get(who, {}).get("runs"):
                    rows[who][key] = round(get(rows[who]) / max(peers), 2)
        out.append(dict(setting=s.key, epochs=s.epochs, train_rows=s.n_train, test_rows=s.n_test, contenders=rows))
    return out


def fmt_list(v, f):
    return " / ".join(f.format(x) for x in v)


def print_table(summary, a):
    print()
    hdr = f"{'setting':<30} {'contender':<15} {'img/s per epoch':>20} {'img/s':>8} {'wall/epoch s':>16} " \
          f"{'test acc':>8} {'wall s':>7} {'kg/peer':>7} {'(last ep)':>9}"
    print(hdr)
    print("-" * len(hdr))
    for s in summary:
        for who, r in s["contenders"].items():
            if not r.get("runs"):
                print(f"{s['setting']:<30} {who:<15} {'failed (see the log)':>20}")
                continue
            ratio = f"{r['vs_fastest_peer']:.2f}x" if "vs_fastest_peer" in r else ""
            ratio_last = f"{r['vs_fastest_peer_last_epoch']:.2f}x" if "vs_fastest_peer_last_epoch" in r else ""
            print(f"{s['setting']:<30} {who:<15} {fmt_list(r['epoch_img_per_s'], '{:.0f}'):>20} "
                  f"{r['train_img_per_s']:>8.1f} {fmt_list(r['epoch_wall_s'], '{:.1f}'):>16} "
                  f"{r['test_acc']:>8.4f} {r['wall_s']:>7.1f} {ratio:>7} {ratio_last:>9}")
            if "tta_test_acc" in r:
                t, tw = r["first_epoch_at_target_s"], r["tta_at_target_wall_s"]
                print(f"{'':<30} {'':<15}   after the last epoch, identity + hflip TTA: test acc {r['tta_test_acc']}"
                      f" -> {f'{a.tta_target:.0%} in {tw:.1f} s' if tw is not None else f'below {a.tta_target:.0%}'}")
                print(f"{'':<30} {'':<15}   plain test acc per epoch: best {r['best_epoch_test_acc']:.4f}, first "
                      f">= {a.tta_target:.0%} {f'at {t:.1f} s' if t is not None else 'never'}")
    print("img/s: training images per training second (no evaluation), median over rounds; per epoch: each epoch's.")
    print("wall/epoch: training + evaluation + the epoch's own bookkeeping; wall s: the whole process, start-up included")
    print("(fmnist_tta: + kgtrain's tta-predict). kg/peer: kgtrain img/s / the fastest peer's, overall and last epoch.")


def versions(a):
    v = {}
    for who, b in KG.items():
        try:
            v[who] = subprocess.run([b, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
        except OSError as e:
            v[who] = str(e)
    r = subprocess.run([a.py, "-c", "import sys, torch, timm, fastai, numpy, PIL; print(sys.version.split()[0], "
                        "torch.__version__, timm.__version__, fastai.__version__, numpy.__version__, PIL.__version__, "
                        "torch.backends.cpu.get_cpu_capability(), torch.__file__)"],
                       capture_output=True, text=True)
    keys = ["python", "torch", "timm", "fastai", "numpy", "pillow", "torch_cpu_capability", "torch_file"]
    v["peers"] = dict(zip(keys, r.stdout.split())) if r.returncode == 0 else r.stderr
    r = subprocess.run([a.py, "-m", "pip", "freeze", "--disable-pip-version-check"], capture_output=True, text=True)
    v["pip_freeze"] = r.stdout.splitlines()
    r = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"], capture_output=True, text=True)
    v["repository"] = r.stdout.strip()
    v["binaries_built"] = {who: datetime.datetime.fromtimestamp(os.path.getmtime(b)).isoformat(timespec="seconds")
                           for who, b in KG.items() if os.path.exists(b)}
    return v


def reprint(path):
    doc = json.load(open(path))
    a = argparse.Namespace(**doc["args"])
    settings = []
    for row in doc["summary"]:
        case, prec = row["setting"].split("/")
        s = Setting(case, prec, a, row["epochs"], None)
        s.n_train, s.n_test = row["train_rows"], row["test_rows"]
        settings.append(s)
    print(f"{path}: {doc['date']}, {doc['machine']['cores']} cores, {doc['machine']['cpu']}, {doc['total_s']:.0f} s")
    print_table(summarise(doc["results"], settings, a), a)


def main():
    a = parse_args()
    os.chdir(REPO)
    if a.table:
        return reprint(a.table)
    if not a.out:
        sys.exit("bench_peers: --out FILE is needed")
    cases = a.cases.split(",")
    for who in a.contenders.split(","):
        if who.startswith("kgtrain") and not os.access(KG[who], os.X_OK):
            sys.exit(f"bench_peers: {KG[who]} is missing (contender {who}); drop it with --contenders")
    settings = []
    fm_view = view(FMNIST, ".png", a.fmnist_train, a.fmnist_test, a.py) if "fmnist" in cases else None
    rgb_view = view(RGB, ".jpg", a.rgb_train, a.rgb_test, a.py) if any(c.startswith("rgb") for c in cases) else None
    for c in cases:
        if c == "fmnist":
            precs, ep, v, n = a.precisions.split(","), a.fmnist_epochs, fm_view, (a.fmnist_train, a.fmnist_test)
        elif c == "rgb_resnet18":
            precs, ep, v, n = a.precisions.split(","), a.rgb_epochs, rgb_view, (a.rgb_train, a.rgb_test)
        elif c == "rgb_effnet_b0":
            precs, ep, v, n = a.effnet_precisions.split(","), a.rgb_epochs, rgb_view, (a.rgb_train, a.rgb_test)
        elif c in ("rgb_resnet18_mixup", "rgb_resnet18_finetune"):
            precs, ep, v, n = ["fp32"], a.rgb_epochs, rgb_view, (a.rgb_train, a.rgb_test)
        elif c == "fmnist_tta":
            precs, ep, n = ["recipe"], None, (a.tta_limit, a.tta_test)
            v = view(FMNIST, ".png", a.tta_limit, a.tta_test, a.py)
        else:
            sys.exit(f"bench_peers: unknown case {c}")
        for prec in precs:
            s = Setting(c, prec, a, ep, v)
            s.n_train, s.n_test = n
            settings.append(s)

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    logdir = os.path.splitext(a.out)[0] + "-logs"
    os.makedirs(logdir, exist_ok=True)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    flags = set(next((l.split(":", 1)[1].split() for l in open("/proc/cpuinfo") if l.startswith("flags")), []))
    cpu += " (" + ", ".join(f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags) + ")"
    print(f"machine: {os.cpu_count()} cores, {cpu}; load average {' '.join(loadavg() or [])}")
    print(f"settings: {', '.join(f'{s.key} x{s.rounds}' for s in settings)}; logs {os.path.relpath(logdir)}")
    results, t_all = [], time.time()
    for rnd in range(max(s.rounds for s in settings)):
        for s in settings:
            if rnd >= s.rounds:
                continue
            order = s.contenders()
            k = rnd % len(order)
            for who in order[k:] + order[:k]:
                r = run_one(s, who, logdir, a)
                r["round"] = rnd + 1
                results.append(r)
                msg = r.get("error") or (f"{r['train_img_per_s']:.1f} img/s, test acc {r['test_acc']}, "
                                         f"wall {r['wall_s']:.1f} s")
                print(f"  round {rnd + 1} {s.key:<30} {who:<15} {msg}", flush=True)
    summary = summarise(results, settings, a)
    print_table(summary, a)
    doc = dict(schema=1, date=stamp, total_s=round(time.time() - t_all, 1), args=vars(a),
               machine=dict(cores=os.cpu_count(), cpu=cpu, platform=platform.platform(), load_end=loadavg()),
               versions=versions(a), summary=summary, results=results)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {os.path.relpath(a.out)} ({doc['total_s']:.0f} s)")
    return 1 if any("error" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
