// The Unicode sets of byte-level BPE's pre-tokenizer and of the Precompiled normalizer's grapheme clusters.
//
// Why generated tables and not a library: tokenizers runs the GPT-2 regex with Oniguruma (the onig crate's bundled
// copy), so \p{L}, \p{N} and \s are Oniguruma's tables, of its own Unicode version. ICU 72
// (Debian 12's, Unicode 15.0; u_charType's L* and N* categories, u_isUWhiteSpace) was measured against the sets
// probed from tokenizers 0.23.3 over every code point: 5,004 code points differ (\p{L} 4,924, \p{N} 80, \s 0),
// (scripts/compare_gpt2_classes_icu.cpp). Any library of another Unicode version than the onig crate's splits such
// text differently. The tables below are probed from
// tokenizers itself instead (scripts/gen_bpe_unicode_tables.py), as the BERT tables are. The grapheme properties
// are not exposed by tokenizers; they come from the Python regex module's tables by the same script.
#include <algorithm>
#include <iterator>
#include <utility>

#include "text/unicode.h"

namespace kg::text {
namespace {

struct BpeCodeRange {
  char32_t lo, hi;  // inclusive
};
struct GraphemeRange {
  char32_t lo, hi;
  unsigned char value;
};
struct Composition {
  char32_t first, second, composite;
};

#include "text/bpe_unicode_tables.inc"

template <size_t N>
bool in_bpe_ranges(const BpeCodeRange (&table)[N], char32_t c) {
  const auto it = std::upper_bound(std::begin(table), std::end(table), c,
                                   [](char32_t v, const BpeCodeRange& r) { return v < r.lo; });
  return it != std::begin(table) && c <= std::prev(it)->hi;
}

enum GraphemeBreak : unsigned char {
  kGbOther, kGbCR, kGbLF, kGbControl, kGbExtend, kGbZWJ, kGbRI, kGbPrepend, kGbSpacingMark, kGbL, kGbV, kGbT,
  kGbLV, kGbLVT
};

GraphemeBreak grapheme_break(char32_t c) {
  if (c >= 0x20 && c < 0x7F) return kGbOther;
  const auto it = std::upper_bound(std::begin(kGraphemeBreak), std::end(kGraphemeBreak), c,
                                   [](char32_t v, const GraphemeRange& r) { return v < r.lo; });
  if (it == std::begin(kGraphemeBreak) || c > std::prev(it)->hi) return kGbOther;
  return static_cast<GraphemeBreak>(std::prev(it)->value);
}

// The composite of (a, b), or 0: Hangul by the algorithm, the rest from the probed table.
char32_t compose_pair(char32_t a, char32_t b) {
  constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
  constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount;
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kLCount * kNCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount)
    return a + (b - kTBase);
  const auto it = std::lower_bound(std::begin(kNfcCompositions), std::end(kNfcCompositions), std::make_pair(a, b),
                                   [](const Composition& c, const std::pair<char32_t, char32_t>& v) {
                                     return c.first != v.first ? c.first < v.first : c.second < v.second;
                                   });
  return it != std::end(kNfcCompositions) && it->first == a && it->second == b ? it->composite : 0;
}

}  // namespace

std::u32string nfc(std::u32string_view s) {
  bool plain = true;  // nothing below U+0300 composes with what follows unless a mark or jamo follows
  for (char32_t c : s) plain = plain && c < 0x300;
  if (plain) return std::u32string(s);
  const std::u32string d = nfd(s);
  // Canonical composition (UAX #15): a mark composes with the last starter unless a character between them has
  // class 0 or a class not below its own.
  std::u32string out;
  out.reserve(d.size());
  size_t starter = SIZE_MAX;
  int last_class = -1;  // class of the last character kept after the starter; -1 none
  for (char32_t c : d) {
    const int cc = combining_class(c);
    if (starter != SIZE_MAX && (last_class < 0 || (last_class < cc && last_class != 0))) {
      if (const char32_t k = compose_pair(out[starter], c)) {
        out[starter] = k;
        continue;
      }
    }
    if (cc == 0) {
      starter = out.size();
      last_class = -1;
    } else {
      last_class = cc;
    }
    out.push_back(c);
  }
  return out;
}

Gpt2Class gpt2_class(char32_t c) {
  if (c < 0x80) {
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return kGpt2Letter;
    if (c >= '0' && c <= '9') return kGpt2Number;
    if (c == ' ' || (c >= 0x09 && c <= 0x0D)) return kGpt2Space;
    return kGpt2Other;
  }
  if (in_bpe_ranges(kGpt2LetterRanges, c)) return kGpt2Letter;
  if (in_bpe_ranges(kGpt2NumberRanges, c)) return kGpt2Number;
  if (in_bpe_ranges(kGpt2SpaceRanges, c)) return kGpt2Space;
  return kGpt2Other;
}

size_t grapheme_end(std::u32string_view s, size_t from) {
  const size_t n = s.size();
  if (from + 1 >= n) return n;
  GraphemeBreak prev = grapheme_break(s[from]);
  // GB9c: consonant (extend|linker)* linker (extend|linker)* x consonant; GB11: ExtPict Extend* ZWJ x ExtPict.
  bool incb_consonant = in_bpe_ranges(kIncbConsonant, s[from]), incb_linker = false;
  bool pict = in_bpe_ranges(kExtPict, s[from]);
  size_t ri = prev == kGbRI ? 1 : 0;
  size_t i = from + 1;
  for (; i < n; ++i) {
    const char32_t c = s[i];
    const GraphemeBreak cur = grapheme_break(c);
    bool join;
    if (prev == kGbCR && cur == kGbLF)
      join = true;
    else if (prev == kGbCR || prev == kGbLF || prev == kGbControl || cur == kGbCR || cur == kGbLF ||
             cur == kGbControl)
      join = false;
    else if (prev == kGbL && (cur == kGbL || cur == kGbV || cur == kGbLV || cur == kGbLVT))
      join = true;
    else if ((prev == kGbLV || prev == kGbV) && (cur == kGbV || cur == kGbT))
      join = true;
    else if ((prev == kGbLVT || prev == kGbT) && cur == kGbT)
      join = true;
    else if (cur == kGbExtend || cur == kGbZWJ || cur == kGbSpacingMark || prev == kGbPrepend)
      join = true;
    else if (incb_consonant && incb_linker && in_bpe_ranges(kIncbConsonant, c))
      join = true;
    else if (pict && prev == kGbZWJ && in_bpe_ranges(kExtPict, c))
      join = true;
    else if (prev == kGbRI && cur == kGbRI && ri % 2 == 1)
      join = true;
    else
      join = false;
    if (!join) break;
    // The state of GB9c, GB11 and GB12/13 after c.
    const bool consonant = in_bpe_ranges(kIncbConsonant, c);
    const bool linker = in_bpe_ranges(kIncbLinker, c);
    if (consonant) {
      incb_consonant = true;
      incb_linker = false;
    } else if (linker) {
      incb_linker = incb_linker || incb_consonant;
    } else if (!in_bpe_ranges(kIncbExtend, c)) {
      incb_consonant = incb_linker = false;
    }
    if (in_bpe_ranges(kExtPict, c))
      pict = true;
    else if (cur != kGbExtend && cur != kGbZWJ)
      pict = false;
    else if (cur == kGbZWJ && prev == kGbZWJ)
      pict = false;
    ri = cur == kGbRI ? ri + 1 : 0;
    prev = cur;
  }
  return i;
}

}  // namespace kg::text
