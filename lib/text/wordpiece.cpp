#include "text/wordpiece.h"

#include "core/error.h"

namespace kg::text {
namespace {

bool continuation(char b) { return (static_cast<unsigned char>(b) & 0xC0) == 0x80; }

}  // namespace

WordPiece::WordPiece(std::unordered_map<std::string, int64_t> vocab, WordPieceOptions options, const std::string& where)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  const auto it = vocab_.find(options_.unk_token);
  KG_CHECK(it != vocab_.end(), ConfigError, where, ": model.unk_token \"", options_.unk_token,
           "\" is not in model.vocab");
  unk_id_ = it->second;
  for (const auto& kv : vocab_) longest_ = std::max(longest_, kv.first.size());
}

int64_t WordPiece::token_to_id(const std::string& token) const {
  const auto it = vocab_.find(token);
  return it == vocab_.end() ? -1 : it->second;
}

void WordPiece::tokenize(std::string_view word, std::vector<int64_t>& ids) const {
  size_t chars = 0;
  for (char b : word) chars += !continuation(b);
  if (chars > options_.max_input_chars_per_word) {
    ids.push_back(unk_id_);
    return;
  }
  const size_t first = ids.size();
  const std::string& prefix = options_.continuing_subword_prefix;
  std::string piece;
  size_t start = 0;
  while (start < word.size()) {
    // Longest first; a candidate longer than the longest vocabulary entry cannot match, so start below it (on a
    // character boundary): the same answer as trying every length from the end of the word.
    size_t end = word.size();
    const size_t extra = start > 0 ? prefix.size() : 0;
    if (end - start + extra > longest_) {
      end = start + (longest_ > extra ? longest_ - extra : 0);
      while (end > start && end < word.size() && continuation(word[end])) --end;
    }
    int64_t found = -1;
    while (start < end) {
      if (start > 0)
        piece.assign(prefix);
      else
        piece.clear();
      piece.append(word.data() + start, end - start);
      const auto it = vocab_.find(piece);
      if (it != vocab_.end()) {
        found = it->second;
        break;
      }
      --end;  // back one character
      while (end > start && continuation(word[end])) --end;
    }
    if (found < 0) {
      ids.resize(first);
      ids.push_back(unk_id_);
      return;
    }
    ids.push_back(found);
    start = end;
  }
}

}  // namespace kg::text
