#!/usr/bin/env python3
"""Writes the small BPE / Unigram fixtures of tests/text/test_tokenizer_models.cpp under tests/text/fixtures and
prints the test's table of expected values (between its "generated" markers), from tokenizers / transformers
themselves:
  bpe_roberta.json   a byte-level BPE (ByteLevel pre-tokenizer, RobertaProcessing, roberta-base's added-token
                     flags: <mask> lstrip, the others normalized), merges as "a b" strings
  bpe_olmo.json      the same vocabulary with ByteLevel(add_prefix_space=false), TemplateProcessing [CLS]/[SEP] and
                     merges as [a, b] pairs
  deberta_spm/       a sentencepiece Unigram model (a small normalization rule TSV, so that its precompiled charsmap
                     is a few hundred bytes) with tokenizer_config.json, special_tokens_map.json, added_tokens.json:
                     the expected values are transformers' (AutoTokenizer on that folder)
  xlmr.json          a sentencepiece Unigram model through transformers' XLMRobertaTokenizer, save_pretrained's file
Usage: python scripts/gen_tokenizer_model_fixtures.py   (tokenizers 0.23.3, transformers, sentencepiece, protobuf)
"""
import json
import os
import shutil
import sys
import tempfile

import sentencepiece as spm
import tokenizers
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "text", "fixtures")
transformers.logging.set_verbosity_error()

CORPUS = [
    "The quick brown fox jumps over the lazy dog.", "the lazy dog sleeps; the quick fox runs away!",
    "Don't stop: we'll see what they're doing, I've said it's fine.", "Numbers 123 and 4567, 3.14 and 2026-12-06.",
    "Café crème brûlée, naïve façade.", "hello world, hello there, world of words",
    "  spaces   and\ttabs\nand newlines  ", "unbelievable, believable, unbelievably believing",
] * 30

CASES = [  # (label, fixture, a, b, max_length, strategy, direction, add_special_tokens)
    ("plain", "bpe_roberta", "The quick brown fox jumps over the lazy dog.", None, 0, "", "", True),
    ("contractions and numbers", "bpe_roberta", "Don't we'll they're 12345 3.14", None, 0, "", "", True),
    ("spaces", "bpe_roberta", "  hello   world \t\n x  ", None, 0, "", "", True),
    ("unknown bytes dropped", "bpe_roberta", "héllo 野口 😀 wörld", None, 0, "", "", True),
    ("mask lstrip", "bpe_roberta", "the <mask> dog and   <mask>fox<s>", None, 0, "", "", True),
    ("pair", "bpe_roberta", "the quick fox", "the lazy dog", 0, "", "", True),
    ("pair without special tokens", "bpe_roberta", "the quick fox", "the lazy dog", 0, "", "", False),
    ("pair truncated", "bpe_roberta", "the quick brown fox jumps", "over the lazy dog", 9, "longest_first", "right", True),
    ("max_length below the special tokens", "bpe_roberta", "the quick fox", "the lazy dog", 3, "longest_first", "right", True),
    ("olmo", "bpe_olmo", "The quick brown fox, the lazy dog!", None, 0, "", "", True),
    ("olmo pair left", "bpe_olmo", "hello world of words", "unbelievable", 7, "only_first", "left", True),
    ("deberta", "deberta_spm", "The quick brown fox jumps over the lazy dog.", None, 0, "", "", True),
    ("deberta normalization", "deberta_spm", "ｆｕｌｌ ﬁne e\u0301 a\u00a0b \x07bell  two  spaces  ", None, 0, "", "", True),
    ("deberta unknown", "deberta_spm", "zzz 野口里佳 qqq", None, 0, "", "", True),
    ("deberta mask", "deberta_spm", "the [MASK] dog[SEP]x", None, 0, "", "", True),
    ("deberta pair", "deberta_spm", "hello world", "the lazy dog", 0, "", "", True),
    ("deberta truncated", "deberta_spm", "hello world of words", "the lazy dog sleeps", 20, "only_second", "right", True),
    ("xlmr", "xlmr", "The quick brown fox jumps over the lazy dog.", None, 0, "", "", True),
    ("xlmr pair", "xlmr", "hello   world", "  the lazy dog ", 0, "", "", True),
]

# A few normalization rules (code points in hex, TAB, replacement): full-width letters, a ligature, NBSP, a
# composition of two code points, a removed control character.
RULES = [("FF46", "66"), ("FF55", "75"), ("FF4C", "6C"), ("FB01", "66 69"), ("A0", "20"), ("65 301", "E9"),
         ("7", "")]


def train_bpe():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=160, special_tokens=[
        "<s>", "<pad>", "</s>", "<unk>", "<mask>", "[CLS]", "[SEP]"]))
    return tok


def main():
    os.makedirs(OUT, exist_ok=True)
    refs = {}
    tok = train_bpe()
    v = tok.get_vocab()
    tok.post_processor = processors.RobertaProcessing(("</s>", v["</s>"]), ("<s>", v["<s>"]))
    j = json.loads(tok.to_str())
    j["model"]["merges"] = [" ".join(m) if isinstance(m, list) else m for m in j["model"]["merges"]]
    for t in j["added_tokens"]:
        t["lstrip"] = t["content"] == "<mask>"
        t["normalized"] = t["content"] != "<mask>"
    path = os.path.join(OUT, "bpe_roberta.json")
    json.dump(j, open(path, "w", encoding="utf-8"), ensure_ascii=False)
    refs["bpe_roberta"] = Tokenizer.from_file(path)

    tok = train_bpe()
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                       special_tokens=[("[CLS]", v["[CLS]"]), ("[SEP]", v["[SEP]"])])
    j = json.loads(tok.to_str())
    j["model"]["merges"] = [m.split(" ") if isinstance(m, str) else m for m in j["model"]["merges"]]
    path = os.path.join(OUT, "bpe_olmo.json")
    json.dump(j, open(path, "w", encoding="utf-8"), ensure_ascii=False)
    refs["bpe_olmo"] = Tokenizer.from_file(path)

    work = tempfile.mkdtemp()
    text = os.path.join(work, "corpus.txt")
    open(text, "w", encoding="utf-8").write("\n".join(CORPUS) + "\n")
    tsv = os.path.join(work, "rules.tsv")
    open(tsv, "w").write("".join("%s\t%s\n" % (a.replace(" ", " "), b) for a, b in RULES))
    common = dict(input=text, model_type="unigram", vocab_size=120, minloglevel=2, normalization_rule_tsv=tsv,
                  hard_vocab_limit=False)
    spm.SentencePieceTrainer.train(model_prefix=os.path.join(work, "deb"), pad_id=0, bos_id=1, eos_id=2, unk_id=3,
                                   pad_piece="[PAD]", bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]", **common)
    d = os.path.join(OUT, "deberta_spm")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    shutil.copy(os.path.join(work, "deb.model"), os.path.join(d, "spm.model"))
    n = spm.SentencePieceProcessor(model_file=os.path.join(d, "spm.model")).get_piece_size()
    json.dump({"do_lower_case": False, "vocab_type": "spm"}, open(os.path.join(d, "tokenizer_config.json"), "w"))
    json.dump({"bos_token": "[CLS]", "eos_token": "[SEP]", "unk_token": "[UNK]", "sep_token": "[SEP]",
               "pad_token": "[PAD]", "cls_token": "[CLS]", "mask_token": "[MASK]"},
              open(os.path.join(d, "special_tokens_map.json"), "w"))
    json.dump({"[MASK]": n}, open(os.path.join(d, "added_tokens.json"), "w"))
    cfg = json.load(open(os.path.join(d, "tokenizer_config.json")))
    cfg["tokenizer_class"] = "DebertaV2Tokenizer"  # for AutoTokenizer only, in a copy
    probe = os.path.join(work, "deb_folder")
    shutil.copytree(d, probe)
    json.dump(cfg, open(os.path.join(probe, "tokenizer_config.json"), "w"))
    refs["deberta_spm"] = transformers.AutoTokenizer.from_pretrained(probe).backend_tokenizer

    spm.SentencePieceTrainer.train(model_prefix=os.path.join(work, "xlmr"), bos_id=0, pad_id=1, eos_id=2, unk_id=3,
                                   **common)
    x = os.path.join(work, "xlmr_folder")
    os.makedirs(x)
    shutil.copy(os.path.join(work, "xlmr.model"), os.path.join(x, "sentencepiece.bpe.model"))
    json.dump({"tokenizer_class": "XLMRobertaTokenizer"}, open(os.path.join(x, "tokenizer_config.json"), "w"))
    hf = transformers.AutoTokenizer.from_pretrained(x)
    hf.save_pretrained(os.path.join(work, "xlmr_saved"))
    shutil.copy(os.path.join(work, "xlmr_saved", "tokenizer.json"), os.path.join(OUT, "xlmr.json"))
    refs["xlmr"] = Tokenizer.from_file(os.path.join(OUT, "xlmr.json"))
    shutil.rmtree(work)

    def lit(s):
        return '"' + "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "".join(
            "\\x%02x\"\"" % b for b in c.encode()) for c in s) + '"'

    print("// ---- generated by scripts/gen_tokenizer_model_fixtures.py with tokenizers==%s, transformers==%s, "
          "sentencepiece==%s ----" % (tokenizers.__version__, transformers.__version__, spm.__version__))
    print("const std::vector<ModelCase> kModelCases = {")
    for label, fix, a, b, ml, strat, direction, special in CASES:
        t = refs[fix]
        if ml:
            t.enable_truncation(ml, strategy=strat, direction=direction)
        else:
            t.no_truncation()
        e = t.encode(a, b, add_special_tokens=special)
        print("    {%s, %s, %s, %s, %d, %s, %s, %s, {%s}, {%s}}," % (
            lit(label), lit(fix), lit(a), "std::nullopt" if b is None else lit(b), ml, lit(strat), lit(direction),
            "true" if special else "false", ", ".join(map(str, e.ids)), ", ".join(map(str, e.type_ids))))
    print("};")
    print("// ---- end of generated ----")


if __name__ == "__main__":
    sys.exit(main())
