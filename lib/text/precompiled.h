// sentencepiece's precompiled_charsmap as tokenizers' Precompiled normalizer applies it (the spm_precompiled crate,
// tokenizers/src/normalizers/precompiled.rs): a little-endian u32 trie size in bytes, that many bytes of a
// darts-clone double array mapping UTF-8 keys to offsets, then the replacement strings, each ending in a NUL.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kg::text {

class PrecompiledCharsmap {
 public:
  // ConfigError naming `where` for a blob that does not parse (short, a trie past its end, replacements that are
  // not UTF-8).
  PrecompiledCharsmap(std::string_view blob, const std::string& where);

  // tokenizers' normalize: each extended grapheme cluster under 6 bytes is replaced whole by the replacement of
  // its shortest prefix in the trie, if any; otherwise each character by its own replacement, if any.
  void normalize(std::u32string& s) const;

 private:
  // The replacement of the shortest key that is a prefix of `key`, or nullptr.
  const std::u32string* transform(std::string_view key) const;

  std::vector<uint32_t> trie_;
  std::string normalized_;
  std::vector<std::u32string> replacements_;  // by the index stored in value_index_
  std::vector<int32_t> value_index_;          // per trie unit: index into replacements_, or -1
};

}  // namespace kg::text
