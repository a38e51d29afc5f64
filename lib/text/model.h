// The model of a tokenizer: turns one pre-tokenized word into ids. WordPiece, BPE and Unigram implement it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kg::text {

class TokenModel {
 public:
  virtual ~TokenModel() = default;
  // Appends the ids of one pre-tokenized word (UTF-8, never empty). A word the model cannot encode (no unknown
  // token to fall back on) is a DataError.
  virtual void tokenize(std::string_view word, std::vector<int64_t>& ids) const = 0;
  // The id of `token` in the model's vocabulary, or -1.
  virtual int64_t token_to_id(const std::string& token) const = 0;
  virtual size_t vocab_size() const = 0;
  // Every token's string, indexed by id ("" for an id no token has): what ids are shown as (show-batch).
  virtual std::vector<std::string> vocabulary() const = 0;
};

// A token -> id vocabulary as strings indexed by id ("" for an id no token has): WordPiece's and BPE's vocabulary().
inline std::vector<std::string> vocabulary_by_id(const std::unordered_map<std::string, int64_t>& vocab) {
  std::vector<std::string> out;
  for (const auto& [token, id] : vocab) {
    if (id < 0) continue;
    if (static_cast<size_t>(id) >= out.size()) out.resize(static_cast<size_t>(id) + 1);
    out[static_cast<size_t>(id)] = token;
  }
  return out;
}

}  // namespace kg::text
