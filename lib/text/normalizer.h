// The normalizers of a tokenizer.json that kgtrain applies: BertNormalizer, Lowercase and NFD, alone or in a
// Sequence (tokenizers/src/normalizers/bert.rs, normalizers/utils.rs).
#pragma once
#include <string>
#include <vector>

namespace kg::text {

struct BertNormalizerOptions {
  /// Remove U+0000, U+FFFD and control characters (except \t \n \r); map whitespace to ' '. Default true.
  bool clean_text = true;
  /// Put spaces around CJK ideographs so that each becomes a word. Default true.
  bool handle_chinese_chars = true;
  /// NFD, then drop nonspacing marks (Mn); unset follows `lowercase`, as in tokenizers. Default unset.
  int strip_accents = -1;  // -1 unset, 0 false, 1 true
  /// Rust's char::to_lowercase of every character. Default true.
  bool lowercase = true;
};

// One step of a normalizer Sequence.
struct NormalizerStep {
  enum Kind { kBert, kLowercase, kNfd } kind = kBert;
  BertNormalizerOptions bert;
};

void bert_normalize(const BertNormalizerOptions& o, std::u32string& s);
void normalize(const std::vector<NormalizerStep>& steps, std::u32string& s);

}  // namespace kg::text
