// A Hugging Face tokenizer.json with a WordPiece model (BERT's), encoding text to the ids `tokenizers` gives.
//
// Supported, each as tokenizers defines it: model WordPiece; normalizer BertNormalizer, Lowercase, NFD or a Sequence
// of them (or none); pre_tokenizer BertPreTokenizer (or none); post_processor TemplateProcessing or BertProcessing
// (or none); added_tokens matched in the raw text before normalization (normalized=false, no lstrip/rstrip/
// single_word); truncation longest_first / only_first / only_second, right or left. Anything else in the file is a
// ConfigError naming the file, the key and the value: never a silently different tokenization. The decoder is not
// read (kgtrain does not decode).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/normalizer.h"
#include "text/wordpiece.h"

namespace kg::text {

struct TruncationOptions {
  enum Strategy { kLongestFirst, kOnlyFirst, kOnlySecond };
  enum Direction { kRight, kLeft };
  /// Tokens of the whole encoding, the special tokens the template adds included.
  size_t max_length = 512;
  /// Which sequence loses tokens (tokenizers' truncate_encodings). Default longest_first.
  Strategy strategy = kLongestFirst;
  /// Which end of a sequence is cut. Default right.
  Direction direction = kRight;
};

// "longest_first" -> kLongestFirst ...; ConfigError naming `key` for another value.
TruncationOptions::Strategy truncation_strategy(const std::string& name, const std::string& key);

struct Encoding {
  std::vector<int64_t> ids;
  std::vector<int64_t> type_ids;
  std::vector<int64_t> attention_mask;  // all ones: kgtrain pads later, per batch
};

// One piece of a template: a sequence (A or B) or a special token's ids.
struct TemplatePiece {
  int sequence = -1;  // 0 = A, 1 = B, -1 = a special token
  std::vector<int64_t> ids;
  int64_t type_id = 0;
};

struct AddedToken {
  std::string content;
  int64_t id = 0;
};

class Tokenizer {
 public:
  // Reads `path`; ConfigError naming the file and key for anything not supported, DataError when unreadable.
  static Tokenizer from_file(const std::string& path);
  // The same from the text of a tokenizer.json; `where` names it in errors.
  static Tokenizer from_json(const std::string& json_text, const std::string& where);

  // One text, or a pair (type ids 0 and 1 as the template says). Input must be UTF-8 (DataError with the byte
  // offset otherwise). Truncates when truncation() is set; a truncation that cannot be met (only_second without
  // a second text, a sequence too short) is a DataError, as tokenizers refuses it.
  Encoding encode(std::string_view text, bool add_special_tokens = true) const;
  Encoding encode_pair(std::string_view first, std::string_view second, bool add_special_tokens = true) const;

  // The truncation of the file's "truncation" key, replaced or removed here.
  const std::optional<TruncationOptions>& truncation() const { return truncation_; }
  void set_truncation(std::optional<TruncationOptions> t) { truncation_ = t; }

  // The ids of one text without special tokens or truncation.
  std::vector<int64_t> tokenize(std::string_view text) const;
  const WordPiece& model() const { return *model_; }

 private:
  Tokenizer() = default;
  Encoding encode_impl(std::string_view a, const std::string_view* b, bool add_special_tokens) const;
  void tokenize_piece(std::string_view piece, std::vector<int64_t>& ids, std::u32string& scratch,
                      std::string& word) const;

  std::string where_;
  std::vector<NormalizerStep> normalizer_;
  bool bert_pre_tokenizer_ = false;
  std::shared_ptr<const WordPiece> model_;
  std::vector<AddedToken> added_;  // matched before normalization, longest first at each position
  bool added_first_byte_[256] = {};  // whether an added token starts with this byte
  std::vector<TemplatePiece> single_, pair_;
  std::optional<TruncationOptions> truncation_;

  friend struct TokenizerReader;
};

}  // namespace kg::text
