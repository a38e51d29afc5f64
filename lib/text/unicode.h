// Code points and the Unicode properties BERT's normalizer and pre-tokenizer use, defined as Hugging Face
// `tokenizers` defines them (tokenizers/src/normalizers/bert.rs, pre_tokenizers/bert.rs), so that kgtrain's
// WordPiece tokenizer gives the ids `tokenizers` gives.
//
// Where the properties come from: `tokenizers` takes its categories from the Rust crate unicode_categories and
// its NFD from the crate unicode-normalization-alignments, both with tables older than current Unicode, and its
// lowercase from Rust's char::to_lowercase (the Unicode of the compiler its wheel was built with). A library's
// current tables (utf8proc's, ICU's) call characters assigned since then punctuation, marks or combining marks
// where `tokenizers` does not, and so split, strip and reorder them differently (scripts/check_tokenizer_parity.py
// found 1,978 such cases with utf8proc 2.8's NFD). So bert_unicode_tables.inc holds every set and mapping used here,
// generated from the pinned `tokenizers` itself by probing each code point (scripts/gen_bert_unicode_tables.py):
// control/format/private use, punctuation, nonspacing marks, lowercase (full: U+0130 gives "i" + U+0307),
// canonical decompositions and combining classes. Whitespace is Rust's char::is_whitespace (White_Space,
// unchanged since Unicode 6); Hangul syllables decompose by Unicode's algorithm.
#pragma once
#include <string>
#include <string_view>

namespace kg::text {

// The code points of `s`, or DataError naming `what` and the byte offset of the first ill-formed byte
// (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF).
std::u32string decode_utf8(std::string_view s, const std::string& what = "text");
void append_utf8(char32_t c, std::string& out);
std::string encode_utf8(std::u32string_view s);

// Rust's char::is_whitespace (White_Space).
bool is_rust_whitespace(char32_t c);
// BERT's cleaning: whitespace incl. \t \n \r (bert.rs is_whitespace); other (Cc, Cf, Co) except \t \n \r.
inline bool is_bert_whitespace(char32_t c) { return is_rust_whitespace(c); }
bool is_bert_control(char32_t c);
// ASCII punctuation or a P* category (bert.rs is_bert_punc).
bool is_bert_punctuation(char32_t c);
// Mn, as strip_accents drops it after NFD.
bool is_nonspacing_mark(char32_t c);
// The CJK ideograph blocks of the original BERT (bert.rs is_chinese_char).
bool is_cjk_ideograph(char32_t c);

// Canonical decomposition (NFD) of `s`, as tokenizers' NormalizedString::nfd.
std::u32string nfd(std::u32string_view s);
// The canonical combining class tokenizers' NFD orders marks by (0 for starters).
int combining_class(char32_t c);
// NFC as tokenizers' NormalizedString::nfc (unicode-normalization-alignments): nfd(), then canonical composition
// with the pairs probed from tokenizers (bpe_unicode_tables.inc) and Hangul's algorithm.
std::u32string nfc(std::u32string_view s);
// Appends Rust's char::to_lowercase(c): one code point, or several (U+0130 -> "i\u0307").
void append_lowercase(char32_t c, std::u32string& out);

}  // namespace kg::text

namespace kg::text {

// The character classes of the GPT-2 pre-tokenizer regex as tokenizers runs it (Oniguruma's \p{L}, \p{N}, \s),
// generated from tokenizers by scripts/gen_bpe_unicode_tables.py (lib/text/bpe_unicode.cpp says why not ICU).
enum Gpt2Class : unsigned char { kGpt2Other = 0, kGpt2Letter = 1, kGpt2Number = 2, kGpt2Space = 3 };
Gpt2Class gpt2_class(char32_t c);

// Extended grapheme clusters (UAX #29 with GB9c and GB11, as the unicode-segmentation crate): the end of the
// cluster that starts at s[from].
size_t grapheme_end(std::u32string_view s, size_t from);

}  // namespace kg::text
