#!/usr/bin/env python3
"""Prints the expected values of tests/text/test_tokenizer.cpp's table (between its "generated" markers), from
Hugging Face `tokenizers` itself: the same small vocabulary and normalizer settings as the test's fixtures, each
case encoded by `tokenizers`. Run in a venv with the pinned tokenizers; paste the output over the old table. With a path argument it also
writes the fixtures' tokenizer.json files there, as tokenizers saves them.
"""
import json
import sys

import tokenizers
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "quick", "brown", "fox", "jump", "##s", "##ed",
         "over", "lazy", "dog", ".", ",", "!", "?", "'", "(", ")", "-", "[", "]", "cafe", "creme", "brulee", "naive",
         "un", "##believ", "##able", "##ly", "hello", "world", "##world", "a", "##b", "b", "野", "口", "里", "佳", "東",
         "京", "i", "##\u0307", "##stanbul", "istanbul", "Hello", "Caf", "##é", "é", "e", "##e", "¿", "¡", "。",
         "«", "»", "ｆｕｌｌ", "full", "ǆ", "σ", "ς", "##ς", "##σ", "ο", "##ο"]

# name: (lowercase, strip_accents, post_processor)
CONFIGS = {
    "uncased": (True, None, "template"),
    "cased": (False, None, "template"),
    "lower_keep_accents": (True, False, "template"),
    "bert_processing": (True, None, "bert"),
}

# (label, config, a, b, max_length, strategy, direction, add_special_tokens)
CASES = [
    ('plain', "uncased", "The quick brown fox jumps over the lazy dog.", None, None, "", "", True),
    ('accents', "uncased", "Café Crème BRÛLÉE naïve", None, None, "", "", True),
    ('subwords', "uncased", "unbeliev jumped jumps unbelievably", None, None, "", "", True),
    ('cjk', "uncased", "野口里佳東京 hello野world", None, None, "", "", True),
    ('punctuation', "uncased", "hello,world!(fox)-dog's ¿¡。«»", None, None, "", "", True),
    ('control and whitespace', "uncased", "hello\x00\x07world\ttab\u200bfox\ufffddog\x85a\u00a0b\u3000c", None, None, "", "", True),
    ('unknown words', "uncased", "xyz hello qqq", None, None, "", "", True),
    ('long words', "uncased", "abbbbbbbbb abbbbbbbbbb ééééééééééé", None, None, "", "", True),
    ('added tokens', "uncased", "[CLS] hello [MASK][SEP] [cls] [MASK", None, None, "", "", True),
    ('lowercase', "uncased", "İstanbul ΣΟΣ ǄǅǆＦＵＬＬ", None, None, "", "", True),
    ('empty', "uncased", "", None, None, "", "", True),
    ('only whitespace', "uncased", "   \t\n  ", None, None, "", "", True),
    ('no special tokens', "uncased", "hello world", None, None, "", "", False),
    ('pair', "uncased", "the quick brown fox", "jumps over the lazy dog", None, "", "", True),
    ('pair without special tokens', "uncased", "the quick brown fox", "jumps over the lazy dog", None, "", "", False),
    ('longest_first', "uncased", "the quick brown fox jumps over", "the lazy dog", 9, "longest_first", "right", True),
    ('longest_first', "uncased", "the quick", "brown fox jumps over the lazy dog", 8, "longest_first", "right", True),
    ('longest_first', "uncased", "the quick brown fox", "jumps over the lazy dog", 7, "longest_first", "right", True),
    ('longest_first left', "uncased", "the quick brown fox", "jumps over the lazy dog", 7, "longest_first", "left", True),
    ('only_first', "uncased", "the quick brown fox jumps over", "the lazy dog", 9, "only_first", "right", True),
    ('only_first left', "uncased", "the quick brown fox jumps over", "the lazy dog", 9, "only_first", "left", True),
    ('only_second', "uncased", "the quick", "brown fox jumps over the lazy dog", 9, "only_second", "right", True),
    ('single longest_first', "uncased", "the quick brown fox jumps over the lazy dog", None, 6, "longest_first", "right", True),
    ('single only_first left', "uncased", "the quick brown fox jumps over the lazy dog", None, 6, "only_first", "left", True),
    ('single without special tokens', "uncased", "the quick brown fox jumps over the lazy dog", None, 4, "longest_first", "right", False),
    ('longest_first to nothing', "uncased", "the quick brown fox", "jumps over the lazy dog", 3, "longest_first", "right", True),
    ('cased', "cased", "Hello Café hello CAFE", None, None, "", "", True),
    ('cased pair', "cased", "Hello", "world", None, "", "", True),
    ('lowercase keeps U+0307', "lower_keep_accents", "İstanbul Café", None, None, "", "", True),
    ('BertProcessing pair', "bert_processing", "hello world", "the dog", None, "", "", True),
    ('BertProcessing without special tokens', "bert_processing", "hello world", "the dog", None, "", "", False),
    ('BertProcessing truncated', "bert_processing", "hello world the quick", "brown fox jumps", 7, "longest_first", "right", True),
]


def tokenizer(lowercase, strip_accents, post):
    vocab = {t: i for i, t in enumerate(VOCAB)}
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]", max_input_chars_per_word=10))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase, strip_accents=strip_accents)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    if post == "template":
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    else:
        tok.post_processor = processors.BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    tok.add_special_tokens(VOCAB[:5])
    return tok


def cpp_string(s):
    out = '"'
    for ch in s:
        c = ord(ch)
        if ch in '"\\':
            out += "\\" + ch
        elif 0x20 <= c < 0x7F:
            out += ch
        else:  # \x escapes of the UTF-8 bytes, closed so a following hex digit is not swallowed
            out += "".join('\\x%02x""' % b for b in ch.encode("utf-8"))
    # A NUL inside needs std::string's literal ("..."s) to be kept.
    return out + ('"s' if "\0" in s else '"')


def ints(v):
    return "{" + ", ".join(map(str, v)) + "}"


def main():
    toks = {name: tokenizer(*cfg) for name, cfg in CONFIGS.items()}
    print("// ---- generated by scripts/gen_tokenizer_test_values.py with tokenizers==%s ----" % tokenizers.__version__)
    print("const std::vector<std::string> kVocab = {")
    print("    " + ", ".join(cpp_string(t) for t in VOCAB) + "};")
    print("const std::vector<Expected> kExpected = {")
    for label, cfg, a, b, max_length, strategy, direction, special in CASES:
        tok = toks[cfg]
        if max_length is None:
            tok.no_truncation()
        else:
            tok.enable_truncation(max_length, strategy=strategy, direction=direction)
        e = tok.encode(a, b, add_special_tokens=special)
        print("    {%s, %s, %s, %s, %d, %s, %s, %s, %s, %s}," % (
            cpp_string(label), cpp_string(cfg), cpp_string(a), "std::nullopt" if b is None else cpp_string(b),
            0 if max_length is None else max_length, cpp_string(strategy), cpp_string(direction),
            "true" if special else "false", ints(e.ids), ints(e.type_ids)))
        assert e.attention_mask == [1] * len(e.ids)
    print("};")
    print("// ---- end of generated ----")
    if len(sys.argv) > 1:  # the fixtures' JSON as tokenizers writes it, to compare the test's own writer with
        with open(sys.argv[1], "w", encoding="utf-8") as f:
            json.dump({n: json.loads(t.to_str()) for n, t in toks.items()}, f, ensure_ascii=False, indent=1)


if __name__ == "__main__":
    main()
