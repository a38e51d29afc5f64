// The normalizers of a tokenizer.json that kgtrain applies: BertNormalizer, Lowercase, NFD, NFC, Strip, Replace and
// Precompiled, alone or in a Sequence (tokenizers/src/normalizers/bert.rs, utils.rs, strip.rs, replace.rs,
// precompiled.rs).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "text/precompiled.h"

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
  enum Kind { kBert, kLowercase, kNfd, kNfc, kStrip, kReplace, kPrecompiled } kind = kBert;
  BertNormalizerOptions bert;
  /// kStrip: remove whitespace (char::is_whitespace) at the start, at the end.
  bool strip_left = false, strip_right = false;
  /// kReplace: each non-overlapping occurrence of `pattern`, leftmost first, becomes `content`; with
  /// `space_runs` the pattern is the regex " {2,}" (runs of two spaces or more) instead.
  std::u32string pattern, content;
  bool space_runs = false;
  std::shared_ptr<const PrecompiledCharsmap> charsmap;
};

void bert_normalize(const BertNormalizerOptions& o, std::u32string& s);
void normalize(const std::vector<NormalizerStep>& steps, std::u32string& s);

}  // namespace kg::text
