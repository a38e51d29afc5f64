#include "text/precompiled.h"

#include <map>

#include "core/error.h"
#include "text/unicode.h"

namespace kg::text {
namespace {

bool unit_has_leaf(uint32_t u) { return (u >> 8) & 1; }
uint32_t unit_value(uint32_t u) { return u & ((1u << 31) - 1); }
uint32_t unit_label(uint32_t u) { return u & ((1u << 31) | 0xFF); }
uint32_t unit_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

}  // namespace

PrecompiledCharsmap::PrecompiledCharsmap(std::string_view blob, const std::string& where) {
  KG_CHECK(blob.size() >= 4, ConfigError, where, ": precompiled_charsmap: ", blob.size(),
           " bytes, too short for its trie size");
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(blob[i])); };
  const uint32_t trie_bytes = byte(0) | byte(1) << 8 | byte(2) << 16 | byte(3) << 24;
  const size_t units = trie_bytes / 4;
  KG_CHECK(units <= (blob.size() - 4) / 4, ConfigError, where, ": precompiled_charsmap: its trie of ", trie_bytes,
           " bytes runs past the end of the ", blob.size(), " bytes");
  KG_CHECK(units > 0, ConfigError, where, ": precompiled_charsmap: empty trie");
  trie_.resize(units);
  for (size_t i = 0; i < units; ++i) {
    const size_t o = 4 + 4 * i;
    trie_[i] = byte(o) | byte(o + 1) << 8 | byte(o + 2) << 16 | byte(o + 3) << 24;
  }
  normalized_.assign(blob.substr(4 + 4 * units));
  decode_utf8(normalized_, where + ": precompiled_charsmap's replacement strings");  // as String::from_utf8
  // Decode every replacement a leaf points at once.
  std::map<uint32_t, int32_t> index_of;
  value_index_.assign(units, -1);
  for (size_t pos = 0; pos < units; ++pos) {
    const uint32_t offset = unit_value(trie_[pos]);
    if (offset > normalized_.size()) continue;
    auto it = index_of.find(offset);
    if (it == index_of.end()) {
      size_t end = offset;
      while (end < normalized_.size() && normalized_[end] != 0) ++end;
      // A slice that does not fall on character boundaries would panic in tokenizers; here it is no replacement.
      const std::string_view text(normalized_.data() + offset, end - offset);
      std::u32string r;
      try {
        r = decode_utf8(text);
      } catch (const DataError&) {
        continue;
      }
      it = index_of.emplace(offset, static_cast<int32_t>(replacements_.size())).first;
      replacements_.push_back(std::move(r));
    }
    value_index_[pos] = it->second;
  }
}

const std::u32string* PrecompiledCharsmap::transform(std::string_view key) const {
  // DoubleArray::common_prefix_search, first result.
  size_t pos = 0;
  uint32_t unit = trie_[0];
  pos ^= unit_offset(unit);
  for (char ch : key) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == 0) break;
    pos ^= c;
    if (pos >= trie_.size()) return nullptr;
    unit = trie_[pos];
    if (unit_label(unit) != c) return nullptr;
    pos ^= unit_offset(unit);
    if (pos >= trie_.size()) return nullptr;
    if (unit_has_leaf(unit)) {
      const int32_t idx = value_index_[pos];
      return idx < 0 ? nullptr : &replacements_[static_cast<size_t>(idx)];
    }
  }
  return nullptr;
}

void PrecompiledCharsmap::normalize(std::u32string& s) const {
  std::u32string out;
  std::string key;
  bool modified = false;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t end = grapheme_end(s, i);
    key.clear();
    for (size_t k = i; k < end; ++k) append_utf8(s[k], key);
    if (key.size() < 6) {
      if (const std::u32string* r = transform(key)) {
        out += *r;
        modified = true;
        i = end;
        continue;
      }
    }
    for (size_t k = i; k < end; ++k) {
      key.clear();
      append_utf8(s[k], key);
      if (const std::u32string* r = transform(key)) {
        out += *r;
        modified = true;
      } else {
        out.push_back(s[k]);
      }
    }
    i = end;
  }
  if (modified) s.swap(out);
}

}  // namespace kg::text
