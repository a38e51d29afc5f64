// Encoding, in tokenizers' order (tokenizers/src/tokenizer/mod.rs encode_single_sequence, post_process): split
// out the added tokens in the raw text, normalize each other piece, split out the normalized added tokens,
// pre-tokenize each piece into words, give each word to the model; then truncate (utils/truncation.rs
// truncate_encodings, the template's special tokens counted) and apply the template (processors/template.rs).
#include "text/tokenizer.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "text/unicode.h"

namespace kg::text {
namespace {

size_t special_count(const std::vector<TemplatePiece>& t) {
  size_t n = 0;
  for (const auto& p : t) n += p.sequence < 0 ? p.ids.size() : 0;
  return n;
}

// Encoding::truncate for the ids that kgtrain keeps (the overflowing parts are not made).
void cut(std::vector<int64_t>& ids, size_t n, TruncationOptions::Direction d) {
  if (n >= ids.size()) return;
  if (d == TruncationOptions::kRight)
    ids.resize(n);
  else
    ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(n));
}

// truncate_encodings: `max_length` already excludes the special tokens.
void truncate(std::vector<int64_t>& a, std::vector<int64_t>* b, size_t max_length, const TruncationOptions& o) {
  if (max_length == 0) {
    a.clear();
    if (b) b->clear();
    return;
  }
  const size_t total = a.size() + (b ? b->size() : 0);
  if (total <= max_length) return;
  const size_t to_remove = total - max_length;
  if (o.strategy == TruncationOptions::kLongestFirst) {
    if (!b) {
      cut(a, total - to_remove, o.direction);
      return;
    }
    size_t n1 = a.size(), n2 = b->size();
    const bool swap = n1 > n2;
    if (swap) std::swap(n1, n2);
    n2 = n1 > max_length ? n1 : std::max(n1, max_length - n1);
    if (n1 + n2 > max_length) {
      n1 = max_length / 2;
      n2 = n1 + max_length % 2;
    }
    if (swap) std::swap(n1, n2);
    cut(a, n1, o.direction);
    cut(*b, n2, o.direction);
    return;
  }
  std::vector<int64_t>* target = &a;
  if (o.strategy == TruncationOptions::kOnlySecond) {
    KG_CHECK(b, DataError, "truncation only_second: there is no second sequence to truncate");
    target = b;
  }
  KG_CHECK(target->size() > to_remove, DataError, "truncation ",
           o.strategy == TruncationOptions::kOnlyFirst ? "only_first" : "only_second", " to max_length ", o.max_length,
           ": the ", o.strategy == TruncationOptions::kOnlyFirst ? "first" : "second", " sequence has ", target->size(),
           " tokens, too few to remove the ", to_remove, " needed");
  cut(*target, target->size() - to_remove, o.direction);
}

// AddedVocabulary::find_matches: leftmost-longest matches; lstrip takes the whitespace before a match along (not
// what an earlier match took), rstrip the whitespace after it. Calls emit(id, from, to) for each piece in order,
// id -1 for text between matches.
template <class Emit>
void find_added_tokens(std::u32string_view s, const std::vector<AddedToken>& tokens, Emit&& emit) {
  bool ascii_first[128] = {};  // whether a token starts with this ASCII character
  for (const auto& a : tokens)
    if (a.pattern[0] < 0x80) ascii_first[a.pattern[0]] = true;
  size_t start_offset = 0, pos = 0;
  if (tokens.empty()) pos = s.size();
  while (pos < s.size()) {
    if (s[pos] < 0x80 && !ascii_first[s[pos]]) {  // no token starts with this character
      ++pos;
      continue;
    }
    const AddedToken* best = nullptr;
    for (const auto& a : tokens)
      if ((!best || a.pattern.size() > best->pattern.size()) && a.pattern.size() <= s.size() - pos &&
          s.compare(pos, a.pattern.size(), a.pattern) == 0)
        best = &a;
    if (!best) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + best->pattern.size();
    pos = stop;  // the search goes on after the match itself, as the automaton's does
    if (best->lstrip) {
      size_t left = start;
      while (left > 0 && is_rust_whitespace(s[left - 1])) --left;
      start = std::max(left, start_offset);
    }
    if (best->rstrip)
      while (stop < s.size() && is_rust_whitespace(s[stop])) ++stop;
    if (start_offset < start) emit(int64_t{-1}, start_offset, start);
    emit(best->id, start, stop);
    start_offset = stop;
  }
  if (start_offset < s.size()) emit(int64_t{-1}, start_offset, s.size());
}

// bytes_char: GPT-2's map of each byte to a printable code point.
struct ByteLevelAlphabet {
  char32_t of[256];
  ByteLevelAlphabet() {
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      of[b] = printable ? static_cast<char32_t>(b) : next++;
    }
  }
};
const ByteLevelAlphabet kByteLevelAlphabet;

// The GPT-2 regex 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+, its
// alternatives tried in order at each position: calls emit(from, to) for each match (they cover the text).
template <class Emit>
void gpt2_split(std::u32string_view s, Emit&& emit) {
  const size_t n = s.size();
  const auto cls = [&](size_t i) { return gpt2_class(s[i]); };
  size_t i = 0;
  while (i < n) {
    const char32_t c = s[i];
    if (c == U'\'' && i + 1 < n) {
      const char32_t d = s[i + 1];
      if (d == U's' || d == U't' || d == U'm' || d == U'd') {
        emit(i, i + 2);
        i += 2;
        continue;
      }
      if (i + 2 < n &&
          ((d == U'r' && s[i + 2] == U'e') || (d == U'v' && s[i + 2] == U'e') || (d == U'l' && s[i + 2] == U'l'))) {
        emit(i, i + 3);
        i += 3;
        continue;
      }
    }
    // ' ?' then a run of one class: letters, numbers, or neither (nor whitespace).
    const size_t body = c == U' ' && i + 1 < n && cls(i + 1) != kGpt2Space ? i + 1 : i;
    const Gpt2Class k = cls(body);
    if (k != kGpt2Space) {
      size_t j = body + 1;
      while (j < n && cls(j) == k) ++j;
      emit(i, j);
      i = j;
      continue;
    }
    // Whitespace: the run, less its last character when a non-space follows and the run is longer than one.
    size_t j = i + 1;
    while (j < n && cls(j) == kGpt2Space) ++j;
    if (j < n && j - i > 1) --j;
    emit(i, j);
    i = j;
  }
}

}  // namespace

void Tokenizer::pre_tokenize_and_model(std::u32string_view piece, bool at_start, std::vector<int64_t>& ids) const {
  struct Piece {
    std::u32string text;
    bool at_start;
  };
  std::vector<Piece> cur, next;
  cur.push_back(Piece{std::u32string(piece), at_start});
  for (const auto& step : pre_tokenizer_) {
    next.clear();
    for (auto& p : cur) {
      const std::u32string& t = p.text;
      switch (step.kind) {
        case PreTokenizerStep::kWhitespaceSplit:
        case PreTokenizerStep::kBert: {
          size_t start = 0;
          const auto push = [&](size_t from, size_t to) {
            if (from < to) next.push_back(Piece{t.substr(from, to - from), p.at_start && from == 0});
          };
          for (size_t i = 0; i < t.size(); ++i) {
            if (is_rust_whitespace(t[i])) {
              push(start, i);
              start = i + 1;
            } else if (step.kind == PreTokenizerStep::kBert && is_bert_punctuation(t[i])) {
              push(start, i);
              push(i, i + 1);
              start = i + 1;
            }
          }
          push(start, t.size());
          break;
        }
        case PreTokenizerStep::kByteLevel: {
          std::u32string s = t;
          if (step.add_prefix_space && !s.empty() && s[0] != U' ') s.insert(s.begin(), U' ');
          std::string bytes;
          const auto map = [&](size_t from, size_t to) {
            bytes.clear();
            for (size_t i = from; i < to; ++i) append_utf8(s[i], bytes);
            std::u32string mapped;
            mapped.reserve(bytes.size());
            for (char b : bytes) mapped.push_back(kByteLevelAlphabet.of[static_cast<unsigned char>(b)]);
            next.push_back(Piece{std::move(mapped), p.at_start && from == 0});
          };
          if (s.empty()) break;
          if (step.use_regex)
            gpt2_split(s, map);
          else
            map(0, s.size());
          break;
        }
        case PreTokenizerStep::kMetaspace: {
          std::u32string s = t;
          for (char32_t& c : s)
            if (c == U' ') c = step.replacement;
          if (!s.empty() && s[0] != step.replacement &&
              (step.prepend == PreTokenizerStep::kAlways || (step.prepend == PreTokenizerStep::kFirst && p.at_start)))
            s.insert(s.begin(), step.replacement);
          if (!step.split) {
            if (!s.empty()) next.push_back(Piece{std::move(s), p.at_start});
            break;
          }
          size_t start = 0;
          for (size_t i = 1; i <= s.size(); ++i) {
            if (i == s.size() || s[i] == step.replacement) {
              next.push_back(Piece{s.substr(start, i - start), p.at_start && start == 0});
              start = i;
            }
          }
          break;
        }
      }
    }
    cur.swap(next);
  }
  std::string word;
  for (const auto& p : cur) {
    if (p.text.empty()) continue;
    word.clear();
    for (char32_t c : p.text) append_utf8(c, word);
    model_->tokenize(word, ids);
  }
}

std::vector<int64_t> Tokenizer::tokenize(std::string_view text) const {
  if (fast_path_) return tokenize_bert(text);
  std::vector<int64_t> ids;
  const std::u32string raw = decode_utf8(text);  // valid: checked by the caller
  std::u32string normalized;
  find_added_tokens(raw, added_, [&](int64_t id, size_t from, size_t to) {
    if (id >= 0) {
      ids.push_back(id);
      return;
    }
    normalized.assign(raw, from, to - from);
    normalize(normalizer_, normalized);
    const bool at_start = from == 0;
    find_added_tokens(normalized, added_norm_, [&](int64_t nid, size_t nfrom, size_t nto) {
      if (nid >= 0)
        ids.push_back(nid);
      else
        pre_tokenize_and_model(std::u32string_view(normalized).substr(nfrom, nto - nfrom), at_start && nfrom == 0, ids);
    });
  });
  return ids;
}

void Tokenizer::finish() {
  bool plain_added = true;
  for (const auto& a : added_) plain_added = plain_added && !a.lstrip && !a.rstrip;
  fast_path_ =
      plain_added && added_norm_.empty() &&
      (pre_tokenizer_.empty() || (pre_tokenizer_.size() == 1 && pre_tokenizer_[0].kind == PreTokenizerStep::kBert));
  bert_pre_tokenizer_ = !pre_tokenizer_.empty();
  for (const auto& a : added_) added_first_byte_[static_cast<unsigned char>(a.content[0])] = true;
}

void Tokenizer::tokenize_piece(std::string_view piece, std::vector<int64_t>& ids, std::u32string& text,
                               std::string& word) const {
  text = decode_utf8(piece);  // valid: checked by the caller
  normalize(normalizer_, text);
  const auto emit = [&](size_t from, size_t to) {
    if (from == to) return;
    word.clear();
    for (size_t i = from; i < to; ++i) append_utf8(text[i], word);
    model_->tokenize(word, ids);
  };
  if (!bert_pre_tokenizer_) {
    emit(0, text.size());
    return;
  }
  // BertPreTokenizer: split on whitespace (removed), then each punctuation character is a word of its own.
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char32_t c = text[i];
    if (is_rust_whitespace(c)) {
      emit(start, i);
      start = i + 1;
    } else if (is_bert_punctuation(c)) {
      emit(start, i);
      emit(i, i + 1);
      start = i + 1;
    }
  }
  emit(start, text.size());
}

std::vector<int64_t> Tokenizer::tokenize_bert(std::string_view text) const {
  std::vector<int64_t> ids;
  std::u32string scratch;
  std::string word;
  // The added tokens first, in the raw text, leftmost and longest first (tokenizers' AddedVocabulary).
  size_t piece_start = 0;
  size_t i = 0;
  while (i < text.size() && !added_.empty()) {
    if (!added_first_byte_[static_cast<unsigned char>(text[i])]) {
      ++i;
      continue;
    }
    const AddedToken* best = nullptr;
    for (const auto& a : added_)
      if ((!best || a.content.size() > best->content.size()) && a.content.size() <= text.size() - i &&
          std::memcmp(text.data() + i, a.content.data(), a.content.size()) == 0)
        best = &a;
    if (!best) {
      ++i;
      continue;
    }
    tokenize_piece(text.substr(piece_start, i - piece_start), ids, scratch, word);
    ids.push_back(best->id);
    i += best->content.size();
    piece_start = i;
  }
  tokenize_piece(text.substr(piece_start), ids, scratch, word);
  return ids;
}

Encoding Tokenizer::encode_impl(std::string_view a, const std::string_view* b, bool add_special_tokens) const {
  decode_utf8(a, b ? "the first text" : "the text");  // the byte offset of bad input, before any work
  if (b) decode_utf8(*b, "the second text");
  std::vector<int64_t> ids_a = tokenize(a), ids_b;
  if (b) ids_b = tokenize(*b);
  const auto& tmpl = b ? pair_ : single_;
  if (truncation_) {
    size_t max_length = truncation_->max_length;
    const size_t n_added = special_count(tmpl);
    // tokenizers computes max_length - n_added in usize, which wraps when the special tokens are more than
    // max_length: then nothing is truncated at all (tokenizers 0.23.3, measured). Exactly as many: both emptied.
    if (add_special_tokens && n_added > 0) max_length = max_length >= n_added ? max_length - n_added : SIZE_MAX;
    truncate(ids_a, b ? &ids_b : nullptr, max_length, *truncation_);
  }
  Encoding e;
  for (const auto& p : tmpl) {
    if (p.sequence < 0 && !add_special_tokens) continue;
    const std::vector<int64_t>& src = p.sequence < 0 ? p.ids : p.sequence == 0 ? ids_a : ids_b;
    e.ids.insert(e.ids.end(), src.begin(), src.end());
    e.type_ids.insert(e.type_ids.end(), src.size(), p.type_id);
  }
  e.attention_mask.assign(e.ids.size(), 1);
  return e;
}

size_t Tokenizer::special_tokens(bool pair) const { return special_count(pair ? pair_ : single_); }

Encoding Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return encode_impl(text, nullptr, add_special_tokens);
}

Encoding Tokenizer::encode_pair(std::string_view first, std::string_view second, bool add_special_tokens) const {
  return encode_impl(first, &second, add_special_tokens);
}

std::vector<std::string> Tokenizer::id_to_token() const {
  std::vector<std::string> out = model_->vocabulary();
  for (const auto* list : {&added_, &added_norm_})
    for (const auto& a : *list) {
      if (a.id < 0) continue;
      if (static_cast<size_t>(a.id) >= out.size()) out.resize(static_cast<size_t>(a.id) + 1);
      out[static_cast<size_t>(a.id)] = a.content;
    }
  return out;
}

}  // namespace kg::text
