// The WordPiece model: greedy longest-match-first over a vocabulary, as tokenizers/src/models/wordpiece/mod.rs.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/model.h"

namespace kg::text {

struct WordPieceOptions {
  /// The token a word becomes when it cannot be split into vocabulary pieces. Default "[UNK]".
  std::string unk_token = "[UNK]";
  /// Prepended to every piece but a word's first. Default "##".
  std::string continuing_subword_prefix = "##";
  /// A word of more characters (code points) becomes unk_token whole. Default 100.
  size_t max_input_chars_per_word = 100;
};

class WordPiece final : public TokenModel {
 public:
  // `vocab` maps each token to its id; unk_token must be in it (ConfigError otherwise, naming `where`).
  WordPiece(std::unordered_map<std::string, int64_t> vocab, WordPieceOptions options, const std::string& where);

  // Appends the ids of one pre-tokenized word (UTF-8).
  void tokenize(std::string_view word, std::vector<int64_t>& ids) const override;
  const WordPieceOptions& options() const { return options_; }
  size_t vocab_size() const override { return vocab_.size(); }
  std::vector<std::string> vocabulary() const override { return vocabulary_by_id(vocab_); }
  // The id of `token`, or -1.
  int64_t token_to_id(const std::string& token) const override;

 private:
  std::unordered_map<std::string, int64_t> vocab_;
  WordPieceOptions options_;
  int64_t unk_id_ = -1;
  size_t longest_ = 0;  // bytes of the longest vocabulary entry
};

}  // namespace kg::text
