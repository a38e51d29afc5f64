// The BPE model as tokenizers/src/models/bpe/model.rs applies it (no dropout): each character of a word is looked
// up (with continuing_subword_prefix / end_of_word_suffix), unknown ones become byte tokens <0xXX> (byte_fallback)
// or unk_token (fused when fuse_unk), then the pair of lowest merge rank is merged, leftmost first, until none is
// left.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "text/model.h"

namespace kg::text {

struct BpeOptions {
  /// The token of a character that is not in the vocabulary; empty: such characters are dropped. Default empty.
  std::string unk_token;
  /// Prepended to every character but a word's first before lookup. Default empty.
  std::string continuing_subword_prefix;
  /// Appended to a word's last character before lookup. Default empty.
  std::string end_of_word_suffix;
  /// Consecutive unknown characters give one unk_token. Default false.
  bool fuse_unk = false;
  /// Unknown characters become their UTF-8 bytes' tokens <0xXX> when all are in the vocabulary. Default false.
  bool byte_fallback = false;
  /// A word that is in the vocabulary whole is that token, without merging. Default false.
  bool ignore_merges = false;
};

class Bpe final : public TokenModel {
 public:
  // `merges` in rank order; each pair's tokens and their concatenation must be in `vocab` (ConfigError naming
  // `where` and the merge otherwise).
  Bpe(std::unordered_map<std::string, int64_t> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
      BpeOptions options, const std::string& where);

  void tokenize(std::string_view word, std::vector<int64_t>& ids) const override;
  int64_t token_to_id(const std::string& token) const override;
  size_t vocab_size() const override { return vocab_.size(); }
  std::vector<std::string> vocabulary() const override { return vocabulary_by_id(vocab_); }

 private:
  struct MergeTarget {
    uint32_t rank;
    int64_t id;
  };
  static uint64_t pair_key(int64_t a, int64_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(b); }

  std::unordered_map<std::string, int64_t> vocab_;
  std::unordered_map<uint64_t, MergeTarget> merges_;
  BpeOptions options_;
  int64_t unk_id_ = -1;
  int64_t byte_ids_[256];  // <0xXX> tokens, -1 when absent
};

}  // namespace kg::text
