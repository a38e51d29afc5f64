// tokenizer.json's normalizer, pre_tokenizer and model, as tokenizers serializes them (normalizers/*.rs,
// pre_tokenizers/*.rs, models/*/serialization.rs). What kgtrain does not implement is refused by name.
#include <optional>

#include "text/bpe.h"
#include "text/tokenizer_reader.h"
#include "text/unicode.h"
#include "text/unigram.h"
#include "text/wordpiece.h"

namespace kg::text {


namespace {

// Standard base64 with padding, as the base64 crate's STANDARD engine decodes it; nullopt when malformed.
std::optional<std::string> decode_base64_text(const std::string& in) {
  static const std::string digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (in.size() % 4 != 0) return std::nullopt;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char c = in[i + k];
      if (c == '=' && i + 4 == in.size() && k >= 2) {
        ++pad;
        v <<= 6;
        continue;
      }
      const size_t d = digits.find(c);
      if (d == std::string::npos || pad > 0) return std::nullopt;
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    out.push_back(static_cast<char>((v >> 16) & 0xFF));
    if (pad < 2) out.push_back(static_cast<char>((v >> 8) & 0xFF));
    if (pad < 1) out.push_back(static_cast<char>(v & 0xFF));
  }
  return out;
}

}  // namespace

void TokenizerReader::normalizer(const json& j, const std::string& key, std::vector<NormalizerStep>& steps) const {
  if (j.is_null()) return;
  const std::string type = type_of(j, key);
  NormalizerStep step;
  if (type == "Sequence") {
    only_keys(j, key, {"type", "normalizers"});
    const json& list = need(j, key, "normalizers", json::value_t::array);
    for (size_t i = 0; i < list.size(); ++i)
      normalizer(list[i], key + ".normalizers[" + std::to_string(i) + "]", steps);
    return;
  } else if (type == "BertNormalizer") {
    only_keys(j, key, {"type", "clean_text", "handle_chinese_chars", "strip_accents", "lowercase"});
    auto& b = step.bert;
    b.clean_text = need(j, key, "clean_text", json::value_t::boolean).get<bool>();
    b.handle_chinese_chars = need(j, key, "handle_chinese_chars", json::value_t::boolean).get<bool>();
    b.lowercase = need(j, key, "lowercase", json::value_t::boolean).get<bool>();
    const json& s = need(j, key, "strip_accents", json::value_t::discarded);
    KG_CHECK(s.is_null() || s.is_boolean(), ConfigError, where, ": ", key,
             ".strip_accents: expected true, false or null, got ", s.dump());
    b.strip_accents = s.is_null() ? -1 : s.get<bool>() ? 1 : 0;
  } else if (type == "Lowercase") {
    only_keys(j, key, {"type"});
    step.kind = NormalizerStep::kLowercase;
  } else if (type == "NFD") {
    only_keys(j, key, {"type"});
    step.kind = NormalizerStep::kNfd;
  } else if (type == "NFC") {
    only_keys(j, key, {"type"});
    step.kind = NormalizerStep::kNfc;
  } else if (type == "Strip") {
    only_keys(j, key, {"type", "strip_left", "strip_right"});
    step.kind = NormalizerStep::kStrip;
    step.strip_left = need(j, key, "strip_left", json::value_t::boolean).get<bool>();
    step.strip_right = need(j, key, "strip_right", json::value_t::boolean).get<bool>();
  } else if (type == "Replace") {
    only_keys(j, key, {"type", "pattern", "content"});
    step.kind = NormalizerStep::kReplace;
    const json& pattern = need(j, key, "pattern", json::value_t::object);
    step.content = decode_utf8(need(j, key, "content", json::value_t::string).get<std::string>());
    if (pattern.size() == 1 && pattern.contains("String") && pattern["String"].is_string() &&
        !pattern["String"].get<std::string>().empty()) {
      step.pattern = decode_utf8(pattern["String"].get<std::string>());
    } else if (pattern.size() == 1 && pattern.contains("Regex") && pattern["Regex"] == " {2,}") {
      step.space_runs = true;
    } else {
      unsupported(key + ".pattern", pattern, "a non-empty String, or the Regex \" {2,}\"");
    }
  } else if (type == "Precompiled") {
    only_keys(j, key, {"type", "precompiled_charsmap"});
    step.kind = NormalizerStep::kPrecompiled;
    const json& b64 = need(j, key, "precompiled_charsmap", json::value_t::discarded);
    if (b64.is_null()) return;  // tokenizers: no charsmap, no normalization
    KG_CHECK(b64.is_string(), ConfigError, where, ": ", key, ".precompiled_charsmap: expected base64 text");
    const auto blob = decode_base64_text(b64.get<std::string>());
    KG_CHECK(blob, ConfigError, where, ": ", key, ".precompiled_charsmap: not valid base64");
    step.charsmap = std::make_shared<const PrecompiledCharsmap>(*blob, where + ": " + key);
  } else {
    unsupported(key + ".type", type,
                "BertNormalizer, Lowercase, NFD, NFC, Strip, Replace, Precompiled and a Sequence of them");
  }
  steps.push_back(step);
}

void TokenizerReader::pre_tokenizer(const json& j, const std::string& key, std::vector<PreTokenizerStep>& steps) const {
  if (j.is_null()) return;
  const std::string type = type_of(j, key);
  PreTokenizerStep step;
  if (type == "Sequence") {
    only_keys(j, key, {"type", "pretokenizers"});
    const json& list = need(j, key, "pretokenizers", json::value_t::array);
    for (size_t i = 0; i < list.size(); ++i)
      pre_tokenizer(list[i], key + ".pretokenizers[" + std::to_string(i) + "]", steps);
    return;
  } else if (type == "BertPreTokenizer") {
    only_keys(j, key, {"type"});
  } else if (type == "WhitespaceSplit") {
    only_keys(j, key, {"type"});
    step.kind = PreTokenizerStep::kWhitespaceSplit;
  } else if (type == "ByteLevel") {
    only_keys(j, key, {"type", "add_prefix_space", "trim_offsets", "use_regex"});
    step.kind = PreTokenizerStep::kByteLevel;
    step.add_prefix_space = need(j, key, "add_prefix_space", json::value_t::boolean).get<bool>();
    need(j, key, "trim_offsets", json::value_t::boolean);  // offsets only
    if (j.contains("use_regex")) step.use_regex = need(j, key, "use_regex", json::value_t::boolean).get<bool>();
  } else if (type == "Metaspace") {
    only_keys(j, key, {"type", "replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep"});
    step.kind = PreTokenizerStep::kMetaspace;
    const std::u32string r = decode_utf8(need(j, key, "replacement", json::value_t::string).get<std::string>());
    KG_CHECK(r.size() == 1, ConfigError, where, ": ", key, ".replacement: expected one character, got ", j["replacement"].dump());
    step.replacement = r[0];
    const std::string scheme =
        j.contains("prepend_scheme") ? need(j, key, "prepend_scheme", json::value_t::string).get<std::string>() : "always";
    if (scheme == "always")
      step.prepend = PreTokenizerStep::kAlways;
    else if (scheme == "first")
      step.prepend = PreTokenizerStep::kFirst;
    else if (scheme == "never")
      step.prepend = PreTokenizerStep::kNever;
    else
      unsupported(key + ".prepend_scheme", scheme, "always, first, never");
    if (j.contains("add_prefix_space") && !need(j, key, "add_prefix_space", json::value_t::boolean).get<bool>()) {
      KG_CHECK(step.prepend == PreTokenizerStep::kNever || !j.contains("prepend_scheme"), ConfigError, where, ": ",
               key, ": add_prefix_space false does not match prepend_scheme \"", scheme, "\"");
      step.prepend = PreTokenizerStep::kNever;
    }
    if (j.contains("split")) step.split = need(j, key, "split", json::value_t::boolean).get<bool>();
  } else {
    unsupported(key + ".type", type, "BertPreTokenizer, ByteLevel, Metaspace, WhitespaceSplit and a Sequence of them");
  }
  steps.push_back(step);
}

std::unordered_map<std::string, int64_t> TokenizerReader::vocab_map(const json& j, const std::string& key) const {
  const json& v = need(j, key, "vocab", json::value_t::object);
  std::unordered_map<std::string, int64_t> vocab;
  vocab.reserve(v.size());
  for (const auto& kv : v.items()) {
    KG_CHECK(kv.value().is_number_integer() && kv.value().get<int64_t>() >= 0, ConfigError, where,
             ": model.vocab[\"", kv.key(), "\"]: expected a non-negative integer id, got ", kv.value().dump());
    vocab.emplace(kv.key(), kv.value().get<int64_t>());
  }
  return vocab;
}

// A string or null (tokenizers' Option<String>).

// A string or null (tokenizers' Option<String>).
std::string TokenizerReader::optional_string(const json& j, const std::string& key, const char* name) const {
  if (!j.contains(name) || j[name].is_null()) return "";
  return need(j, key, name, json::value_t::string).get<std::string>();
}

bool TokenizerReader::optional_bool(const json& j, const std::string& key, const char* name, bool fallback) const {
  if (!j.contains(name) || j[name].is_null()) return fallback;
  return need(j, key, name, json::value_t::boolean).get<bool>();
}

std::shared_ptr<const TokenModel> TokenizerReader::model(const json& j) const {
  const std::string key = "model";
  const std::string type = type_of(j, key);
  if (type == "WordPiece") {
    only_keys(j, key, {"type", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab"});
    WordPieceOptions o;
    o.unk_token = need(j, key, "unk_token", json::value_t::string).get<std::string>();
    o.continuing_subword_prefix = need(j, key, "continuing_subword_prefix", json::value_t::string).get<std::string>();
    o.max_input_chars_per_word = need(j, key, "max_input_chars_per_word", json::value_t::number_unsigned).get<size_t>();
    return std::make_shared<const WordPiece>(vocab_map(j, key), std::move(o), where);
  }
  if (type == "BPE") {
    only_keys(j, key, {"type", "dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
                       "byte_fallback", "ignore_merges", "vocab", "merges"});
    if (j.contains("dropout") && !j["dropout"].is_null() && !(j["dropout"].is_number() && j["dropout"].get<double>() == 0))
      unsupported("model.dropout", j["dropout"], "null or 0: kgtrain encodes deterministically");
    BpeOptions o;
    o.unk_token = optional_string(j, key, "unk_token");
    o.continuing_subword_prefix = optional_string(j, key, "continuing_subword_prefix");
    o.end_of_word_suffix = optional_string(j, key, "end_of_word_suffix");
    o.fuse_unk = optional_bool(j, key, "fuse_unk", false);
    o.byte_fallback = optional_bool(j, key, "byte_fallback", false);
    o.ignore_merges = optional_bool(j, key, "ignore_merges", false);
    const json& m = need(j, key, "merges", json::value_t::array);
    std::vector<std::pair<std::string, std::string>> merges;
    merges.reserve(m.size());
    for (size_t i = 0; i < m.size(); ++i) {
      const json& e = m[i];
      if (e.is_string()) {  // "a b", the older form; "#version" lines are skipped and not counted
        const std::string line = e.get<std::string>();
        if (line.rfind("#version", 0) == 0) continue;
        const size_t sp = line.find(' ');
        KG_CHECK(sp != std::string::npos && line.find(' ', sp + 1) == std::string::npos, ConfigError, where,
                 ": model.merges[", i, "]: expected \"a b\" (two tokens, one space), got ", e.dump());
        merges.emplace_back(line.substr(0, sp), line.substr(sp + 1));
      } else {
        KG_CHECK(e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string(), ConfigError, where,
                 ": model.merges[", i, "]: expected \"a b\" or [\"a\", \"b\"], got ", e.dump());
        merges.emplace_back(e[0].get<std::string>(), e[1].get<std::string>());
      }
    }
    return std::make_shared<const Bpe>(vocab_map(j, key), merges, std::move(o), where);
  }
  if (type == "Unigram") {
    only_keys(j, key, {"type", "unk_id", "vocab", "byte_fallback"});
    const json& v = need(j, key, "vocab", json::value_t::array);
    std::vector<std::pair<std::string, double>> vocab;
    vocab.reserve(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const json& e = v[i];
      KG_CHECK(e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_number(), ConfigError, where,
               ": model.vocab[", i, "]: expected [piece, score], got ", e.dump());
      vocab.emplace_back(e[0].get<std::string>(), e[1].get<double>());
    }
    int64_t unk_id = -1;
    if (j.contains("unk_id") && !j["unk_id"].is_null())
      unk_id = need(j, key, "unk_id", json::value_t::number_unsigned).get<int64_t>();
    return std::make_shared<const Unigram>(std::move(vocab), unk_id, optional_bool(j, key, "byte_fallback", false),
                                           where);
  }
  unsupported("model.type", type, "WordPiece, BPE, Unigram");
}

}  // namespace kg::text
