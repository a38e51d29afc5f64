#!/usr/bin/env python3
"""Writes lib/text/bert_unicode_tables.inc: the character sets that BERT's normalizer and pre-tokenizer test, as the
installed Hugging Face `tokenizers` decides them, probed one code point at a time through its own Python API.

`tokenizers` takes them from the Rust crate unicode_categories, whose tables are older than current Unicode (and
so than ICU's or Python's unicodedata): a character assigned since is neither punctuation nor a mark nor a control
there. Probing the pinned `tokenizers` gives exactly its sets, whichever Unicode they come from:
  kBertOther           removed by clean_text (Cc, Cf, Co; U+0000 and U+FFFD are removed separately)
  kBertPunctuation     isolated by BertPreTokenizer (ASCII punctuation or P*)
  kBertNonspacingMark  dropped by strip_accents after NFD (Mn), for the code points that NFD leaves alone
  kBertLowercase       Rust's char::to_lowercase where it changes a code point to one other (U+0130, the one
                       mapping to two, is checked here and written out in unicode.cpp)
  kBertDecomposition   the full canonical decomposition (NFD) of each code point that has one, Hangul syllables
                       aside (unicode.cpp decomposes them by the algorithm of Unicode's chapter 3.12)
  kBertCombiningClass  the canonical combining classes NFD orders marks by: tokenizers' NFD (the crate
                       unicode-normalization-alignments) is older than current Unicode too, and leaves marks
                       assigned since in the order they came
It also checks that whitespace is Rust's char::is_whitespace, as lib/text/unicode.cpp hard-codes it.

Usage: python3 scripts/gen_bert_unicode_tables.py [out.inc]   (in a venv with tokenizers==PIN installed)
"""
import sys
import unicodedata

import tokenizers
from tokenizers import normalizers, pre_tokenizers

RUST_WHITESPACE = {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029,
                   0x202F, 0x205F, 0x3000}


def ranges(cps):
    out = []
    for c in sorted(cps):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def table(name, cps):
    rs = ranges(cps)
    cells = ["{0x%X, 0x%X}" % (lo, hi) for lo, hi in rs]
    lines, line = [], "   "
    for cell in cells:
        if len(line) + len(cell) + 2 > 118:
            lines.append(line.rstrip())
            line = "   "
        line += " " + cell + ","
    lines.append(line.rstrip())
    return "constexpr CodeRange %s[] = {  // %d code points in %d ranges\n%s\n};\n" % (
        name, len(cps), len(rs), "\n".join(lines))


def pairs(name, mapping):
    cells = ["{0x%X, 0x%X}" % kv for kv in sorted(mapping.items())]
    lines, line = [], "   "
    for cell in cells:
        if len(line) + len(cell) + 2 > 118:
            lines.append(line.rstrip())
            line = "   "
        line += " " + cell + ","
    lines.append(line.rstrip())
    return "constexpr CaseMapping %s[] = {  // %d code points\n%s\n};\n" % (name, len(mapping), "\n".join(lines))


def decompositions(mapping):
    cells = ["{0x%X, {%s}}" % (k, ", ".join("0x%X" % c for c in v)) for k, v in sorted(mapping.items())]
    lines, line = [], "   "
    for cell in cells:
        if len(line) + len(cell) + 2 > 118:
            lines.append(line.rstrip())
            line = "   "
        line += " " + cell + ","
    lines.append(line.rstrip())
    return "constexpr Decomposition %s[] = {  // %d code points\n%s\n};\n" % (
        "kBertDecomposition", len(mapping), "\n".join(lines))


def classes(mapping):
    runs = []
    for cp, c in sorted(mapping.items()):
        if runs and runs[-1][1] == cp - 1 and runs[-1][2] == c:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp, c])
    cells = ["{0x%X, 0x%X, %d}" % tuple(r) for r in runs]
    lines, line = [], "   "
    for cell in cells:
        if len(line) + len(cell) + 2 > 118:
            lines.append(line.rstrip())
            line = "   "
        line += " " + cell + ","
    lines.append(line.rstrip())
    return "constexpr CombiningClass %s[] = {  // %d code points in %d ranges\n%s\n};\n" % (
        "kBertCombiningClass", len(mapping), len(runs), "\n".join(lines))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "lib/text/bert_unicode_tables.inc"
    clean = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False,
                                       lowercase=False)
    strip = normalizers.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True,
                                       lowercase=False)
    nfd = normalizers.NFD()
    pre = pre_tokenizers.BertPreTokenizer()
    lower = normalizers.Lowercase()
    other, punct, mark, lowercase, decomposition, ccc = set(), set(), set(), {}, {}, {}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:  # not characters: Python cannot hand them to tokenizers
            continue
        ch = chr(cp)
        cleaned = clean.normalize_str(ch)
        if cleaned == "":
            if cp not in (0, 0xFFFD):
                other.add(cp)
        elif cleaned == " ":
            assert cp in RUST_WHITESPACE, "U+%04X: clean_text maps it to a space, Rust's is_whitespace not" % cp
        else:
            assert cleaned == ch and cp not in RUST_WHITESPACE, "U+%04X: clean_text gave %r" % (cp, cleaned)
        pieces = pre.pre_tokenize_str("a" + ch + "a")
        if cp in RUST_WHITESPACE:
            assert len(pieces) == 2, "U+%04X: not whitespace for BertPreTokenizer" % cp
        elif len(pieces) == 3:
            punct.add(cp)
        else:
            assert len(pieces) == 1, "U+%04X: BertPreTokenizer gave %r" % (cp, pieces)
        if nfd.normalize_str(ch) == ch and strip.normalize_str(ch) == "":
            mark.add(cp)
        decomposed = nfd.normalize_str(ch)
        if 0xAC00 <= cp <= 0xD7A3:  # Hangul syllables: by the algorithm, checked here
            s = cp - 0xAC00
            want = chr(0x1100 + s // 588) + chr(0x1161 + (s % 588) // 28) + (chr(0x11A7 + s % 28) if s % 28 else "")
            assert decomposed == want, "U+%04X: NFD gave %r" % (cp, decomposed)
        elif decomposed != ch:
            assert 1 <= len(decomposed) <= 4, "U+%04X: NFD gave %r" % (cp, decomposed)
            decomposition[cp] = [ord(c) for c in decomposed]
        elif unicodedata.combining(ch):
            # The class is Python's (classes never change once assigned) when tokenizers' NFD knows it at all:
            # then it moves the mark before U+0345 (class 240, the highest, Unicode 1.1).
            c = unicodedata.combining(ch)
            if cp == 0x345:
                ccc[cp] = c
            else:
                moved = nfd.normalize_str("a\u0345" + ch)
                assert moved in ("a" + ch + "\u0345", "a\u0345" + ch), "U+%04X: NFD gave %r" % (cp, moved)
                if moved == "a" + ch + "\u0345":
                    ccc[cp] = c
        low = lower.normalize_str(ch)
        if len(low) == 1 and low != ch:
            assert cp >= 0x80 or "A" <= ch <= "Z", "U+%04X: an ASCII lowercase other than A-Z's" % cp
            lowercase[cp] = ord(low)
        elif len(low) != 1:
            assert cp == 0x130 and low == "i\u0307", "U+%04X: lowercase gave %r" % (cp, low)
    # How far these sets are from this Python's own Unicode (for the record, not used).
    py_p = {c for c in range(0x110000) if unicodedata.category(chr(c)).startswith("P")}
    py_mn = {c for c in range(0x110000) if unicodedata.category(chr(c)) == "Mn"}
    py_ccc = {c for c in range(0x110000) if unicodedata.combining(chr(c))}
    note = ("// Python %s's unicodedata (Unicode %s) differs: %d punctuation, %d Mn and %d combining code points not\n"
            "// in these sets.\n" % (sys.version.split()[0], unicodedata.unidata_version, len(py_p - punct),
                                     len(py_mn - mark), len(py_ccc - set(ccc) - set(decomposition))))
    with open(out, "w", encoding="utf-8") as f:
        f.write("// Generated by scripts/gen_bert_unicode_tables.py from tokenizers==%s: the sets its BertNormalizer\n"
                "// and BertPreTokenizer test (lib/text/unicode.h). Do not edit; regenerate.\n" % tokenizers.__version__)
        f.write(note)
        f.write(table("kBertOther", other))
        f.write(table("kBertPunctuation", punct))
        f.write(table("kBertNonspacingMark", mark))
        f.write(pairs("kBertLowercase", {k: v for k, v in lowercase.items() if k >= 0x80}))
        f.write(decompositions(decomposition))
        f.write(classes(ccc))
    print("%s: tokenizers %s, %d other, %d punctuation, %d Mn, %d lowercase, %d decompositions, %d combining; %s" % (
        out, tokenizers.__version__, len(other), len(punct), len(mark), len(lowercase), len(decomposition), len(ccc),
        note.strip("/ \n")))


if __name__ == "__main__":
    main()
