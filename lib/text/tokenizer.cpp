// Encoding, in tokenizers' order (tokenizers/src/tokenizer/mod.rs encode_single_sequence, post_process): split
// out the added tokens in the raw text, normalize each other piece, pre-tokenize it into words, WordPiece each
// word; then truncate (utils/truncation.rs truncate_encodings, the template's special tokens counted) and apply
// the template (processors/template.rs).
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
           o.strategy == TruncationOptions::kOnlyFirst ? "only_first" : "only_second", " to max_length ",
           o.max_length, ": the ", o.strategy == TruncationOptions::kOnlyFirst ? "first" : "second",
           " sequence has ", target->size(), " tokens, too few to remove the ", to_remove, " needed");
  cut(*target, target->size() - to_remove, o.direction);
}

}  // namespace

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

std::vector<int64_t> Tokenizer::tokenize(std::string_view text) const {
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
    if (add_special_tokens && n_added > 0) {
      KG_CHECK(max_length >= n_added, DataError, "truncation max_length ", max_length, " is less than the ", n_added,
               " special tokens the template adds");
      max_length -= n_added;
    }
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

Encoding Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return encode_impl(text, nullptr, add_special_tokens);
}

Encoding Tokenizer::encode_pair(std::string_view first, std::string_view second, bool add_special_tokens) const {
  return encode_impl(first, &second, add_special_tokens);
}

}  // namespace kg::text
