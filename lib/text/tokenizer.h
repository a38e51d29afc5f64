// A Hugging Face tokenizer.json, encoding text to the ids `tokenizers` gives.
//
// Supported, each as tokenizers defines it: models WordPiece (BERT), BPE (byte-level: RoBERTa, GPT-2, OLMo) and
// Unigram (sentencepiece's: DeBERTa-v3, XLM-R); normalizers BertNormalizer, Lowercase, NFD, NFC, Strip, Replace (a
// string, or the regex " {2,}"), Precompiled (sentencepiece's charsmap) or a Sequence of them (or none);
// pre_tokenizers BertPreTokenizer, ByteLevel (the GPT-2 regex), Metaspace, WhitespaceSplit or a Sequence of them
// (or none); post_processors TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel (or none);
// added_tokens with lstrip / rstrip / normalized as tokenizers matches them (not single_word); truncation
// longest_first / only_first / only_second, right or left. Anything else in the file is a ConfigError naming the
// file, the key and the value: never a silently different tokenization. The decoder is not read (kgtrain does not
// decode).
//
// from_folder also reads a transformers folder that has only a sentencepiece model (DeBERTa-v2/v3's spm.model and
// tokenizer_config.json), building what transformers' DebertaV2Tokenizer builds from it.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/model.h"
#include "text/normalizer.h"

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
  bool lstrip = false, rstrip = false;  // the match takes the whitespace before / after it along
  bool normalized = false;              // matched in the normalized text (its content normalized) instead of the raw
  std::u32string pattern;               // what is matched: the content, normalized when `normalized`
};

// One step of the pre-tokenizer (a Sequence is flattened into these).
struct PreTokenizerStep {
  enum Kind { kBert, kByteLevel, kMetaspace, kWhitespaceSplit } kind = kBert;
  bool add_prefix_space = false;     // ByteLevel: a space before a piece that does not start with one
  bool use_regex = true;             // ByteLevel: split by the GPT-2 regex
  char32_t replacement = U'\u2581';  // Metaspace
  enum Prepend { kAlways, kFirst, kNever } prepend = kAlways;
  bool split = true;  // Metaspace: split before each replacement character
  // kFirst prepends to a piece that starts at offset 0 of the original text (tokenizers' offsets_original): the
  // first piece unless an added token or, after WhitespaceSplit, whitespace comes before it.
};

// The deepest nesting of arrays and objects in a JSON text (strings skipped); files deeper than kMaxJsonDepth are
// refused before parsing.
size_t json_nesting_depth(std::string_view text);
constexpr size_t kMaxJsonDepth = 64;

class Tokenizer {
 public:
  // Reads `path`; ConfigError naming the file and key for anything not supported, DataError when unreadable.
  static Tokenizer from_file(const std::string& path);
  // A transformers tokenizer folder: its tokenizer.json when there is one; else its spm.model (a sentencepiece
  // Unigram model) with tokenizer_config.json, special_tokens_map.json and added_tokens.json when present, as
  // transformers' DebertaV2Tokenizer converts it. ConfigError naming the folder when it has neither.
  static Tokenizer from_folder(const std::string& dir);
  // The tokenizer.json that from_folder builds from a sentencepiece folder (for checks against transformers').
  static std::string spm_folder_json(const std::string& dir);
  // The same from the text of a tokenizer.json; `where` names it in errors.
  static Tokenizer from_json(const std::string& json_text, const std::string& where);

  // One text, or a pair (type ids 0 and 1 as the template says). Input must be UTF-8 (DataError with the byte
  // offset otherwise). Truncates when truncation() is set; a truncation that cannot be met (only_second without
  // a second text, a sequence too short) is a DataError, as tokenizers refuses it.
  Encoding encode(std::string_view text, bool add_special_tokens = true) const;
  Encoding encode_pair(std::string_view first, std::string_view second, bool add_special_tokens = true) const;

  // One text as sliding windows, as tokenizers' truncation with a stride makes its overflowing encodings (transformers'
  // return_overflowing_tokens=True, stride=`stride`): the text's tokens cut into pieces of max_length minus the
  // special tokens, consecutive pieces sharing `stride` tokens, each wrapped in the single-text template; the main
  // encoding first, then the overflow in tokenizers' order (right: from the start; left: from the end). One window
  // when the text fits. The tokenizer's own truncation is not used. ConfigError when `stride` is not below the
  // tokens a window holds (tokenizers asserts it).
  std::vector<Encoding> encode_windows(std::string_view text, size_t max_length, size_t stride,
                                       TruncationOptions::Direction direction) const;
  // The special tokens the single-text (or pair) template adds.
  size_t special_tokens(bool pair = false) const;

  // The truncation of the file's "truncation" key, replaced or removed here.
  const std::optional<TruncationOptions>& truncation() const { return truncation_; }
  void set_truncation(std::optional<TruncationOptions> t) { truncation_ = t; }

  // The ids of one text without special tokens or truncation.
  std::vector<int64_t> tokenize(std::string_view text) const;
  const TokenModel& model() const { return *model_; }
  // Every id's token string (the model's vocabulary with the added tokens over it), as transformers'
  // convert_ids_to_tokens shows them: "##ing", "\u0120the", "\u2581the", "[CLS]"; "" for an id no token has.
  std::vector<std::string> id_to_token() const;
  // The ids of the added tokens ([CLS], [SEP], [PAD], [MASK], [UNK], ...) and of the template's special tokens: what
  // masked-language modelling never masks. Sorted, unique.
  std::vector<int64_t> special_ids() const;

 private:
  Tokenizer() = default;
  Encoding encode_impl(std::string_view a, const std::string_view* b, bool add_special_tokens) const;
  // The BERT path: added tokens without flags in the raw bytes, BertPreTokenizer or none.
  std::vector<int64_t> tokenize_bert(std::string_view text) const;
  void tokenize_piece(std::string_view piece, std::vector<int64_t>& ids, std::u32string& scratch,
                      std::string& word) const;
  // Every other tokenizer: tokenizers' steps on code points.
  void pre_tokenize_and_model(std::u32string_view piece, bool at_start, std::vector<int64_t>& ids) const;
  void finish();  // after reading: the fast path's flags

  std::string where_;
  std::vector<NormalizerStep> normalizer_;
  std::vector<PreTokenizerStep> pre_tokenizer_;
  bool bert_pre_tokenizer_ = false;
  bool fast_path_ = false;  // tokenize_bert applies
  std::shared_ptr<const TokenModel> model_;
  std::vector<AddedToken> added_;       // matched before normalization, longest first at each position
  std::vector<AddedToken> added_norm_;  // matched after it
  bool added_first_byte_[256] = {};     // whether a raw added token starts with this byte
  std::vector<TemplatePiece> single_, pair_;
  std::optional<TruncationOptions> truncation_;

  friend struct TokenizerReader;
};

}  // namespace kg::text
