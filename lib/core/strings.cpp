#include <cstdio>
#include "core/strings.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace kg {

size_t edit_distance(std::string_view a, std::string_view b) {
  // Damerau–Levenshtein (optimal string alignment): a swapped pair of letters is one typo.
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::vector<std::string> closest(const std::string& word, const std::vector<std::string>& candidates, size_t max_n) {
  // Compare the last dotted part too, so "optim.lrr" finds "optim.lr" and "model.widht" finds "model.width".
  const size_t limit = std::max<size_t>(2, word.size() / 3);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& c : candidates) {
    size_t dist = edit_distance(word, c);
    if (dist <= limit && dist > 0) scored.emplace_back(dist, c);
  }
  std::stable_sort(scored.begin(), scored.end(), [](auto& x, auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (auto& s : scored) {
    if (out.size() == max_n) break;
    if (std::find(out.begin(), out.end(), s.second) == out.end()) out.push_back(s.second);
  }
  return out;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  auto c = closest(word, candidates);
  if (c.empty()) return "";
  return " (did you mean " + join(c, " or ") + "?)";
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t p = s.find(sep, start);
    out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
    if (p == std::string::npos) return out;
    start = p + 1;
  }
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view x) {
  return s.size() >= x.size() && s.substr(s.size() - x.size()) == x;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r' || s[b] == '\n')) ++b;
  while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r' || s[e - 1] == '\n')) --e;
  return std::string(s.substr(b, e - b));
}

std::string format_double(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string format_significant(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

size_t invalid_utf8_at(std::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = byte(i);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;                   // continuation bytes
    unsigned lo = 0x80, hi = 0xBF;  // allowed range of the first continuation byte
    if (c >= 0xC2 && c <= 0xDF)
      n = 1;
    else if (c == 0xE0)
      n = 2, lo = 0xA0;
    else if (c == 0xED)
      n = 2, hi = 0x9F;  // no UTF-16 surrogates
    else if (c >= 0xE1 && c <= 0xEF)
      n = 2;
    else if (c == 0xF0)
      n = 3, lo = 0x90;
    else if (c >= 0xF1 && c <= 0xF3)
      n = 3;
    else if (c == 0xF4)
      n = 3, hi = 0x8F;  // up to U+10FFFF
    else
      return i;  // a continuation byte without a lead, 0xC0/0xC1 (overlong) or 0xF5..0xFF
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return i;
      const unsigned char d = byte(i + k);
      if (k == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF)) return i;
    }
    i += n + 1;
  }
  return std::string_view::npos;
}

}  // namespace kg
