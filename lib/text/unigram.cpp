#include "text/unigram.h"

#include <cstdio>
#include <limits>

#include "core/error.h"

namespace kg::text {

Unigram::Unigram(std::vector<std::pair<std::string, double>> vocab, int64_t unk_id, bool byte_fallback,
                 const std::string& where)
    : vocab_(std::move(vocab)), unk_id_(unk_id), byte_fallback_(byte_fallback) {
  if (unk_id_ >= 0) {
    KG_CHECK(!vocab_.empty(), ConfigError, where, ": model.vocab is empty but model.unk_id is set");
    KG_CHECK(static_cast<size_t>(unk_id_) < vocab_.size(), ConfigError, where, ": model.unk_id ", unk_id_,
             " is not below the vocabulary size ", vocab_.size());
  }
  for (int& c : root_children_) c = -1;
  node_id_.push_back(-1);
  min_score_ = std::numeric_limits<double>::infinity();
  ids_.reserve(vocab_.size());
  for (size_t id = 0; id < vocab_.size(); ++id) {
    const auto& [piece, score] = vocab_[id];
    ids_[piece] = static_cast<int64_t>(id);
    if (score < min_score_) min_score_ = score;
  }
  for (const auto& [piece, id] : ids_) {
    if (piece.empty()) continue;
    int32_t node = 0;
    for (char ch : piece) {
      const auto b = static_cast<unsigned char>(ch);
      int32_t next = child(node, b);
      if (next < 0) {
        next = static_cast<int32_t>(node_id_.size());
        node_id_.push_back(-1);
        if (node == 0)
          root_children_[b] = next;
        else
          edges_[(static_cast<uint64_t>(node) << 8) | b] = next;
      }
      node = next;
    }
    node_id_[node] = id;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_ids_[b] = token_to_id(name);
  }
}

int32_t Unigram::child(int32_t node, unsigned char b) const {
  if (node == 0) return root_children_[b];
  const auto it = edges_.find((static_cast<uint64_t>(node) << 8) | b);
  return it == edges_.end() ? -1 : it->second;
}

int64_t Unigram::token_to_id(const std::string& token) const {
  const auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

void Unigram::tokenize(std::string_view s, std::vector<int64_t>& ids) const {
  if (s.empty()) return;
  struct Node {
    int64_t id = 0;
    double score = 0;
    int64_t starts_at = -1;
  };
  const size_t n = s.size();
  const double unk_score = min_score_ - 10.0;
  std::vector<Node> best(n + 1);
  size_t start = 0;
  while (start < n) {
    const double here = best[start].score;
    const auto lead = static_cast<unsigned char>(s[start]);
    size_t mblen = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    mblen = std::min(mblen, n - start);
    bool single = false;
    int32_t node = 0;
    for (size_t k = start; k < n; ++k) {
      node = child(node, static_cast<unsigned char>(s[k]));
      if (node < 0) break;
      const int64_t id = node_id_[node];
      if (id < 0) continue;
      Node& target = best[k + 1];
      const double cand = vocab_[static_cast<size_t>(id)].second + here;
      if (target.starts_at < 0 || cand > target.score) {
        target.score = cand;
        target.starts_at = static_cast<int64_t>(start);
        target.id = id;
      }
      single = single || k + 1 - start == mblen;
    }
    if (!single) {
      KG_CHECK(unk_id_ >= 0, DataError, "Unigram: the text has a character that no piece covers and the model has "
               "no unk_id");
      Node& target = best[start + mblen];
      const double cand = unk_score + here;
      if (target.starts_at < 0 || cand > target.score) {
        target.score = cand;
        target.starts_at = static_cast<int64_t>(start);
        target.id = unk_id_;
      }
    }
    start += mblen;
  }
  // Back from the end; consecutive unknowns fused into one piece.
  std::vector<std::pair<size_t, size_t>> pieces;  // [from, to) in reverse order
  size_t end = n;
  bool fusing = false;
  while (end > 0) {
    const Node& node = best[end];
    const auto from = static_cast<size_t>(node.starts_at);
    if (node.id == unk_id_) {
      if (fusing)
        pieces.back().first = from;
      else
        pieces.emplace_back(from, end);
      fusing = true;
    } else {
      pieces.emplace_back(from, end);
      fusing = false;
    }
    end = from;
  }
  std::string piece;
  for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
    piece.assign(s.data() + it->first, it->second - it->first);
    const auto found = ids_.find(piece);
    if (found != ids_.end()) {
      ids.push_back(found->second);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : piece) all = all && byte_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        for (char c : piece) ids.push_back(byte_ids_[static_cast<unsigned char>(c)]);
        continue;
      }
    }
    KG_CHECK(unk_id_ >= 0, DataError, "Unigram: a piece is not in the vocabulary and the model has no unk_id");
    ids.push_back(unk_id_);
  }
}

}  // namespace kg::text
