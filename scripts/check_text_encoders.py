#!/usr/bin/env python3
"""Parity of kgtrain's text encoders (lib/model/text) with Hugging Face transformers.

Pinned: transformers 5.25.0 (PyPI), torch 2.11.0 (CPU, fp32). No Hub access: every model is built from a config
with random weights (seeded), saved with save_pretrained (model.safetensors), or once with torch.save as
pytorch_model.bin, some as *ForSequenceClassification / *ForPreTraining (names prefixed "deberta.", "electra.").
For each model and batch, transformers (eval mode, eager attention -- and BERT's default sdpa once -- no dropout)
gives every layer's hidden states and one training step's gradients (loss = sum(last hidden state * a fixed random
tensor that is zero at padding)), compared on the real tokens (padding positions hold nothing anyone reads:
every kgtrain encoder (BERT, DistilBERT, DeBERTa, ModernBERT) skips them and gives zeros there); kgtrain_text_parity
loads the folder and computes the same, plus the gradients with every layer checkpointed. Batches: lengths 40 and 300 (> 256:
DeBERTa-v3's log buckets), padded (rows padded to different lengths) and unpadded.

The *ForMaskedLM cases also check kgtrain pretrain's MLM head (lib/model/text/mlm.h) on labels at 15 % of the real
tokens: the logits at the labelled positions, the loss and every gradient (the decoder tied to the word embeddings)
against transformers' model(labels=...). For bert, deberta-v3 and modernbert the text model's poolings over the last
2 layers (model.pooling mean, cls, attention with model.pool_layers = 2) are checked against the Kaggle notebooks'
MeanPooling and AttentionPooling written here in Python, fed transformers' hidden states and kgtrain's pooling weights.

A check passes when max|kgtrain - transformers| <= 1e-5 * max(1, max|transformers|): absolute for values up to 1,
relative to the tensor's largest value beyond (gradients reach hundreds). One row per check; exit 1 on failure.

  python3 -m venv .venv-hf && echo $PWD/../main/.venv-torch/lib/python3.11/site-packages > \\
      .venv-hf/lib/python3.11/site-packages/torchvenv.pth && .venv-hf/bin/pip install transformers==5.25.0 safetensors
  ninja -C build-enc kgtrain_text_parity
  .venv-hf/bin/python scripts/check_text_encoders.py --binary build-enc/kgtrain_text_parity [--only deberta-v3 ...]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import torch
import transformers
from safetensors.torch import load_file, save_file

TOL = 1e-5
POOLED = ("bert", "deberta-v3", "modernbert")  # cases whose poolings are checked too
V = 300  # vocabulary of the small models
SMALL = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, initializer_range=0.1)


def cases():
    T = transformers
    bert_like = dict(vocab_size=V, hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=128,
                     max_position_embeddings=512, **SMALL)
    v3 = dict(vocab_size=V, hidden_size=64, num_hidden_layers=3, num_attention_heads=4, intermediate_size=128,
              hidden_act="gelu", max_position_embeddings=512, relative_attention=True, position_buckets=256,
              norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"], max_relative_positions=-1,
              position_biased_input=False, type_vocab_size=0, layer_norm_eps=1e-7, pad_token_id=0, **SMALL)
    v2 = dict(v3, position_buckets=-1, norm_rel_ebd="none", share_att_key=False, pos_att_type="p2c|c2p",
              position_biased_input=True, type_vocab_size=2, embedding_size=32, conv_kernel_size=3)
    modern = dict(vocab_size=V, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, intermediate_size=96,
                  pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2, local_attention=16,
                  initializer_range=0.1, max_position_embeddings=1024)
    # (name, config, model class to save, file format)
    return [
        ("deberta-v3", T.DebertaV2Config(**v3), T.DebertaV2Model, "safetensors"),
        ("deberta-v3-cls-bin", T.DebertaV2Config(**v3, num_labels=3), T.DebertaV2ForSequenceClassification, "bin"),
        ("deberta-v2", T.DebertaV2Config(**v2), T.DebertaV2Model, "safetensors"),
        # microsoft/deberta-v3-base's config.json but 2 layers and a small vocabulary: its widths and 64-wide heads
        ("deberta-v3-base-width", T.DebertaV2Config(**dict(v3, hidden_size=768, num_attention_heads=12,
                                                            intermediate_size=3072, num_hidden_layers=2,
                                                            pos_att_type="p2c|c2p", initializer_range=0.02)),
         T.DebertaV2Model, "safetensors"),
        ("deberta-v3-c2p", T.DebertaV2Config(**dict(v3, pos_att_type=["c2p"], share_att_key=False,
                                                     hidden_act="gelu_new")), T.DebertaV2Model, "safetensors"),
        ("bert", T.BertConfig(**bert_like, type_vocab_size=2), T.BertModel, "safetensors"),
        # transformers' default attention for BERT (kgtrain computes the eager one's ops)
        ("bert-sdpa", T.BertConfig(**bert_like, type_vocab_size=2), T.BertModel, "safetensors"),
        ("roberta", T.RobertaConfig(**dict(bert_like, max_position_embeddings=514), pad_token_id=1,
                                    type_vocab_size=1), T.RobertaModel, "safetensors"),
        ("xlm-roberta-cls", T.XLMRobertaConfig(**dict(bert_like, max_position_embeddings=514), pad_token_id=1,
                                               type_vocab_size=1), T.XLMRobertaForSequenceClassification,
         "safetensors"),
        ("electra", T.ElectraConfig(**bert_like, embedding_size=32, type_vocab_size=2), T.ElectraForPreTraining,
         "safetensors"),
        ("distilbert", T.DistilBertConfig(vocab_size=V, dim=64, n_layers=3, n_heads=4, hidden_dim=128, dropout=0.0,
                                          attention_dropout=0.0, max_position_embeddings=512, initializer_range=0.1),
         T.DistilBertModel, "safetensors"),
        ("modernbert", T.ModernBertConfig(**modern), T.ModernBertModel, "safetensors"),
        # *ForMaskedLM: the encoder as above, and the MLM head of kgtrain pretrain (lib/model/text/mlm.h) against
        # the model's logits at the labelled positions, its loss and every gradient, the tied decoder included
        ("bert-mlm", T.BertConfig(**bert_like, type_vocab_size=2), T.BertForMaskedLM, "safetensors"),
        ("roberta-mlm", T.RobertaConfig(**dict(bert_like, max_position_embeddings=514), pad_token_id=1,
                                        type_vocab_size=1), T.RobertaForMaskedLM, "safetensors"),
        ("deberta-v3-mlm", T.DebertaV2Config(**v3), T.DebertaV2ForMaskedLM, "safetensors"),
        ("deberta-v3-mlm-new", T.DebertaV2Config(**v3, legacy=False), T.DebertaV2ForMaskedLM, "safetensors"),
        ("deberta-v2-mlm", T.DebertaV2Config(**v2), T.DebertaV2ForMaskedLM, "safetensors"),
        ("distilbert-mlm", T.DistilBertConfig(vocab_size=V, dim=64, n_layers=3, n_heads=4, hidden_dim=128, dropout=0.0,
                                              attention_dropout=0.0, max_position_embeddings=512,
                                              initializer_range=0.1), T.DistilBertForMaskedLM, "safetensors"),
        ("modernbert-mlm", T.ModernBertConfig(**modern), T.ModernBertForMaskedLM, "safetensors"),
        ("modernbert-bias-cls", T.ModernBertConfig(**dict(modern, norm_bias=True, attention_bias=True, mlp_bias=True,
                                                          hidden_activation="gelu_pytorch_tanh", num_labels=2)),
         T.ModernBertForSequenceClassification, "safetensors"),
    ]


def base_of(model):
    return getattr(model, "base_model", model)


def build(name, cfg, cls, fmt, folder):
    torch.manual_seed(0)
    cfg._attn_implementation = "sdpa" if name.endswith("-sdpa") else "eager"
    model = cls(cfg).eval()
    with torch.no_grad():  # LayerNorms and biases away from 1 and 0, so that a swapped name shows
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn_like(p))
    if fmt == "bin":
        cfg.save_pretrained(folder)
        torch.save(model.state_dict(), os.path.join(folder, "pytorch_model.bin"))
    else:
        model.save_pretrained(folder)
    return model


def batch(cfg, length, padded, seed):
    g = torch.Generator().manual_seed(seed)
    pad = cfg.pad_token_id if cfg.pad_token_id is not None else 0
    B = 3
    ids = torch.randint(2, V, (B, length), generator=g)
    mask = torch.ones(B, length, dtype=torch.long)
    if padded:
        for row, keep in ((1, length // 2), (2, length - 3)):
            mask[row, keep:] = 0
            ids[row, keep:] = pad
    out = {"input_ids": ids, "attention_mask": mask}
    if getattr(cfg, "type_vocab_size", 0) and cfg.type_vocab_size > 1:
        out["token_type_ids"] = (torch.arange(length) >= length // 3).long().expand(B, -1).contiguous() * mask
    hidden = getattr(cfg, "hidden_size", None) or cfg.dim
    # Padding positions hold nothing anyone may read (kgtrain gives zeros there where it skips them): the probe, and
    # so the loss and its gradients, covers the real tokens only, as every pooling does.
    out["probe"] = torch.randn(B, length, hidden, generator=g) * mask.unsqueeze(-1)
    # 15 % of the real tokens labelled for the MLM models (-100 elsewhere), the first token of each row always
    chosen = (torch.rand(B, length, generator=g) < 0.15) & mask.bool()
    chosen[:, 0] = True
    out["mlm_labels"] = torch.where(chosen, ids, torch.full_like(ids, -100))
    return out


def reference(model, inputs):
    model.zero_grad()
    args = {k: v for k, v in inputs.items() if k not in ("probe", "mlm_labels", "pool_layers")}
    with torch.no_grad():
        hidden = model(**args, output_hidden_states=True).hidden_states
    out = model(**args, output_hidden_states=True)
    loss = (out.last_hidden_state * inputs["probe"]).sum()
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return hidden, loss.detach(), grads


def mlm_reference(full, inputs):
    full.zero_grad()
    args = {k: v for k, v in inputs.items() if k not in ("probe", "mlm_labels", "pool_layers")}
    labels = inputs["mlm_labels"]
    out = full(**args, labels=labels)
    out.loss.backward()
    grads = {n: p.grad.clone() for n, p in full.named_parameters() if p.grad is not None}
    return out.logits[labels.ne(-100)].detach(), out.loss.detach(), grads


class MeanPooling(torch.nn.Module):
    """The Kaggle NLP notebooks' MeanPooling (Feedback Prize, NBME): the attention-masked mean of the tokens."""

    def forward(self, last_hidden_state, attention_mask):
        m = attention_mask.unsqueeze(-1).expand(last_hidden_state.size()).float()
        return torch.sum(last_hidden_state * m, 1) / torch.clamp(m.sum(1), min=1e-9)


class AttentionPooling(torch.nn.Module):
    """The Kaggle notebooks' AttentionPooling: Linear(H, H) -> tanh -> Linear(H, 1), softmax over the real tokens."""

    def __init__(self, hidden):
        super().__init__()
        self.attention = torch.nn.Sequential(torch.nn.Linear(hidden, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1))

    def forward(self, last_hidden_state, attention_mask):
        w = self.attention(last_hidden_state).float()
        w[attention_mask == 0] = float("-inf")
        w = torch.softmax(w, 1)
        return torch.sum(w * last_hidden_state, dim=1)


def pool_reference(got, hidden, mask, k):
    """kgtrain's model.pooling over the last k layers (pool_layers), from transformers' hidden states, last first."""
    layers = [hidden[-1 - i] for i in range(k)]
    out = {"mean": torch.cat([MeanPooling()(h, mask) for h in layers], 1),
           "cls": torch.cat([h[:, 0] for h in layers], 1)}
    parts = []
    for i, h in enumerate(layers):
        pool = AttentionPooling(h.size(-1))
        with torch.no_grad():  # kgtrain's attention_pool.I weights, under the notebook's Sequential names
            for mine, theirs in (("dense", "0"), ("score", "2")):
                for p in ("weight", "bias"):
                    getattr(pool.attention, theirs).get_parameter(p).copy_(got[f"pool.attention.{i}.{mine}.{p}"])
            parts.append(pool(h, mask))
    out["attention"] = torch.cat(parts, 1)
    return out


def compare_grads(rows, label, what, mine, grads):
    names = set(mine) ^ set(grads)
    worst = max((diff(mine[n], grads[n]) for n in grads if n in mine), default=0.0)
    note = f"names differ: {sorted(names)[:4]}" if names else ""
    rows.append((label, f"{what} x{len(grads)}", worst if not names else float("inf"), note))


def diff(a, b, mask=None):
    """Worst |a - b| over max(1, max|b|); with a [B, L] mask, over the real tokens of [B, L, ...] tensors only."""
    if mask is not None:
        keep = mask.bool()
        a, b = a[keep], b[keep]
    return (a.double() - b.double()).abs().max().item() / max(1.0, b.double().abs().max().item())


def check(name, binary, folder, cfg, full, length, padded, seed, work, rows):
    model = base_of(full)
    mlm = type(full).__name__.endswith("ForMaskedLM")
    inputs = batch(cfg, length, padded, seed)
    if not mlm:
        del inputs["mlm_labels"]
    if name in POOLED:  # the text model's poolings over the last 2 layers, against a Python reference
        inputs["pool_layers"] = torch.tensor([2])
    in_path, out_path = os.path.join(work, "in.safetensors"), os.path.join(work, "out.safetensors")
    save_file({k: v.contiguous() for k, v in inputs.items()}, in_path)
    run = subprocess.run([binary, folder, in_path, out_path], capture_output=True, text=True)
    label = f"{name} L={length} {'padded' if padded else 'unpadded'}"
    if run.returncode != 0:
        rows.append((label, "run", float("inf"), f"exit {run.returncode}: {run.stderr.strip()[-300:]}"))
        return
    got = load_file(out_path)
    hidden, loss, grads = reference(model, inputs)
    n_hidden = sum(1 for k in got if k.startswith("hidden."))
    mask = inputs["attention_mask"]
    worst = (max(diff(got[f"hidden.{i}"], h, mask) for i, h in enumerate(hidden)) if n_hidden == len(hidden)
             else float("inf"))
    note = f"{n_hidden} hidden states, transformers {len(hidden)}" if n_hidden != len(hidden) else ""
    if length == 40 and padded:  # what the folder held beyond the encoder (a task head) or lacked (its pooler)
        note = f"loaded: {int(got['load.missing'])} missing, {int(got['load.unexpected'])} unexpected {note}"
    rows.append((label, f"hidden x{len(hidden)}", worst, note))
    rows.append((label, "loss", diff(got["grad.loss"], loss.reshape(1)), ""))
    for tag in ("grad", "ckpt"):
        mine = {k[len(tag) + 1:]: v for k, v in got.items() if k.startswith(tag + ".") and k != tag + ".loss"}
        compare_grads(rows, label, tag, mine, grads)
    if "pool_layers" in inputs:
        ref = pool_reference(got, hidden, mask, int(inputs["pool_layers"]))
        for pooling, want in ref.items():
            rows.append((label, f"pool {pooling} k={int(inputs['pool_layers'])}",
                         diff(got[f"pool.{pooling}"], want), "against the notebooks' Python pooling"))
    if mlm:
        logits, loss, grads = mlm_reference(full, inputs)
        head = "head from the file" if int(got["mlm.head"]) else "head NOT loaded"
        ok_shape = got["mlm.logits"].shape == logits.shape
        rows.append((label, "mlm logits", diff(got["mlm.logits"], logits) if ok_shape else float("inf"),
                     head if ok_shape else f"{head}; shape {tuple(got['mlm.logits'].shape)} vs {tuple(logits.shape)}"))
        rows.append((label, "mlm loss", diff(got["mlm.loss"], loss.reshape(1)), ""))
        mine = {k[len("mlm.grad."):]: v for k, v in got.items() if k.startswith("mlm.grad.")}
        compare_grads(rows, label, "mlm grad", mine, grads)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default="build-enc/kgtrain_text_parity")
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--keep", default=None, help="keep the model folders here")
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    print(f"transformers {transformers.__version__}, torch {torch.__version__}; tolerance {TOL} "
          "(x max(1, max|reference|))")
    work = args.keep or tempfile.mkdtemp(prefix="kg_text_parity_")
    rows = []
    try:
        for name, cfg, cls, fmt in cases():
            if args.only and name not in args.only:
                continue
            folder = os.path.join(work, name)
            os.makedirs(folder, exist_ok=True)
            model = build(name, cfg, cls, fmt, folder)
            for i, (length, padded) in enumerate(((40, True), (40, False), (300, True))):
                check(name, args.binary, folder, cfg, model, length, padded, 100 + i, work, rows)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    failed = 0
    for label, what, d, note in rows:
        ok = d <= TOL
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {label:<40} {what:<12} {d:.2e} {note}")
    print(f"{len(rows) - failed}/{len(rows)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
