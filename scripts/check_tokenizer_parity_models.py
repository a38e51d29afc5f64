#!/usr/bin/env python3
"""kgtrain's byte-level BPE and Unigram tokenizers (lib/text) against Hugging Face tokenizers / transformers.

The sibling of check_tokenizer_parity.py (WordPiece), with its corpus (~125k offline lines: man pages in 27
languages, /usr/share/doc/*/copyright, dpkg descriptions), its hostile list and its "every code point" lines. It
trains, locally (nothing downloaded):
  roberta        a byte-level BPE (tokenizers' ByteLevelBPETokenizer), loaded into transformers'
                 RobertaTokenizerFast and saved with save_pretrained: RoBERTa's tokenizer.json form
                 (RobertaProcessing, <mask> with lstrip, merges as "a b" strings)
  olmo           a tokenizers BPE with the NFC normalizer, ByteLevel(add_prefix_space=false) and TemplateProcessing
                 [CLS]/[SEP], merges saved as [a, b] pairs: the ModernBERT / OLMo (GPT-NeoX) form
  deberta_json   a sentencepiece Unigram model (DeBERTa-v3's layout: [PAD] [CLS] [SEP] [UNK], [MASK] added after
                 the vocabulary) loaded by transformers from spm.model + tokenizer_config.json, save_pretrained's
                 tokenizer.json
  deberta_spm    the same folder without tokenizer.json: kgtrain's Tokenizer::from_folder reads spm.model itself
  deberta_lower  the same with do_lower_case = true, from the spm.model folder
  deberta_first  the same with add_prefix_space = false (Metaspace prepend_scheme "first"), from the folder
  xlmr           a sentencepiece Unigram model loaded by transformers' XLMRobertaTokenizer, save_pretrained
Each is compared on the corpus + hostile lines (singles, pairs, with and without special tokens, truncated by each
strategy and direction) and on every code point: ids, type ids and attention masks, 0 mismatches the bar. The
reference is the tokenizers object transformers builds (tokenizer.backend_tokenizer); that transformers' own
__call__ gives the same ids is checked on the first lines. Then the throughput of each kind on one thread:
tokenizers' encode_batch (RAYON_NUM_THREADS=1) against kgtrain (scripts/tokenizer_parity_driver.cpp).

Usage (venv with tokenizers 0.23.3, transformers, sentencepiece, protobuf):
  python scripts/check_tokenizer_parity_models.py [--work DIR] [--lines N] [--only NAME,...]
Exit 1 when any case differs.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_tokenizer_parity as base  # noqa: E402  (sets RAYON_NUM_THREADS=1 before tokenizers is imported)

import sentencepiece as spm  # noqa: E402
import tokenizers  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402

transformers.logging.set_verbosity_error()


def compare(name, ref, cs, driver, work, path):
    """`ref` a tokenizers.Tokenizer; `path` what the driver loads (a tokenizer.json or a folder)."""
    cases_path, out_path = os.path.join(work, name + ".cases.jsonl"), os.path.join(work, name + ".out.jsonl")
    with open(cases_path, "w", encoding="utf-8") as f:
        for c in cs:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    subprocess.run([driver, "encode", path, cases_path, out_path], check=True)
    with open(out_path, encoding="utf-8") as f:
        got = [json.loads(l) for l in f]
    want = base.encode_py(ref, cs)
    assert len(got) == len(want), "%s: the driver gave %d answers for %d cases" % (name, len(got), len(want))
    bad = [i for i, (g, w) in enumerate(zip(got, want)) if ("error" in g) != ("error" in w) or
           ("error" not in w and g != w)]
    for i in bad[:5]:
        print("  MISMATCH %s case %d: %s\n    reference: %s\n    kgtrain:   %s" % (
            name, i, json.dumps(cs[i], ensure_ascii=True)[:400], json.dumps(want[i])[:400], json.dumps(got[i])[:400]))
    n_err = sum("error" in w for w in want)
    print("%-24s %7d cases (%d pairs, %d truncated, %d refused by both), %d mismatches" % (
        name, len(cs), sum(c["b"] is not None for c in cs), sum(c["max_length"] is not None for c in cs), n_err,
        len(bad)), flush=True)
    return len(bad)


def check_transformers_call(name, hf, lines, n=2000):
    """transformers' own __call__ against its backend tokenizer, singles and pairs."""
    bad = 0
    ref = hf.backend_tokenizer
    ref.no_truncation()
    for i, a in enumerate(lines[:n]):
        b = lines[(i * 7919 + 1) % len(lines)] if i % 2 else None
        e = hf(a, b) if b is not None else hf(a)
        r = ref.encode(a, b) if b is not None else ref.encode(a)
        want = {"input_ids": r.ids, "attention_mask": r.attention_mask}
        if "token_type_ids" in e:
            want["token_type_ids"] = r.type_ids
        got = {k: list(e[k]) for k in want}
        bad += got != want
    print("%-24s transformers __call__ vs its backend tokenizer: %d texts, %d differ" % (name, min(n, len(lines)), bad))
    return bad


def train_spm(work, name, lines, **kw):
    path = os.path.join(work, name + ".train.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    spm.SentencePieceTrainer.train(input=path, model_prefix=os.path.join(work, name), model_type="unigram",
                                   input_sentence_size=200000, shuffle_input_sentence=True, minloglevel=2,
                                   character_coverage=0.9995, **kw)
    return os.path.join(work, name + ".model")


def build(work, lines, args):
    """name -> (reference tokenizers.Tokenizer, transformers tokenizer or None, path for the driver)"""
    out = {}
    only = set(args.only.split(",")) if args.only else None
    want = lambda n: only is None or n in only  # noqa: E731
    train = lines[::2]
    if want("roberta"):
        bl = tokenizers.ByteLevelBPETokenizer()
        bl.train_from_iterator(train, vocab_size=args.vocab_size, min_frequency=2,
                               special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
        d = os.path.join(work, "roberta_files")
        os.makedirs(d, exist_ok=True)
        bl.save_model(d)
        json.dump({"tokenizer_class": "RobertaTokenizer"}, open(os.path.join(d, "tokenizer_config.json"), "w"))
        hf = transformers.AutoTokenizer.from_pretrained(d)
        saved = os.path.join(work, "roberta")
        hf.save_pretrained(saved)
        # roberta-base's own flags: <mask> takes the spaces before it (lstrip), the other special tokens are matched
        # in the normalized text (normalized true).
        path = os.path.join(saved, "tokenizer.json")
        j = json.load(open(path, encoding="utf-8"))
        for t in j["added_tokens"]:
            t["lstrip"] = t["content"] == "<mask>"
            t["normalized"] = t["content"] != "<mask>"
        json.dump(j, open(path, "w", encoding="utf-8"), ensure_ascii=False)
        assert j["model"]["merges"] and j["post_processor"]["type"] == "RobertaProcessing", "not RoBERTa's form"
        out["roberta"] = (Tokenizer.from_file(path), hf, path)
    if want("olmo"):
        tok = Tokenizer(models.BPE())
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True)
        specials = ["|||IP_ADDRESS|||", "<|padding|>", "[CLS]", "[SEP]", "[MASK]", "[UNK]"]
        tok.train_from_iterator(train, trainers.BpeTrainer(vocab_size=args.vocab_size, min_frequency=2,
                                                           special_tokens=specials,
                                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        v = tok.get_vocab()
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
            special_tokens=[("[CLS]", v["[CLS]"]), ("[SEP]", v["[SEP]"])])
        path = os.path.join(work, "olmo.json")
        tok.save(path)
        j = json.load(open(path, encoding="utf-8"))
        m = j["model"]["merges"]
        if m and isinstance(m[0], str):  # make sure this one has the [a, b] form
            j["model"]["merges"] = [l.split(" ") for l in m]
            json.dump(j, open(path, "w", encoding="utf-8"), ensure_ascii=False)
        out["olmo"] = (Tokenizer.from_file(path), None, path)
    if any(want(n) for n in ("deberta_json", "deberta_spm", "deberta_lower", "deberta_first")):
        model = train_spm(work, "deberta", train, vocab_size=args.vocab_size, pad_id=0, bos_id=1, eos_id=2, unk_id=3,
                          pad_piece="[PAD]", bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]")
        n_pieces = spm.SentencePieceProcessor(model_file=model).get_piece_size()
        for name, lower in [("deberta_spm", False), ("deberta_lower", True), ("deberta_first", False)]:
            d = os.path.join(work, name)
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            shutil.copy(model, os.path.join(d, "spm.model"))
            config = {"do_lower_case": lower, "vocab_type": "spm", "tokenizer_class": "DebertaV2Tokenizer"}
            if name == "deberta_first":
                config["add_prefix_space"] = False
            json.dump(config, open(os.path.join(d, "tokenizer_config.json"), "w"))
            json.dump({"bos_token": "[CLS]", "eos_token": "[SEP]", "unk_token": "[UNK]", "sep_token": "[SEP]",
                       "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"},
                      open(os.path.join(d, "special_tokens_map.json"), "w"))
            json.dump({"[MASK]": n_pieces}, open(os.path.join(d, "added_tokens.json"), "w"))
            hf = transformers.AutoTokenizer.from_pretrained(d)
            if want(name):
                out[name] = (hf.backend_tokenizer, hf, d)
            if name == "deberta_spm" and want("deberta_json"):
                saved = os.path.join(work, "deberta_json")
                hf.save_pretrained(saved)
                out["deberta_json"] = (hf.backend_tokenizer, hf, os.path.join(saved, "tokenizer.json"))
    if want("xlmr"):
        model = train_spm(work, "xlmr", train, vocab_size=args.vocab_size, unk_id=3, bos_id=0, eos_id=2, pad_id=1,
                          bos_piece="<s>", eos_piece="</s>", unk_piece="<unk>", pad_piece="<pad>")
        d = os.path.join(work, "xlmr_files")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        shutil.copy(model, os.path.join(d, "sentencepiece.bpe.model"))
        json.dump({"tokenizer_class": "XLMRobertaTokenizer"}, open(os.path.join(d, "tokenizer_config.json"), "w"))
        hf = transformers.AutoTokenizer.from_pretrained(d)
        saved = os.path.join(work, "xlmr")
        hf.save_pretrained(saved)
        out["xlmr"] = (hf.backend_tokenizer, hf, os.path.join(saved, "tokenizer.json"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/tmp/kg_tokenizer_parity_models")
    ap.add_argument("--lines", type=int, default=120000, help="corpus lines to gather (default 120000)")
    ap.add_argument("--vocab-size", type=int, default=16000)
    ap.add_argument("--only", help="comma-separated kinds (default all)")
    ap.add_argument("--driver", help="a compiled scripts/tokenizer_parity_driver.cpp (default: compile it here)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rng = random.Random(4321)
    driver = args.driver or base.build_driver(args.work)
    t0 = time.time()
    lines, sources = base.corpus(args.lines)
    lines = [l.replace("\r", " ") for l in lines]
    print("tokenizers %s, transformers %s, sentencepiece %s; corpus: %d lines, %d characters in %.1f s (%s)" % (
        tokenizers.__version__, transformers.__version__, spm.__version__, len(lines), sum(map(len, lines)),
        time.time() - t0, ", ".join("%s %d" % kv for kv in sorted(sources.items()))), flush=True)
    hard = base.hostile() + [
        "<mask> lstrip <mask>and   <mask>   spaces\u00a0<mask>", "<s></s><pad><unk> [CLS][SEP][MASK] [UNK] [PAD]",
        "don't we'll they're I've she'd it's 'S 'T ''' ' s", "  \t\n  a  \n\n b \u3000\u3000c  ", "\r\n\r\n x\r\ny",
        "e\u0301\u0301 a\u030a \u00a0\u0301 \u1100\u1161\u11a8 \U0001F1EB\U0001F1F7\U0001F1EB \u0915\u094d\u0937",
        "``quoted'' text and \u2581 the metaspace \u2581\u2581 itself", "ﬁ ﬂ ½ ² ㈱ Ⅻ ｶﾞ \u2000\u2001\u200a",
    ]
    texts = hard + lines
    t0 = time.time()
    kinds = build(args.work, lines, args)
    print("trained %s in %.1f s" % (", ".join(kinds), time.time() - t0), flush=True)
    alpha = base.alphabet_lines(rng) + hard
    mismatches = 0
    for name, (ref, hf, path) in kinds.items():
        mismatches += compare(name, ref, base.cases(texts, rng, 0.2), driver, args.work, path)
        mismatches += compare(name + "_codepoints", ref, base.cases(alpha, rng, 0.05), driver, args.work, path)
        if hf is not None:
            mismatches += check_transformers_call(name, hf, texts)
    if "deberta_spm" in kinds:  # kgtrain's conversion of the folder against transformers' saved tokenizer.json
        mine = json.loads(subprocess.run([driver, "folder-json", kinds["deberta_spm"][2]], check=True,
                                         capture_output=True, text=True).stdout)
        theirs = json.loads(kinds["deberta_spm"][0].to_str())
        for key in ("model", "normalizer", "pre_tokenizer", "post_processor", "added_tokens"):
            same = mine.get(key) == theirs.get(key)
            mismatches += not same
            print("deberta_spm folder conversion, %-14s %s" % (key + ":", "same as transformers'" if same else
                                                             "DIFFERS: %s ... vs %s ..." % (
                                                                 json.dumps(mine.get(key))[:300],
                                                                 json.dumps(theirs.get(key))[:300])))
    lines_path = os.path.join(args.work, "corpus.txt")
    with open(lines_path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    for name, (ref, hf, path) in kinds.items():
        ref.no_truncation()
        t0 = time.perf_counter()
        enc = ref.encode_batch(lines)
        py_s = time.perf_counter() - t0
        py_tokens = sum(len(e.ids) for e in enc)
        cpp = json.loads(subprocess.run([driver, "bench", path, lines_path], check=True, capture_output=True,
                                        text=True).stdout)
        assert cpp["tokens"] == py_tokens, "%s: token counts differ: %d vs %d" % (name, cpp["tokens"], py_tokens)
        print("throughput %-14s one thread, %d lines, %d tokens: tokenizers encode_batch %.0f lines/s "
              "(%.2f M tokens/s); kgtrain %.0f lines/s (%.2f M tokens/s), %.2fx" % (
                  name, len(lines), py_tokens, len(lines) / py_s, py_tokens / py_s / 1e6, len(lines) / cpp["seconds"],
                  py_tokens / cpp["seconds"] / 1e6, py_s / cpp["seconds"]), flush=True)
    print("PARITY %s: %d mismatches" % ("OK" if mismatches == 0 else "FAILED", mismatches))
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
