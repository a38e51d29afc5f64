#include "text/bpe.h"

#include <cstdio>

#include "core/error.h"

namespace kg::text {

Bpe::Bpe(std::unordered_map<std::string, int64_t> vocab,
         const std::vector<std::pair<std::string, std::string>>& merges, BpeOptions options,
         const std::string& where)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  for (const auto& kv : vocab_)
    KG_CHECK(kv.second >= 0 && kv.second < (int64_t{1} << 32), ConfigError, where, ": model.vocab[\"", kv.first,
             "\"]: id ", kv.second, " out of range");
  if (!options_.unk_token.empty()) unk_id_ = token_to_id(options_.unk_token);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_ids_[b] = token_to_id(name);
  }
  const size_t prefix = options_.continuing_subword_prefix.size();
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    const int64_t ia = token_to_id(a), ib = token_to_id(b);
    KG_CHECK(ia >= 0, ConfigError, where, ": model.merges[", rank, "]: \"", a, "\" is not in model.vocab");
    KG_CHECK(ib >= 0, ConfigError, where, ": model.merges[", rank, "]: \"", b, "\" is not in model.vocab");
    KG_CHECK(b.size() >= prefix, ConfigError, where, ": model.merges[", rank, "]: \"", b,
             "\" is shorter than continuing_subword_prefix");
    const std::string merged = a + b.substr(prefix);
    const int64_t id = token_to_id(merged);
    KG_CHECK(id >= 0, ConfigError, where, ": model.merges[", rank, "]: the merged token \"", merged,
             "\" is not in model.vocab");
    merges_[pair_key(ia, ib)] = MergeTarget{static_cast<uint32_t>(rank), id};  // a later duplicate wins
  }
}

int64_t Bpe::token_to_id(const std::string& token) const {
  const auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

void Bpe::tokenize(std::string_view word, std::vector<int64_t>& ids) const {
  if (word.empty()) return;
  std::string key;
  if (options_.ignore_merges) {
    key.assign(word);
    const auto it = vocab_.find(key);
    if (it != vocab_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  // merge_word: one symbol per character.
  std::vector<int64_t> syms;
  syms.reserve(word.size());
  bool pending_unk = false;
  const auto flush_unk = [&] {
    if (pending_unk) syms.push_back(unk_id_);
    pending_unk = false;
  };
  size_t i = 0;
  while (i < word.size()) {
    size_t len = 1;
    const auto lead = static_cast<unsigned char>(word[i]);
    if (lead >= 0xF0)
      len = 4;
    else if (lead >= 0xE0)
      len = 3;
    else if (lead >= 0xC0)
      len = 2;
    len = std::min(len, word.size() - i);
    const bool first = i == 0, last = i + len == word.size();
    key.clear();
    if (!first) key += options_.continuing_subword_prefix;
    key.append(word.data() + i, len);
    if (last) key += options_.end_of_word_suffix;
    i += len;
    const auto it = vocab_.find(key);
    if (it != vocab_.end()) {
      flush_unk();
      syms.push_back(it->second);
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (char c : key) all = all && byte_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        for (char c : key) syms.push_back(byte_ids_[static_cast<unsigned char>(c)]);
        continue;
      }
    }
    if (options_.unk_token.empty()) continue;  // no unk_token: the character is dropped, as tokenizers does
    KG_CHECK(unk_id_ >= 0, DataError, "BPE: the unknown token \"", options_.unk_token, "\" is not in the vocabulary");
    if (!options_.fuse_unk) flush_unk();
    pending_unk = true;
  }
  flush_unk();
  // merge_all: the pair of lowest rank, leftmost among equals, until no pair merges.
  while (syms.size() > 1) {
    uint32_t best_rank = UINT32_MAX;
    size_t best = 0;
    int64_t best_id = -1;
    for (size_t k = 0; k + 1 < syms.size(); ++k) {
      const auto it = merges_.find(pair_key(syms[k], syms[k + 1]));
      if (it != merges_.end() && it->second.rank < best_rank) {
        best_rank = it->second.rank;
        best = k;
        best_id = it->second.id;
      }
    }
    if (best_id < 0) break;
    syms[best] = best_id;
    syms.erase(syms.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  ids.insert(ids.end(), syms.begin(), syms.end());
}

}  // namespace kg::text
