#include "text/unicode.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "core/error.h"

namespace kg::text {
namespace {

struct CodeRange {
  char32_t lo, hi;  // inclusive
};
struct CaseMapping {
  char32_t from, to;
};
struct Decomposition {
  char32_t from;
  char32_t to[4];  // 0 after the last
};
struct CombiningClass {
  char32_t lo, hi;
  uint8_t ccc;
};

#include "text/bert_unicode_tables.inc"

template <size_t N>
bool in_ranges(const CodeRange (&table)[N], char32_t c) {
  const auto it = std::upper_bound(std::begin(table), std::end(table), c,
                                   [](char32_t v, const CodeRange& r) { return v < r.lo; });
  return it != std::begin(table) && c <= std::prev(it)->hi;
}

}  // namespace

std::u32string decode_utf8(std::string_view s, const std::string& what) {
  std::u32string out;
  out.reserve(s.size());
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = byte(i);
    if (c < 0x80) {
      out.push_back(c);
      ++i;
      continue;
    }
    size_t n = 0;
    unsigned lo = 0x80, hi = 0xBF;  // allowed range of the first continuation byte
    char32_t cp = 0;
    if (c >= 0xC2 && c <= 0xDF)
      n = 1, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF)
      n = 2, cp = c & 0x0F, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
      n = 3, cp = c & 0x07, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    bool ok = n > 0 && i + n < s.size();
    for (size_t k = 1; ok && k <= n; ++k) {
      const unsigned char d = byte(i + k);
      ok = k == 1 ? (d >= lo && d <= hi) : (d >= 0x80 && d <= 0xBF);
      cp = (cp << 6) | (d & 0x3F);
    }
    KG_CHECK(ok, DataError, what, ": invalid UTF-8 at byte ", i, " (byte 0x", std::hex, unsigned(c), std::dec, ")");
    out.push_back(cp);
    i += n + 1;
  }
  return out;
}

void append_utf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string encode_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(c, out);
  return out;
}

bool is_rust_whitespace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

bool is_bert_control(char32_t c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  if (c < 0x80) return c < 0x20 || c == 0x7F;
  return in_ranges(kBertOther, c);
}

bool is_bert_punctuation(char32_t c) {
  if (c < 0x80) return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
                       (c >= 0x7B && c <= 0x7E);
  return in_ranges(kBertPunctuation, c);
}

bool is_nonspacing_mark(char32_t c) { return c >= 0x300 && in_ranges(kBertNonspacingMark, c); }

bool is_cjk_ideograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

std::u32string nfd(std::u32string_view s) {
  std::u32string out;
  out.reserve(s.size() + 4);
  for (char32_t c : s) {
    if (c < 0xC0) {  // nothing below U+00C0 decomposes
      out.push_back(c);
    } else if (c >= 0xAC00 && c <= 0xD7A3) {  // Hangul syllables, by the algorithm (Unicode 3.12)
      const char32_t i = c - 0xAC00;
      out.push_back(0x1100 + i / 588);
      out.push_back(0x1161 + (i % 588) / 28);
      if (i % 28) out.push_back(0x11A7 + i % 28);
    } else {
      const auto it = std::lower_bound(std::begin(kBertDecomposition), std::end(kBertDecomposition), c,
                                       [](const Decomposition& d, char32_t v) { return d.from < v; });
      if (it == std::end(kBertDecomposition) || it->from != c) {
        out.push_back(c);
        continue;
      }
      for (char32_t d : it->to)
        if (d) out.push_back(d);
    }
  }
  // Canonical ordering: the marks of a run with non-zero combining classes, stably sorted by class (UAX #15).
  const auto ccc = [](char32_t c) { return combining_class(c); };
  for (size_t i = 1; i < out.size(); ++i) {
    const int ci = ccc(out[i]);
    if (ci == 0) continue;
    for (size_t j = i; j > 0; --j) {
      const int cj = ccc(out[j - 1]);
      if (cj == 0 || cj <= ci) break;
      std::swap(out[j - 1], out[j]);
    }
  }
  return out;
}

int combining_class(char32_t c) {
  if (c < 0x300) return 0;
  const auto it = std::upper_bound(std::begin(kBertCombiningClass), std::end(kBertCombiningClass), c,
                                   [](char32_t v, const CombiningClass& r) { return v < r.lo; });
  return it != std::begin(kBertCombiningClass) && c <= std::prev(it)->hi ? std::prev(it)->ccc : 0;
}

void append_lowercase(char32_t c, std::u32string& out) {
  if (c < 0x80) {
    out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
    return;
  }
  if (c == 0x130) {  // the one unconditional lowercase mapping to several code points (SpecialCasing.txt)
    out.push_back(U'i');
    out.push_back(0x307);
    return;
  }
  const auto it = std::lower_bound(std::begin(kBertLowercase), std::end(kBertLowercase), c,
                                   [](const CaseMapping& m, char32_t v) { return m.from < v; });
  out.push_back(it != std::end(kBertLowercase) && it->from == c ? it->to : c);
}

}  // namespace kg::text
