#include "text/normalizer.h"

#include "text/unicode.h"

namespace kg::text {
namespace {

void lowercase(std::u32string& s) {
  bool ascii = true;
  for (char32_t c : s) ascii = ascii && c < 0x80;
  if (ascii) {
    for (char32_t& c : s)
      if (c >= 'A' && c <= 'Z') c += 32;
    return;
  }
  std::u32string out;
  out.reserve(s.size());
  for (char32_t c : s) append_lowercase(c, out);
  s.swap(out);
}

void replace_all(const NormalizerStep& step, std::u32string& s) {
  const std::u32string& p = step.pattern;
  if (!step.space_runs && p.empty()) return;
  std::u32string out;
  size_t i = 0, copied = 0;
  bool any = false;
  while (i < s.size()) {
    size_t len = 0;
    if (step.space_runs) {
      while (i + len < s.size() && s[i + len] == U' ') ++len;
      if (len < 2) len = 0;
    } else if (s.compare(i, p.size(), p) == 0) {
      len = p.size();
    }
    if (len == 0) {
      ++i;
      continue;
    }
    if (!any) out.reserve(s.size());
    any = true;
    out.append(s, copied, i - copied);
    out += step.content;
    i += len;
    copied = i;
  }
  if (!any) return;
  out.append(s, copied, std::u32string::npos);
  s.swap(out);
}

}  // namespace

void bert_normalize(const BertNormalizerOptions& o, std::u32string& s) {
  // The order of bert.rs: clean, CJK, strip accents, lowercase. Accents are stripped before lowercasing, so the
  // U+0307 that lowercasing U+0130 gives stays.
  if (o.clean_text) {
    size_t w = 0;
    for (char32_t c : s) {
      if (c == 0 || c == 0xFFFD || is_bert_control(c)) continue;
      s[w++] = is_bert_whitespace(c) ? U' ' : c;
    }
    s.resize(w);
  }
  if (o.handle_chinese_chars) {
    bool any = false;
    for (char32_t c : s) any = any || (c >= 0x3400 && is_cjk_ideograph(c));
    if (any) {
      std::u32string out;
      out.reserve(s.size() + 16);
      for (char32_t c : s) {
        if (c >= 0x3400 && is_cjk_ideograph(c)) {
          out.push_back(U' ');
          out.push_back(c);
          out.push_back(U' ');
        } else {
          out.push_back(c);
        }
      }
      s.swap(out);
    }
  }
  const bool strip = o.strip_accents < 0 ? o.lowercase : o.strip_accents == 1;
  if (strip) {
    bool plain = true;  // below U+00C0 nothing decomposes and nothing is a mark
    for (char32_t c : s) plain = plain && c < 0xC0;
    if (!plain) {
      std::u32string d = nfd(s);
      size_t w = 0;
      for (char32_t c : d)
        if (!is_nonspacing_mark(c)) d[w++] = c;
      d.resize(w);
      s.swap(d);
    }
  }
  if (o.lowercase) lowercase(s);
}

void normalize(const std::vector<NormalizerStep>& steps, std::u32string& s) {
  for (const auto& step : steps) {
    switch (step.kind) {
      case NormalizerStep::kBert:
        bert_normalize(step.bert, s);
        break;
      case NormalizerStep::kLowercase:
        lowercase(s);
        break;
      case NormalizerStep::kNfd:
        s = nfd(s);
        break;
      case NormalizerStep::kNfc:
        s = nfc(s);
        break;
      case NormalizerStep::kStrip: {
        size_t from = 0, to = s.size();
        if (step.strip_left)
          while (from < to && is_rust_whitespace(s[from])) ++from;
        if (step.strip_right)
          while (to > from && is_rust_whitespace(s[to - 1])) --to;
        if (from > 0 || to < s.size()) s = s.substr(from, to - from);
        break;
      }
      case NormalizerStep::kReplace:
        replace_all(step, s);
        break;
      case NormalizerStep::kPrecompiled:
        step.charsmap->normalize(s);
        break;
    }
  }
}

}  // namespace kg::text
