#!/usr/bin/env python3
"""The Hugging Face Trainer side of kgtrain's text benchmark: fine-tune a local encoder folder on a text + numeric
table the way kgtrain's text recipe does, and print one JSON line (speed, memory, holdout accuracy).

  python scripts/bench_text_peer.py --data DIR --model FOLDER --epochs 1 --batch-size 32 --max-length 128
                                    --lr 1e-3 --seed 0 --padding dynamic|max_length [--threads 2]
                                    [--holdout-fold 0] [--work DIR] [--train-rows N]

The network, as kgtrain builds it for model.pooling = "mean" with data.feature_cols: AutoModel(FOLDER) -> the last
hidden states averaged over the attention mask -> concatenated with BatchNorm1d(numeric features) -> one Linear layer
to the classes; cross-entropy. Trained by transformers' Trainer on the CPU in float32: AdamW (torch's, betas 0.9/0.999,
eps 1e-8), weight decay 0.01 (not on biases and norm weights: Trainer's rule, and the BatchNorm is named feat_norm so
that the rule sees it), a linear decay to 0 with no warm-up, gradient norm clipped at 1.0 (Trainer's default), dropout
as the encoder's config says. Padding: "dynamic" pads each batch to its longest row, rounded up to a multiple of 8
(DataCollatorWithPadding(pad_to_multiple_of=8)); "max_length" pads every row to --max-length.

Data: DIR/train.csv from scripts/make_text_task.py (id, text, numeric columns, fold, label). The holdout is the rows
whose fold column is --holdout-fold (kgtrain: cv.strategy = "column", cv.folds = 5, cv.fold = 0 holds out the same
rows); without a fold column, fold = SHA-256(id) mod 5. The holdout's ids and labels are written to
WORK/holdout.csv. --train-rows N keeps the first N training rows (file order, which make_text_task makes a hash order).

Timing is honest: samples_per_s = training rows x epochs / the wall time of trainer.train() alone (tokenization, model
load and evaluation are timed apart: tokenize_s, load_s, eval_s). peak_rss_mb is the process's peak resident memory
(getrusage), model load and tokenized data included; train_cpu_s is the CPU time trainer.train() used and loadavg_1m
the machine's 1-minute load average before and after it (on a shared machine, train_cpu_s well under threads x
train_s means other jobs took the cores). torch.set_num_threads(--threads), RAYON_NUM_THREADS too.
"""
import argparse, csv, hashlib, json, math, os, resource, sys, tempfile, time

PROG = "bench_text_peer"


def die(msg):
    sys.exit(f"{PROG}: error: {msg}")


def main():
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="folder with train.csv (scripts/make_text_task.py)")
    ap.add_argument("--model", required=True, help="a transformers model folder (scripts/make_text_model.py)")
    ap.add_argument("--epochs", type=float, default=1)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--eval-batch-size", type=int, default=0, help="0 = 2 x batch size (kgtrain's default)")
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--padding", choices=["dynamic", "max_length"], default="dynamic")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--holdout-fold", type=int, default=0)
    ap.add_argument("--folds", type=int, default=5, help="folds when train.csv has no fold column")
    ap.add_argument("--train-rows", type=int, default=0, help="keep the first N training rows (0 = all)")
    ap.add_argument("--text-col", default="text")
    ap.add_argument("--label-col", default="label")
    ap.add_argument("--feature-cols", default="auto",
                    help="comma-separated numeric columns; auto = every column but id, text, fold, label; none")
    ap.add_argument("--work", default="", help="folder for holdout.csv and the Trainer's output (default: a temp dir)")
    a = ap.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ["RAYON_NUM_THREADS"] = str(a.threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true" if a.threads > 1 else "false")
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import transformers as T
    T.utils.logging.disable_progress_bar()
    torch.set_num_threads(a.threads)

    path = os.path.join(a.data, "train.csv")
    if not os.path.exists(path):
        die(f"{path}: no such file (make it with scripts/make_text_task.py)")
    csv.field_size_limit(1 << 30)
    with open(path, encoding="utf-8", newline="") as f:
        r = csv.DictReader(f)
        cols = r.fieldnames or []
        rows = list(r)
    for c in (a.text_col, a.label_col):
        if c not in cols:
            die(f"{path}: no column {c!r}")
    if a.feature_cols == "auto":
        feats = [c for c in cols if c not in ("id", a.text_col, a.label_col, "fold")]
    elif a.feature_cols == "none":
        feats = []
    else:
        feats = [c for c in a.feature_cols.split(",") if c]
    for c in feats:
        if c not in cols:
            die(f"{path}: no feature column {c!r}")

    def fold(row):
        if "fold" in row:
            return int(row["fold"])
        return int.from_bytes(hashlib.sha256(row["id"].encode()).digest()[:8], "big") % a.folds
    train_rows = [x for x in rows if fold(x) != a.holdout_fold]
    hold_rows = [x for x in rows if fold(x) == a.holdout_fold]
    if a.train_rows:
        train_rows = train_rows[:a.train_rows]
    if not train_rows or not hold_rows:
        die(f"holdout fold {a.holdout_fold}: {len(train_rows)} training rows, {len(hold_rows)} holdout rows")
    classes = sorted({x[a.label_col] for x in train_rows})
    cid = {c: i for i, c in enumerate(classes)}
    hold_rows = [x for x in hold_rows if x[a.label_col] in cid]

    work = a.work or tempfile.mkdtemp(prefix="bench_text_peer.")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "holdout.csv"), "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["id", "label"])
        w.writerows([x.get("id", ""), x[a.label_col]] for x in hold_rows)

    t = time.perf_counter()
    tok = T.AutoTokenizer.from_pretrained(a.model)
    pad = "max_length" if a.padding == "max_length" else False

    def encode(rs):
        enc = tok([x[a.text_col] for x in rs], truncation=True, max_length=a.max_length, padding=pad)
        out = []
        for i, x in enumerate(rs):
            out.append({"input_ids": enc["input_ids"][i], "attention_mask": enc["attention_mask"][i],
                        "features": [float(x[c]) for c in feats], "labels": cid[x[a.label_col]]})
        return out
    train_ds, hold_ds = encode(train_rows), encode(hold_rows)
    tokenize_s = time.perf_counter() - t

    pad_collator = T.DataCollatorWithPadding(tok, pad_to_multiple_of=8)
    seen = {"on": False, "samples": 0, "padded": 0, "real": 0}

    def collate(batch):
        toks = [{"input_ids": b["input_ids"], "attention_mask": b["attention_mask"]} for b in batch]
        if a.padding == "dynamic":
            out = dict(pad_collator(toks))
        else:
            out = {k: torch.tensor([b[k] for b in toks]) for k in ("input_ids", "attention_mask")}
        out["features"] = torch.tensor([b["features"] for b in batch], dtype=torch.float32)
        out["labels"] = torch.tensor([b["labels"] for b in batch], dtype=torch.long)
        if seen["on"]:
            seen["samples"] += len(batch)
            seen["padded"] += out["input_ids"].numel()
            seen["real"] += int(out["attention_mask"].sum())
        return out

    class Peer(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = T.AutoModel.from_pretrained(a.model)
            hidden = self.encoder.config.hidden_size
            self.feat_norm = nn.BatchNorm1d(len(feats)) if feats else None
            self.head = nn.Linear(hidden + len(feats), len(classes))

        def forward(self, input_ids, attention_mask, features=None, labels=None):
            h = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            m = attention_mask.unsqueeze(-1).to(h.dtype)
            x = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
            if self.feat_norm is not None:
                x = torch.cat([x, self.feat_norm(features)], 1)
            logits = self.head(x)
            loss = F.cross_entropy(logits, labels) if labels is not None else None
            return {"loss": loss, "logits": logits}

    t = time.perf_counter()
    T.set_seed(a.seed)
    model = Peer()
    load_s = time.perf_counter() - t
    args = T.TrainingArguments(
        output_dir=os.path.join(work, "trainer"), per_device_train_batch_size=a.batch_size,
        per_device_eval_batch_size=a.eval_batch_size or 2 * a.batch_size, num_train_epochs=a.epochs,
        learning_rate=a.lr, weight_decay=0.01, lr_scheduler_type="linear", warmup_steps=0, optim="adamw_torch",
        adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8, max_grad_norm=1.0, seed=a.seed, data_seed=a.seed,
        use_cpu=True, bf16=False, fp16=False, eval_strategy="no", save_strategy="no", logging_strategy="no",
        report_to="none", dataloader_num_workers=0, remove_unused_columns=False, disable_tqdm=True,
        label_names=["labels"])
    trainer = T.Trainer(model=model, args=args, train_dataset=train_ds, data_collator=collate)
    seen["on"] = True
    load_before = os.getloadavg()[0]
    cpu = resource.getrusage(resource.RUSAGE_SELF)
    t = time.perf_counter()
    result = trainer.train()
    train_s = time.perf_counter() - t
    cpu2 = resource.getrusage(resource.RUSAGE_SELF)
    load_after = os.getloadavg()[0]
    seen["on"] = False

    t = time.perf_counter()
    pred = trainer.predict(hold_ds)
    eval_s = time.perf_counter() - t
    logits = torch.tensor(pred.predictions)
    y = torch.tensor([b["labels"] for b in hold_ds])
    acc = float((logits.argmax(1) == y).float().mean())
    log_loss = float(F.cross_entropy(logits, y))
    n = seen["samples"] or 1
    print(json.dumps({
        "tool": "hf-trainer", "samples_per_s": round(len(train_ds) * a.epochs / train_s, 2),
        "train_s": round(train_s, 2), "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "accuracy": round(acc, 4), "log_loss": round(log_loss, 4), "train_loss": round(result.training_loss, 4),
        "epochs": a.epochs, "rows": len(train_ds), "holdout_rows": len(hold_ds), "classes": len(classes),
        "padding": a.padding, "batch_size": a.batch_size, "max_length": a.max_length, "lr": a.lr, "seed": a.seed,
        "threads": a.threads, "features": feats, "padded_tokens_per_sample": round(seen["padded"] / n, 1),
        "real_tokens_per_sample": round(seen["real"] / n, 1), "optimizer_steps": result.global_step,
        "train_cpu_s": round(cpu2.ru_utime + cpu2.ru_stime - cpu.ru_utime - cpu.ru_stime, 1),
        "loadavg_1m": [round(load_before, 2), round(load_after, 2)], "tokenize_s": round(tokenize_s, 2), "load_s": round(load_s, 2), "eval_s": round(eval_s, 2),
        "parameters": sum(p.numel() for p in model.parameters()), "model": os.path.abspath(a.model),
        "holdout_csv": os.path.join(work, "holdout.csv"), "torch": torch.__version__,
        "transformers": T.__version__}))


if __name__ == "__main__":
    main()
