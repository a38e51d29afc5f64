#!/usr/bin/env python3
"""A randomly initialised Hugging Face text-encoder folder with a tokenizer trained on a task's own texts, made
offline: what kgtrain's model.pretrained reads when no Hub download is possible (tests, CI, benchmarks).

  python scripts/make_text_model.py OUT_DIR --texts train.csv [--kind deberta|bert] [--size tiny|small]
                                    [--vocab 8000] [--seed 0] [--text-col text] [--max-texts 0]

--kind deberta (default): a sentencepiece Unigram model (DeBERTa-v3's special pieces: [PAD] 0, [CLS] 1, [SEP] 2,
  [UNK] 3, [MASK] added after the vocabulary; nmt_nfkc normalization, so the model carries a precompiled charsmap)
  and a DebertaV2Model in DeBERTa-v3's form: relative attention with 256 log buckets, LayerNorm'd relative
  embeddings, shared keys, c2p + p2c, no absolute positions, no token types.
    tiny  hidden 128, 2 layers, 4 heads, intermediate 512      (~1.5 M parameters with an 8k vocabulary)
    small DeBERTa-v3-small's shape: hidden 768, 6 layers, 12 heads, intermediate 3072 (~49 M with 8k)
  Folder: config.json, model.safetensors, spm.model, tokenizer_config.json, tokenizer.json (+ special tokens files
  as transformers writes them). kgtrain reads either tokenizer.json or spm.model + tokenizer_config.json.
--kind bert: a lower-cased WordPiece vocabulary (tokenizers' BertWordPieceTokenizer) and a BertModel (with pooler).
    tiny  hidden 128, 2 layers, 2 heads, intermediate 512 (BERT-tiny)
    small hidden 512, 4 layers, 8 heads, intermediate 2048 (BERT-small; the default for --kind bert)
  Folder: config.json, model.safetensors, vocab.txt, tokenizer.json, tokenizer_config.json.

--texts: a CSV with a text column (RFC 4180; scripts/make_text_task.py's train.csv) or a plain .txt (one text a
line). Deterministic: the tokenizer trains on one thread with a fixed seed, the weights come from torch.manual_seed
(--seed); the same texts give the same files. The folder is checked by reloading it with AutoModel and AutoTokenizer
(offline), running a forward pass, and comparing the saved tokenizer with the one built from the raw vocabulary.
Needs torch, transformers (5.x), tokenizers, and for --kind deberta sentencepiece and protobuf (transformers reads
spm.model through sentencepiece's protobuf schema).
"""
import argparse, csv, hashlib, json, os, shutil, sys, tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PROG = "make_text_model"
SIZES = {
    "deberta": {"tiny": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512),
                "small": dict(hidden_size=768, num_hidden_layers=6, num_attention_heads=12, intermediate_size=3072)},
    "bert": {"tiny": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512),
             "small": dict(hidden_size=512, num_hidden_layers=4, num_attention_heads=8, intermediate_size=2048)},
}
SPECIALS = {"bos_token": "[CLS]", "eos_token": "[SEP]", "unk_token": "[UNK]", "sep_token": "[SEP]",
            "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"}


def die(msg):
    sys.exit(f"{PROG}: error: {msg}")


def read_texts(path, col, limit):
    if not os.path.exists(path):
        die(f"{path}: no such file")
    texts = []
    with open(path, encoding="utf-8", newline="") as f:
        if path.endswith(".csv"):
            csv.field_size_limit(1 << 30)
            r = csv.DictReader(f)
            if col not in (r.fieldnames or []):
                die(f"{path}: no column {col!r} (columns: {', '.join(r.fieldnames or [])})")
            texts = [row[col] for row in r]
        else:
            texts = [l.rstrip("\n") for l in f]
    texts = [t for t in texts if t.strip()]
    if limit:
        texts = texts[:limit]
    if len(texts) < 100:
        die(f"{path}: only {len(texts)} texts; a tokenizer needs more")
    return texts


def train_spm(texts, work, vocab, seed):
    import sentencepiece as spm
    path = os.path.join(work, "corpus.txt")
    with open(path, "w", encoding="utf-8") as f:
        for t in texts:  # sentencepiece reads one sentence a line: each line of a text is a sentence
            for line in t.split("\n"):
                if line.strip():
                    f.write(line.strip() + "\n")
    if hasattr(spm, "set_random_generator_seed"):
        spm.set_random_generator_seed(seed)
    prefix = os.path.join(work, "spm")
    spm.SentencePieceTrainer.train(
        input=path, model_prefix=prefix, model_type="unigram", vocab_size=vocab, character_coverage=0.9995,
        pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]", bos_piece="[CLS]", eos_piece="[SEP]",
        unk_piece="[UNK]", num_threads=1, input_sentence_size=0, shuffle_input_sentence=False,
        max_sentence_length=16384, minloglevel=2)
    # The model records its trainer's input path and prefix (a random temporary folder): name them plainly, so
    # that the same texts give the same bytes.
    from sentencepiece import sentencepiece_model_pb2 as pb
    m = pb.ModelProto()
    with open(prefix + ".model", "rb") as f:
        m.ParseFromString(f.read())
    del m.trainer_spec.input[:]
    m.trainer_spec.input.append("corpus.txt")
    m.trainer_spec.model_prefix = "spm"
    with open(prefix + ".model", "wb") as f:
        f.write(m.SerializeToString(deterministic=True))
    return prefix + ".model"


def make_deberta(out, texts, size, vocab, seed, work):
    try:
        import google.protobuf  # noqa: F401  transformers' spm.model reader; without it, a misleading tiktoken error
    except ImportError:
        die("--kind deberta needs the protobuf package (pip install protobuf): transformers reads spm.model with it")
    import sentencepiece as spm
    import torch
    import transformers as T
    model_file = train_spm(texts, work, vocab, seed)
    pieces = spm.SentencePieceProcessor(model_file=model_file).get_piece_size()
    # The raw folder as microsoft/deberta-v3-* ship it: spm.model + tokenizer_config.json (+ the special tokens).
    raw = os.path.join(work, "raw")
    os.makedirs(raw)
    shutil.copy(model_file, os.path.join(raw, "spm.model"))
    with open(os.path.join(raw, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": False, "vocab_type": "spm", "tokenizer_class": "DebertaV2Tokenizer"}, f)
    with open(os.path.join(raw, "special_tokens_map.json"), "w") as f:
        json.dump(SPECIALS, f)
    with open(os.path.join(raw, "added_tokens.json"), "w") as f:
        json.dump({"[MASK]": pieces}, f)
    tok = T.AutoTokenizer.from_pretrained(raw)
    if tok.convert_tokens_to_ids("[MASK]") != pieces or tok.pad_token_id != 0:
        die(f"unexpected special ids: [MASK] {tok.convert_tokens_to_ids('[MASK]')}, [PAD] {tok.pad_token_id}")
    tok.save_pretrained(out)
    tidy_tokenizer_config(out)
    if not os.path.exists(os.path.join(out, "spm.model")):  # transformers 5 writes tokenizer.json only
        shutil.copy(model_file, os.path.join(out, "spm.model"))
    config = T.DebertaV2Config(
        vocab_size=len(tok), **SIZES["deberta"][size], hidden_act="gelu", hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=0, initializer_range=0.02,
        layer_norm_eps=1e-7, relative_attention=True, max_relative_positions=-1, position_buckets=256,
        norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"], position_biased_input=False,
        pad_token_id=0)
    torch.manual_seed(seed)
    model = T.DebertaV2Model(config)
    model.save_pretrained(out, safe_serialization=True)
    return raw, model


def make_bert(out, texts, size, vocab, seed, work):
    import tokenizers
    import torch
    import transformers as T
    wp = tokenizers.BertWordPieceTokenizer(clean_text=True, handle_chinese_chars=True, strip_accents=None,
                                           lowercase=True)
    wp.train_from_iterator(texts, vocab_size=vocab, min_frequency=2, show_progress=False,
                           special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], limit_alphabet=1000,
                           wordpieces_prefix="##")
    raw = os.path.join(work, "raw")
    os.makedirs(raw)
    wp.save_model(raw)  # vocab.txt
    with open(os.path.join(raw, "tokenizer_config.json"), "w") as f:
        json.dump({"do_lower_case": True, "tokenizer_class": "BertTokenizer", "model_max_length": 512}, f)
    tok = T.AutoTokenizer.from_pretrained(raw)
    tok.save_pretrained(out)
    tidy_tokenizer_config(out)
    if not os.path.exists(os.path.join(out, "vocab.txt")):
        shutil.copy(os.path.join(raw, "vocab.txt"), os.path.join(out, "vocab.txt"))
    config = T.BertConfig(vocab_size=len(tok), **SIZES["bert"][size], hidden_act="gelu", hidden_dropout_prob=0.1,
                          attention_probs_dropout_prob=0.1, max_position_embeddings=512, type_vocab_size=2,
                          initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0)
    torch.manual_seed(seed)
    model = T.BertModel(config, add_pooling_layer=True)
    model.save_pretrained(out, safe_serialization=True)
    return raw, model


def tidy_tokenizer_config(out):
    """transformers 5 saves the load-time flags is_local / local_files_only (true offline) into
    tokenizer_config.json; they describe the loading, not the tokenizer."""
    path = os.path.join(out, "tokenizer_config.json")
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    for k in ("is_local", "local_files_only"):
        cfg.pop(k, None)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2, ensure_ascii=False)
        f.write("\n")


def verify(out, raw, built, texts):
    """Reload offline with the Auto classes; same weights, same tokens as the raw vocabulary, a forward pass."""
    import torch
    import transformers as T
    tok = T.AutoTokenizer.from_pretrained(out)
    ref = T.AutoTokenizer.from_pretrained(raw)
    sample = texts[:: max(1, len(texts) // 500)][:500] + ["", "Ünïcödé — “quotes”, 数字 123, [MASK] tab\tend"]
    a = tok(sample, truncation=True, max_length=128)["input_ids"]
    b = ref(sample, truncation=True, max_length=128)["input_ids"]
    if a != b:
        die(f"{out}: the saved tokenizer differs from the one built from the raw vocabulary "
            f"({sum(x != y for x, y in zip(a, b))} of {len(a)} texts)")
    model = T.AutoModel.from_pretrained(out)
    sd, bd = model.state_dict(), built.state_dict()
    if sd.keys() != bd.keys() or any(not torch.equal(sd[k], bd[k]) for k in sd):
        die(f"{out}: the reloaded weights differ from the saved ones")
    model.eval()
    enc = tok(sample[:8], truncation=True, max_length=128, padding=True, return_tensors="pt")
    with torch.no_grad():
        h = model(**enc).last_hidden_state
    if not torch.isfinite(h).all():
        die(f"{out}: non-finite hidden states")
    lens = [len(x) for x in a[:-2]]
    return {"tokenizer_class": type(tok).__name__, "model_class": type(model).__name__, "vocab_size": len(tok),
            "parameters": sum(p.numel() for p in model.parameters()), "hidden_shape": list(h.shape),
            "tokens_per_text": {"median": sorted(lens)[len(lens) // 2], "p90": sorted(lens)[len(lens) * 9 // 10],
                                "truncated_at_128": sum(l >= 128 for l in lens) / len(lens)}}


def main():
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--texts", required=True, help="train.csv (its --text-col) or a .txt file, one text a line")
    ap.add_argument("--kind", choices=["deberta", "bert"], default="deberta")
    ap.add_argument("--size", choices=["tiny", "small"], default=None, help="default: tiny (deberta), small (bert)")
    ap.add_argument("--vocab", type=int, default=8000, help="tokenizer vocabulary (default 8000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--text-col", default="text")
    ap.add_argument("--max-texts", type=int, default=0, help="train the tokenizer on the first N texts (0 = all)")
    a = ap.parse_args()
    size = a.size or ("tiny" if a.kind == "deberta" else "small")
    texts = read_texts(a.texts, a.text_col, a.max_texts)
    out = a.out_dir
    if os.path.exists(out):
        if not os.path.isdir(out) or (os.listdir(out) and not os.path.exists(os.path.join(out, "config.json"))):
            die(f"{out} exists and is not a model folder this script made: refusing to overwrite it")
        shutil.rmtree(out)
    os.makedirs(out)
    import transformers
    transformers.utils.logging.disable_progress_bar()
    with tempfile.TemporaryDirectory(prefix="make_text_model.") as work:
        make = make_deberta if a.kind == "deberta" else make_bert
        raw, model = make(out, texts, size, a.vocab, a.seed, work)
        info = verify(out, raw, model, texts)
    files = {}
    umask = os.umask(0)
    os.umask(umask)
    for name in sorted(os.listdir(out)):
        os.chmod(os.path.join(out, name), 0o666 & ~umask)  # transformers 5 writes model.safetensors 0600
        with open(os.path.join(out, name), "rb") as f:
            files[name] = hashlib.sha256(f.read()).hexdigest()[:16]
    info.update(kind=a.kind, size=size, seed=a.seed, texts=len(texts), files=files)
    print(json.dumps(info))


if __name__ == "__main__":
    main()
