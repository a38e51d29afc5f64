#!/usr/bin/env python3
"""kgtrain's WordPiece tokenizer (lib/text) against Hugging Face `tokenizers`, id for id.

1. Gathers offline text from this machine: man pages in every language under /usr/share/man (troff stripped by a
   few regexes), /usr/share/doc/*/copyright and the package descriptions in /var/lib/dpkg/status, plus a hostile
   list (combining marks, CJK, emoji, NBSP, full-width forms, control characters, 1,000-character words, runs of
   spaces, invalid-for-BERT code points).
2. Trains a BERT-style WordPiece tokenizer on it with `tokenizers` (BertNormalizer lowercase, BertPreTokenizer,
   TemplateProcessing [CLS] $A [SEP] / [CLS] $A [SEP] $B:1 [SEP]:1) and saves tokenizer.json; derives a cased
   variant and one that strips accents without lowercasing.
3. Builds "alphabet" tokenizers whose vocabulary holds every character any code point normalizes to (alone and
   with ##), so that every difference in cleaning, CJK spacing, NFD, accent stripping, lowercasing or punctuation
   shows in the ids, and encodes every code point (in runs of 64), marks in random order and random soup.
4. Encodes single texts and pairs, with and without special tokens, untruncated and truncated (longest_first,
   only_first, only_second; right and left) through both, and compares ids, type_ids and attention masks. A case
   `tokenizers` refuses (only_second without a pair, a sequence too short) must be refused by kgtrain too.
5. Times both on one thread over the corpus: `tokenizers`' encode_batch with RAYON_NUM_THREADS=1 and
   TOKENIZERS_PARALLELISM=false, and the C++ driver (scripts/tokenizer_parity_driver.cpp, compiled here with g++).

Usage (in a venv with tokenizers installed):  python scripts/check_tokenizer_parity.py [--work DIR] [--lines N]
Exit 1 when any case differs.
"""
import argparse
import glob
import gzip
import json
import os
import random
import re
import subprocess
import sys
import time
import unicodedata

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers is imported: one thread, as the C++ driver
os.environ["TOKENIZERS_PARALLELISM"] = "false"

import tokenizers  # noqa: E402
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

TROFF_ESCAPES = re.compile(r"\\(f(\[[^\]]*\]|\(..|.)|s[-+]?\d|\(..|\*(\(..|.)|[&|^%:])")


def troff_lines(text):
    for line in text.split("\n"):
        if line.startswith(('.\\"', "'\\\"", '.\\\\"')):
            continue
        if line.startswith((".", "'")):
            line = re.sub(r"^[.'][A-Za-z]+\s*", "", line)
        line = TROFF_ESCAPES.sub("", line).replace("\\-", "-").replace("\\e", "\\").replace('"', "").strip()
        if len(line) > 1:
            yield line


def man_pages():
    langs = sorted(d for d in os.listdir("/usr/share/man") if not d.startswith("man"))
    # Other languages first, then English.
    for folder in [os.path.join("/usr/share/man", l) for l in langs] + ["/usr/share/man"]:
        for path in sorted(glob.glob(os.path.join(folder, "man*", "*.gz"))):
            yield os.path.basename(folder), path


def read_man(path):
    try:
        with gzip.open(path, "rb") as f:
            return list(troff_lines(f.read().decode("utf-8")))
    except (OSError, UnicodeDecodeError, EOFError):
        return []


def corpus(target):
    """About `target` lines: up to 4,000 per man page language, a third of it English man pages, the rest
    copyright files and package descriptions."""
    lines, per_source = [], {}
    seen = set()

    def add(source, ls, cap):
        n = 0
        for l in ls:
            if l not in seen and n < cap:
                seen.add(l)
                lines.append(l)
                n += 1
        per_source[source] = per_source.get(source, 0) + n

    for lang, path in man_pages():
        if per_source.get(lang, 0) < (target // 3 if lang == "man" else 4000):
            add(lang, read_man(path), 60)
    for path in sorted(glob.glob("/usr/share/doc/*/copyright")):
        try:
            with open(path, encoding="utf-8") as f:
                add("copyright", [l.strip() for l in f if len(l.strip()) > 1], 200)
        except (OSError, UnicodeDecodeError):
            pass
    with open("/var/lib/dpkg/status", encoding="utf-8", errors="replace") as f:
        add("dpkg", [l.strip() for l in f if l.startswith((" ", "Description:")) and len(l.strip()) > 1], 10 ** 9)
    return lines, per_source


def hostile():
    h = [
        "Crème brûlée, naïve façade, Ångström, Ǆemal, İstanbul, ΣΊΣΥΦΟΣ, straße, ﬁne, ǅ, Ω Å K",
        "e\u0301 a\u0300\u0323 o\u0308\u0304 q\u0307\u0323\u0300 \u0301leading mark, Z\u0351\u0311\u0308\u0302\u0314",
        "野口里佳 Noguchi Rika 東京タワー 한국어 텍스트 ひらがな カタカナ 𠀀𠀁 𪜀 丽 兀",
        "emoji 😀😃🤣🥰 👩‍👩‍👧‍👦 🏳️‍🌈 👍🏽 🇫🇷 ☺️ ❤︎",
        "nbsp\u00a0here, thin\u2009space, ideographic\u3000space, zero\u200bwidth, zwj\u200d, bom\ufeff, lsep\u2028end",
        "ｆｕｌｌ－ｗｉｄｔｈ　ＡＢＣ　１２３！？ half ｶﾀｶﾅ",
        "control\x00chars\x01\x02\x07\x1b[31m\x7f\x85\x9f and \ufffd replacement \u200e\u200f\u202e rtl",
        "tabs\tand\nnewlines\r\nand\x0bvertical\x0cfeed",
        "runs          of           spaces     and trailing     ",
        "   leading spaces",
        "",
        " ",
        "x" * 1000,
        "ab" * 60,
        "unbelievably" * 9,
        "é" * 101,
        "punct!!!...???---___'''\"\"\"(((]]]{{{;;;:::@@@###$$$%%%^^^&&&***+++===|||~~~```<<<>>>///\\\\\\",
        "«guillemets» „quotes“ ‘single’ ¿qué? ¡sí! … — – · • ※ § ¶ † ‡ ‰ ′ ″ ‹ › 〈 〉 「 」 『 』 【 】",
        "math ∑∫∂√∞≠≤≥ ± × ÷ currency $€£¥₹₿ ¢",
        "Ελληνικά Русский язык Українська Български עברית العربية فارسی हिन्दी বাংলা தமிழ் ไทย ລາວ ქართული Հայերեն",
        "Tiếng Việt có dấu: Người, được, những, khỏe",
        "private use \ue000\uf8ff \U000f0000 \U0010fffd unassigned \u0378 \U000e0001 tag \U000e0041",
        "[CLS] literal [SEP] inside [MASK] text [cls] [unk] [PAD][PAD]",
        "[SEP][SEP] at start and end [CLS]",
        "http://example.com/path?q=1&r=2#frag user@example.org C++ C# .NET node.js e.g. i.e. U.S.A.",
        "numbers 3.14159 1,000,000 -42 +7 1e-9 0x1F 2026-12-06 12:34:56",
        "ﷺ ﷽ ㍻ ㎏ ℃ ⅷ ① ⒜ ﹏ ︵ ﾟ",
        "İIıi ǰ ΐ ﬃ Ⅻ ⓐ Ꭰ ꭰ 𐐀 𐐨 𞤀 𞤢",
    ]
    return h


def alphabet_code_points():
    """Planes 0-3 and 14 whole (where characters are assigned), the ends of the private use planes 15 and 16."""
    cps = [c for c in range(0x40000) if not 0xD800 <= c <= 0xDFFF] + list(range(0xE0000, 0xE1000))
    for plane in (0xF0000, 0x100000):
        cps += list(range(plane, plane + 256)) + list(range(plane + 0xFF00, plane + 0x10000))
    return cps


def alphabet_lines(rng):
    cps = alphabet_code_points()
    lines = ["".join(chr(c) for c in cps[i:i + 64]) for i in range(0, len(cps), 64)]
    marks = [c for c in range(0x300, 0x110000) if not 0xD800 <= c <= 0xDFFF and unicodedata.combining(chr(c))]
    bases = "aeiouAEIOUnNcCsSzZ" + "αεΑΕаеАЕ"
    for _ in range(3000):
        lines.append(" ".join(rng.choice(bases) + "".join(chr(rng.choice(marks)) for _ in range(rng.randint(1, 5)))
                              for _ in range(8)))
    for _ in range(3000):
        lines.append("".join(chr(rng.choice(cps)) for _ in range(rng.randint(1, 40))))
    return lines


def bert_tokenizer(vocab, lowercase, strip_accents, clean_text=True, chinese=True):
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=clean_text, handle_chinese_chars=chinese,
                                                strip_accents=strip_accents, lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return tok


def alphabet_tokenizer(lines, **kw):
    probe = bert_tokenizer({t: i for i, t in enumerate(SPECIALS)}, **kw)
    chars = set()
    for c in alphabet_code_points():
        chars.update(probe.normalizer.normalize_str(chr(c)))
    for l in lines:
        chars.update(probe.normalizer.normalize_str(l))
    vocab = {t: i for i, t in enumerate(SPECIALS)}
    for ch in sorted(chars):
        for t in (ch, "##" + ch):
            vocab.setdefault(t, len(vocab))
    return bert_tokenizer(vocab, **kw)


def cases(lines, rng, truncate_share):
    out = []
    for i, a in enumerate(lines):
        b = lines[(i * 7919 + 1) % len(lines)] if i % 3 == 0 else None
        c = {"a": a, "b": b, "max_length": None, "special": i % 11 != 5}
        out.append(c)
        if rng.random() < truncate_share:
            t = dict(c)
            t["max_length"] = rng.choice([3, 4, 5, 6, 8, 12, 16, 32, 128])
            t["strategy"] = rng.choice(["longest_first", "only_first", "only_second"])
            t["direction"] = rng.choice(["right", "right", "left"])
            if rng.random() < 0.5 and t["b"] is None:
                t["b"] = lines[(i * 31 + 7) % len(lines)]
            out.append(t)
    return out


def encode_py(tok, cs):
    out = []
    for c in cs:
        if c["max_length"] is None:
            tok.no_truncation()
        else:
            tok.enable_truncation(c["max_length"], strategy=c["strategy"], direction=c["direction"])
        try:
            e = tok.encode(c["a"], c["b"], add_special_tokens=c["special"])
            out.append({"ids": e.ids, "type_ids": e.type_ids, "attention_mask": e.attention_mask})
        except Exception as ex:  # tokenizers refuses it: kgtrain must refuse it too
            out.append({"error": str(ex)})
    tok.no_truncation()
    return out


def compare(name, tok, cs, driver, work):
    path = os.path.join(work, name + ".json")
    tok.save(path)
    cases_path, out_path = os.path.join(work, name + ".cases.jsonl"), os.path.join(work, name + ".out.jsonl")
    with open(cases_path, "w", encoding="utf-8") as f:
        for c in cs:
            f.write(json.dumps(c, ensure_ascii=False) + "\n")
    subprocess.run([driver, "encode", path, cases_path, out_path], check=True)
    with open(out_path, encoding="utf-8") as f:
        got = [json.loads(l) for l in f]
    want = encode_py(tok, cs)
    assert len(got) == len(want), "%s: the driver gave %d answers for %d cases" % (name, len(got), len(want))
    bad = [i for i, (g, w) in enumerate(zip(got, want)) if ("error" in g) != ("error" in w) or
           ("error" not in w and g != w)]
    for i in bad[:5]:
        print("  MISMATCH %s case %d: %s\n    tokenizers: %s\n    kgtrain:    %s" % (
            name, i, json.dumps(cs[i], ensure_ascii=True)[:400], json.dumps(want[i])[:400], json.dumps(got[i])[:400]))
    n_err = sum("error" in w for w in want)
    print("%-22s %7d cases (%d pairs, %d truncated, %d refused by both), %d mismatches" % (
        name, len(cs), sum(c["b"] is not None for c in cs), sum(c["max_length"] is not None for c in cs),
        n_err, len(bad)))
    return len(bad)


def build_driver(work):
    exe = os.path.join(work, "tokenizer_parity_driver")
    srcs = sorted(glob.glob(os.path.join(ROOT, "lib/text/*.cpp"))) + [
        os.path.join(ROOT, "lib/core/fs.cpp"), os.path.join(ROOT, "lib/core/strings.cpp"),
        os.path.join(ROOT, "scripts/tokenizer_parity_driver.cpp")]
    subprocess.run(["g++", "-std=c++17", "-O2", "-I", os.path.join(ROOT, "lib"), *srcs, "-o", exe],
                   check=True)
    return exe


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/tmp/kg_tokenizer_parity")
    ap.add_argument("--lines", type=int, default=120000, help="corpus lines to gather (default 120000)")
    ap.add_argument("--vocab-size", type=int, default=30000)
    ap.add_argument("--driver", help="a compiled scripts/tokenizer_parity_driver.cpp (default: compile it here)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    rng = random.Random(1234)
    driver = args.driver or build_driver(args.work)

    t0 = time.time()
    lines, sources = corpus(args.lines)
    lines = [l.replace("\r", " ") for l in lines]
    print("tokenizers %s; corpus: %d lines, %d characters in %.1f s (%s)" % (
        tokenizers.__version__, len(lines), sum(map(len, lines)), time.time() - t0,
        ", ".join("%s %d" % kv for kv in sorted(sources.items()))))
    hard = hostile()
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    t0 = time.time()
    tok.train_from_iterator(lines + hard, trainers.WordPieceTrainer(vocab_size=args.vocab_size,
                                                                    special_tokens=SPECIALS))
    vocab = tok.get_vocab()
    print("trained WordPiece: %d tokens in %.1f s" % (len(vocab), time.time() - t0))

    mismatches = 0
    texts = hard + lines
    mismatches += compare("uncased", bert_tokenizer(vocab, True, None), cases(texts, rng, 0.25), driver, args.work)
    sub = hard + lines[::6]
    mismatches += compare("cased", bert_tokenizer(vocab, False, None), cases(sub, rng, 0.1), driver, args.work)
    mismatches += compare("strip_no_lower", bert_tokenizer(vocab, False, True), cases(sub, rng, 0.1), driver,
                          args.work)
    alpha = alphabet_lines(rng) + hard
    for name, kw in [("alphabet_uncased", dict(lowercase=True, strip_accents=None)),
                     ("alphabet_cased", dict(lowercase=False, strip_accents=None)),
                     ("alphabet_strip", dict(lowercase=False, strip_accents=True)),
                     ("alphabet_raw", dict(lowercase=True, strip_accents=False, clean_text=False, chinese=False))]:
        mismatches += compare(name, alphabet_tokenizer(alpha, **kw), cases(alpha, rng, 0.05), driver, args.work)

    # Throughput, one thread each, the uncased tokenizer over the corpus, special tokens added.
    tok = bert_tokenizer(vocab, True, None)
    path = os.path.join(args.work, "uncased.json")
    lines_path = os.path.join(args.work, "corpus.txt")
    with open(lines_path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    t0 = time.perf_counter()
    enc = tok.encode_batch(lines)
    py_s = time.perf_counter() - t0
    py_tokens = sum(len(e.ids) for e in enc)
    cpp = json.loads(subprocess.run([driver, "bench", path, lines_path], check=True, capture_output=True,
                                    text=True).stdout)
    assert cpp["tokens"] == py_tokens, "token counts differ: %d vs %d" % (cpp["tokens"], py_tokens)
    print("throughput, one thread, %d lines, %d tokens: tokenizers encode_batch %.0f lines/s (%.2f M tokens/s); "
          "kgtrain %.0f lines/s (%.2f M tokens/s)" % (
              len(lines), py_tokens, len(lines) / py_s, py_tokens / py_s / 1e6, len(lines) / cpp["seconds"],
              py_tokens / cpp["seconds"] / 1e6))
    print("PARITY %s: %d mismatches" % ("OK" if mismatches == 0 else "FAILED", mismatches))
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
