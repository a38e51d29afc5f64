#!/usr/bin/env python3
"""Writes tests/text/fixtures/windows.json, the sliding windows of tests/text/test_windows.cpp, from Hugging Face's
fast tokenizers themselves: for each case, transformers' tokenizer(text, truncation=True, max_length=M, stride=S,
return_overflowing_tokens=True) on a fixture of tests/text/fixtures (a byte-level BPE with RobertaProcessing, an
XLM-R sentencepiece Unigram, a TemplateProcessing BPE), right and left truncation, every window's ids.
Usage: /work/main/.venv-text/bin/python scripts/gen_window_fixture.py   (tokenizers 0.23.3, transformers 5.25.0)
"""
import json
import os

import tokenizers
import transformers
from transformers import PreTrainedTokenizerFast

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "text", "fixtures")
transformers.logging.set_verbosity_error()

TEXT = ("The quick brown fox jumps over the lazy dog. The lazy dog sleeps; the quick fox runs away! Don't stop: "
        "we'll see what they're doing, I've said it's fine. Numbers 123 and 4567, 3.14 and 2026-12-06.")
CASES = [  # (fixture, text, max_length, stride, side)
    ("bpe_roberta.json", TEXT, 16, 4, "right"),
    ("bpe_roberta.json", TEXT, 16, 0, "right"),
    ("bpe_roberta.json", TEXT, 12, 7, "right"),
    ("bpe_roberta.json", TEXT, 16, 4, "left"),
    ("bpe_roberta.json", "hello world", 16, 4, "right"),
    ("xlmr.json", TEXT, 20, 6, "right"),
    ("xlmr.json", TEXT, 20, 6, "left"),
    ("bpe_olmo.json", TEXT, 24, 8, "right"),
    ("bpe_olmo.json", TEXT, 10, 3, "left"),
]


def load(fixture):
    return PreTrainedTokenizerFast(tokenizer_file=os.path.join(FIX, fixture))


def main():
    out = {"tokenizers": tokenizers.__version__, "transformers": transformers.__version__, "cases": []}
    for fixture, text, max_length, stride, side in CASES:
        tok = load(fixture)
        assert tok.is_fast, fixture
        tok.truncation_side = side
        enc = tok(text, truncation=True, max_length=max_length, stride=stride, return_overflowing_tokens=True)
        out["cases"].append({"fixture": fixture, "text": text, "max_length": max_length, "stride": stride,
                             "side": side, "windows": enc["input_ids"]})
    with open(os.path.join(FIX, "windows.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
