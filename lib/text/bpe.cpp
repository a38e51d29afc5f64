#include "text/bpe.h"

#include <cstdio>
#include <functional>
#include <queue>

#include "core/error.h"

namespace kg::text {

Bpe::Bpe(std::unordered_map<std::string, int64_t> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
         BpeOptions options, const std::string& where)
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
  // merge_all: the pair of lowest rank, leftmost among equals, until no pair merges; a min-heap over (rank,
  // position) with stale entries skipped, as word.rs, so that a long word costs O(n log n), not O(n^2).
  if (syms.size() > 1) {
    struct Entry {
      uint32_t rank;
      uint32_t pos;
      int64_t id;
      bool operator>(const Entry& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
    };
    const size_t n = syms.size();
    std::vector<int32_t> prev(n), next(n);
    std::vector<char> alive(n, 1);
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
    for (size_t k = 0; k < n; ++k) {
      prev[k] = static_cast<int32_t>(k) - 1;
      next[k] = k + 1 < n ? static_cast<int32_t>(k + 1) : -1;
      if (k + 1 < n) {
        const auto it = merges_.find(pair_key(syms[k], syms[k + 1]));
        if (it != merges_.end()) heap.push(Entry{it->second.rank, static_cast<uint32_t>(k), it->second.id});
      }
    }
    while (!heap.empty()) {
      const Entry top = heap.top();
      heap.pop();
      if (!alive[top.pos] || next[top.pos] < 0) continue;
      const auto right = static_cast<size_t>(next[top.pos]);
      const auto it = merges_.find(pair_key(syms[top.pos], syms[right]));
      if (it == merges_.end() || it->second.id != top.id) continue;  // an expired entry
      syms[top.pos] = top.id;
      alive[right] = 0;
      next[top.pos] = next[right];
      if (next[right] >= 0) prev[static_cast<size_t>(next[right])] = static_cast<int32_t>(top.pos);
      if (prev[top.pos] >= 0) {
        const auto p = static_cast<size_t>(prev[top.pos]);
        const auto m = merges_.find(pair_key(syms[p], syms[top.pos]));
        if (m != merges_.end()) heap.push(Entry{m->second.rank, static_cast<uint32_t>(p), m->second.id});
      }
      if (next[top.pos] >= 0) {
        const auto m = merges_.find(pair_key(syms[top.pos], syms[static_cast<size_t>(next[top.pos])]));
        if (m != merges_.end()) heap.push(Entry{m->second.rank, top.pos, m->second.id});
      }
    }
    size_t w = 0;
    for (size_t k = 0; k < n; ++k)
      if (alive[k]) syms[w++] = syms[k];
    syms.resize(w);
  }
  ids.insert(ids.end(), syms.begin(), syms.end());
}

}  // namespace kg::text
