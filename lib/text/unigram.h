// The Unigram model as tokenizers/src/models/unigram/model.rs encodes (encode_optimized, sentencepiece's
// unigram_model.cc): Viterbi over the pieces that start at each character, scores summed in double; a character
// no piece starts with is an unknown node scored min_score - 10; consecutive unknowns are fused into one token;
// each piece of the best path is looked up by its text, unknown ones become byte tokens <0xXX> (byte_fallback) or
// the unk id.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "text/model.h"

namespace kg::text {

class Unigram final : public TokenModel {
 public:
  // `vocab`: (piece, log probability) in id order; unk_id < 0: none (an unknown character is then a DataError).
  Unigram(std::vector<std::pair<std::string, double>> vocab, int64_t unk_id, bool byte_fallback,
          const std::string& where);

  void tokenize(std::string_view word, std::vector<int64_t>& ids) const override;
  int64_t token_to_id(const std::string& token) const override;
  size_t vocab_size() const override { return vocab_.size(); }
  std::vector<std::string> vocabulary() const override {
    std::vector<std::string> out;
    out.reserve(vocab_.size());
    for (const auto& [piece, score] : vocab_) out.push_back(piece);
    return out;
  }

 private:
  // A byte trie of the pieces: node -> (byte -> child) in one hash map, the piece id ending at a node or -1.
  int32_t child(int32_t node, unsigned char b) const;

  std::vector<std::pair<std::string, double>> vocab_;
  std::unordered_map<std::string, int64_t> ids_;  // the last id of each piece, as tokenizers' token_to_ids
  std::unordered_map<uint64_t, int32_t> edges_;
  std::vector<int64_t> node_id_;
  int32_t root_children_[256];  // the root's edges, looked up at every character
  double min_score_ = 0;
  int64_t unk_id_ = -1;
  bool byte_fallback_ = false;
  int64_t byte_ids_[256];
};

}  // namespace kg::text
