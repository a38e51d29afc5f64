#include "data/csv.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <unordered_map>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"

namespace kg::data {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return std::string(s.substr(b, e - b));
}

// Line breaks in a chunk that is followed by a quote, so a final '\r' is a lone CR.
int64_t count_breaks(std::string_view s) {
  int64_t n = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n')
      ++n;
    else if (s[i] == '\r' && (i + 1 == s.size() || s[i + 1] != '\n'))
      ++n;
  }
  return n;
}

std::string plural(size_t n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Hostile-size guards (docs/reliability.md): far above any competition's CSV, far below what would exhaust memory
// (every field costs a std::string, 32 bytes, however short: a file of commas multiplies 32-fold).
constexpr size_t kCsvMaxFieldBytes = size_t{16} << 20;
constexpr size_t kCsvMaxColumns = 100000;

// Parser state over the whole text; one record per call to `record`.
struct Parser {
  std::string_view text;
  const std::string& name;
  size_t i = 0;
  int64_t line = 1;

  [[noreturn]] void fail(int64_t at_line, const std::string& what) const {
    throw DataError(name + " line " + std::to_string(at_line) + ": " + what);
  }

  bool at_break() const { return i < text.size() && (text[i] == '\n' || text[i] == '\r'); }

  void skip_break() {
    if (text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
    ++i;
    ++line;
  }

  void quoted_field(std::string& field, size_t index) {
    const int64_t start = line;
    ++i;  // opening quote
    for (;;) {
      size_t q = text.find('"', i);
      if (q == std::string_view::npos)
        fail(start, "quoted field " + std::to_string(index) + " is never closed (missing \")");
      std::string_view chunk = text.substr(i, q - i);
      line += count_breaks(chunk);
      field.append(chunk);
      i = q + 1;
      if (i < text.size() && text[i] == '"') {  // doubled quote stands for one quote
        field += '"';
        ++i;
        continue;
      }
      break;
    }
    if (i < text.size() && text[i] != ',' && !at_break())
      fail(line, "unexpected text after the closing quote of field " + std::to_string(index) +
                     " (a quote inside a quoted field must be doubled)");
  }

  void plain_field(std::string& field, size_t index) {
    size_t j = i;
    while (j < text.size() && text[j] != ',' && text[j] != '\n' && text[j] != '\r') {
      if (text[j] == '"')
        fail(line, "stray quote in unquoted field " + std::to_string(index) +
                       " (quote the whole field and double the quotes inside it)");
      ++j;
    }
    field.assign(text.substr(i, j - i));
    i = j;
  }

  // Reads the record starting at i (not at a blank line) and the line break that ends it.
  void record(std::vector<std::string>& out) {
    out.clear();
    for (;;) {
      std::string field;
      if (i < text.size() && text[i] == '"')
        quoted_field(field, out.size() + 1);
      else
        plain_field(field, out.size() + 1);
      if (field.size() > kCsvMaxFieldBytes)
        fail(line, "field " + std::to_string(out.size() + 1) + " holds " + std::to_string(field.size()) +
                       " bytes, more than a field may (16 MiB): a binary file, or a quote that opens a field and " +
                       "never closes where it should?");
      if (out.size() == kCsvMaxColumns)
        fail(line, "a record with more than 100,000 fields (columns): not a table kgtrain reads");
      out.push_back(std::move(field));
      if (i < text.size() && text[i] == ',') {
        ++i;
        continue;
      }
      if (i < text.size()) skip_break();
      return;
    }
  }
};

// Bytes that no CSV cell may hold, reported with their line: a NUL (a binary file, or UTF-16 text) and
// anything that is not UTF-8 (labels become JSON class names; pandas rejects them the same way).
void check_text(std::string_view text, const std::string& name) {
  const size_t nul = text.find('\0');
  const size_t bad = std::min(nul, invalid_utf8_at(text));
  if (bad == std::string_view::npos) return;
  const int64_t line = 1 + count_breaks(text.substr(0, bad));
  const size_t line_start = text.find_last_of("\r\n", bad == 0 ? std::string_view::npos : bad - 1);
  const size_t column = bad - (line_start == std::string_view::npos || bad == 0 ? 0 : line_start + 1) + 1;
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text[bad]));
  if (bad == nul)
    throw DataError(name + " line " + std::to_string(line) + ", byte " + std::to_string(column) +
                    ": a NUL byte (0x00); a CSV must be UTF-8 text (is this file binary, or UTF-16?)");
  throw DataError(name + " line " + std::to_string(line) + ", byte " + std::to_string(column) + ": " + hex +
                  " is not valid UTF-8; kgtrain reads CSV files as UTF-8 (convert one in another encoding, e.g. "
                  "iconv -f latin1 -t utf-8 IN > OUT)");
}

}  // namespace

int CsvTable::column(const std::string& name) const {
  for (size_t c = 0; c < header.size(); ++c)
    if (header[c] == name) return static_cast<int>(c);
  return -1;
}

int CsvTable::require_column(const std::string& name, const std::string& key_for_message) const {
  int c = column(name);
  if (c >= 0) {
    auto u = unusable.find(c);
    if (u == unusable.end()) return c;
    throw DataError(path + ": column \"" + name + "\" holds " + u->second +
                    ", which kgtrain cannot read as text (it reads strings, integers, floats, booleans and dates; "
                    "an image column must hold file paths)" +
                    (key_for_message.empty() ? std::string() : " (set by " + key_for_message + ")"));
  }
  std::string cols;
  for (const auto& h : header) cols += (cols.empty() ? "" : ", ") + h;
  std::string msg = path + ": no column \"" + name + "\" (columns: " + cols + ")";
  // Suggest the closest name when it is plausibly a typo or a case slip.
  const std::string want = lower(name);
  size_t best = SIZE_MAX;
  const std::string* pick = nullptr;
  for (const auto& h : header) {
    size_t d = edit_distance(want, lower(h));
    size_t lim = std::max<size_t>(2, std::max(want.size(), h.size()) / 3);
    if (d <= lim && d < std::min(want.size(), h.size()) && d < best) best = d, pick = &h;
  }
  if (pick) msg += "; did you mean \"" + *pick + "\"?";
  if (!key_for_message.empty()) msg += " (set by " + key_for_message + ")";
  throw DataError(msg);
}

std::string CsvTable::where(size_t row) const {
  std::string s = path + " row " + std::to_string(row);
  if (row >= 1 && row <= line.size()) s += " (line " + std::to_string(line[row - 1]) + ")";
  return s;
}

CsvTable parse_csv(std::string_view text, const std::string& name) {
  CsvTable t;
  t.path = name;
  check_text(text, name);
  Parser p{text, name};
  if (text.substr(0, 3) == "\xEF\xBB\xBF") p.i = 3;  // Excel writes a UTF-8 BOM
  bool have_header = false;
  std::vector<std::string> rec;
  while (p.i < text.size()) {
    if (p.at_break()) {  // blank line
      p.skip_break();
      continue;
    }
    const int64_t start = p.line;
    p.record(rec);
    if (!have_header) {
      have_header = true;
      std::unordered_map<std::string, size_t> seen;
      for (size_t c = 0; c < rec.size(); ++c) {
        std::string h = trim(rec[c]);
        auto [it, fresh] = seen.emplace(h, c);
        KG_CHECK(fresh, DataError, name, " line ", start, ": duplicate column \"", h, "\" in the header (columns ",
                 it->second + 1, " and ", c + 1, ")");
        t.header.push_back(std::move(h));
      }
      continue;
    }
    KG_CHECK(rec.size() == t.header.size(), DataError, name, " row ", t.rows.size() + 1, " (line ", start, ") has ",
             plural(rec.size(), "field"), ", the header has ", t.header.size());
    t.rows.push_back(std::move(rec));
    t.line.push_back(start);
  }
  KG_CHECK(have_header, DataError, name, " is empty (expected a header line)");
  return t;
}

CsvTable read_csv(const std::string& path) { return parse_csv(read_file(path), path); }

std::string csv_field(std::string_view s) {
  bool quote = s.find_first_of(",\"\r\n") != std::string_view::npos ||
               (!s.empty() && (is_space(s.front()) || is_space(s.back())));
  if (!quote) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string csv_line(const std::vector<std::string>& fields) {
  // A lone empty field would be a blank line, which readers skip; quote it to keep the row.
  if (fields.size() == 1 && fields[0].empty()) return "\"\"\n";
  std::string out;
  for (size_t c = 0; c < fields.size(); ++c) {
    if (c) out += ',';
    out += csv_field(fields[c]);
  }
  out += '\n';
  return out;
}

std::optional<int64_t> cell_int(const std::string& s) {
  int64_t v = 0;
  auto t = trim(s);
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec != std::errc() || r.ptr != t.data() + t.size() || t.empty()) return std::nullopt;
  return v;
}

std::optional<float> cell_float(const std::string& s) {
  auto t = trim(s);
  if (t.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || errno == ERANGE || !std::isfinite(v)) return std::nullopt;
  const float f = static_cast<float>(v);
  if (!std::isfinite(f)) return std::nullopt;  // 1e40 is a finite double but no float
  return f;
}

std::optional<float> cell_flag(const std::string& s) {
  auto t = trim(s);
  if (t == "1" || t == "1.0" || t == "true" || t == "True") return 1.0f;
  if (t == "0" || t == "0.0" || t == "false" || t == "False") return 0.0f;
  return std::nullopt;
}

std::vector<std::string> cell_names(const std::string& cell, const std::string& sep) {
  std::vector<std::string> out;
  std::string s = trim(cell);
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = sep.empty() ? std::string::npos : s.find(sep, i);
    if (j == std::string::npos) j = s.size();
    std::string tok = trim(std::string_view(s).substr(i, j - i));
    if (!tok.empty()) out.push_back(tok);
    i = j + std::max<size_t>(1, sep.size());
  }
  return out;
}

std::vector<int> require_columns(const CsvTable& csv, const std::vector<std::string>& names, const char* key) {
  std::vector<int> out;
  for (const auto& n : names) out.push_back(csv.require_column(n, key));
  return out;
}

}  // namespace kg::data
