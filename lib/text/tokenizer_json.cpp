// Reading tokenizer.json as tokenizers serializes it (tokenizers/src/tokenizer/serialization.rs and each
// component's serde form). What kgtrain does not implement is refused by name.
#include <optional>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "text/bpe.h"
#include "text/tokenizer.h"
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

size_t json_nesting_depth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

using json = nlohmann::json;

struct TokenizerReader {
  const std::string& where;

  [[noreturn]] void unsupported(const std::string& key, const json& value, const std::string& supported) const {
    throw ConfigError(where + ": " + key + ": " + value.dump() + " is not supported (kgtrain reads " + supported +
                      ")");
  }

  const json& need(const json& j, const std::string& key, const char* name, json::value_t type) const {
    KG_CHECK(j.is_object() && j.contains(name), ConfigError, where, ": ", key, ": missing key \"", name, "\"");
    const json& v = j[name];
    const bool ok = type == json::value_t::number_unsigned ? v.is_number_integer() && v.get<int64_t>() >= 0
                    : type == json::value_t::boolean       ? v.is_boolean()
                    : type == json::value_t::string        ? v.is_string()
                    : type == json::value_t::object        ? v.is_object()
                    : type == json::value_t::array         ? v.is_array()
                                                           : true;
    KG_CHECK(ok, ConfigError, where, ": ", key, ".", name, ": expected ",
             type == json::value_t::number_unsigned ? "a non-negative integer" : json(type).type_name(), ", got ",
             v.dump());
    return v;
  }

  std::string type_of(const json& j, const std::string& key) const {
    KG_CHECK(j.is_object(), ConfigError, where, ": ", key, ": expected an object or null, got ", j.dump());
    return need(j, key, "type", json::value_t::string).get<std::string>();
  }

  // Keys of `j` other than `known` are refused: each changes what tokenizers does.
  void only_keys(const json& j, const std::string& key, const std::vector<std::string>& known) const {
    for (const auto& kv : j.items()) {
      bool ok = false;
      for (const auto& k : known) ok = ok || k == kv.key();
      KG_CHECK(ok, ConfigError, where, ": ", key, ".", kv.key(), " (", kv.value().dump(),
               ") is not supported (known keys: ", join(known, ", "), ")");
    }
  }

  void normalizer(const json& j, const std::string& key, std::vector<NormalizerStep>& steps) const {
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

  void pre_tokenizer(const json& j, const std::string& key, std::vector<PreTokenizerStep>& steps) const {
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

  std::unordered_map<std::string, int64_t> vocab_map(const json& j, const std::string& key) const {
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
  std::string optional_string(const json& j, const std::string& key, const char* name) const {
    if (!j.contains(name) || j[name].is_null()) return "";
    return need(j, key, name, json::value_t::string).get<std::string>();
  }

  bool optional_bool(const json& j, const std::string& key, const char* name, bool fallback) const {
    if (!j.contains(name) || j[name].is_null()) return fallback;
    return need(j, key, name, json::value_t::boolean).get<bool>();
  }

  std::shared_ptr<const TokenModel> model(const json& j) const {
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

  std::vector<AddedToken> added_tokens(const json& j) const {
    std::vector<AddedToken> out;
    if (j.is_null()) return out;
    KG_CHECK(j.is_array(), ConfigError, where, ": added_tokens: expected a list, got ", j.type_name());
    for (size_t i = 0; i < j.size(); ++i) {
      const std::string key = "added_tokens[" + std::to_string(i) + "]";
      const json& t = j[i];
      KG_CHECK(t.is_object(), ConfigError, where, ": ", key, ": expected an object, got ", t.dump());
      only_keys(t, key, {"id", "content", "single_word", "lstrip", "rstrip", "normalized", "special"});
      AddedToken a;
      a.id = need(t, key, "id", json::value_t::number_unsigned).get<int64_t>();
      a.content = need(t, key, "content", json::value_t::string).get<std::string>();
      KG_CHECK(!a.content.empty(), ConfigError, where, ": ", key, ".content: empty");
      if (t.contains("single_word") && need(t, key, "single_word", json::value_t::boolean).get<bool>())
        unsupported(key + ".single_word", true, "single_word = false only");
      a.lstrip = optional_bool(t, key, "lstrip", false);
      a.rstrip = optional_bool(t, key, "rstrip", false);
      a.normalized = optional_bool(t, key, "normalized", !optional_bool(t, key, "special", false));
      a.pattern = decode_utf8(a.content, where + ": " + key + ".content");
      out.push_back(std::move(a));
    }
    return out;
  }

  std::vector<TemplatePiece> template_pieces(const json& j, const std::string& key, const json& special) const {
    KG_CHECK(j.is_array(), ConfigError, where, ": ", key, ": expected a list, got ", j.dump());
    std::vector<TemplatePiece> out;
    for (size_t i = 0; i < j.size(); ++i) {
      const std::string k = key + "[" + std::to_string(i) + "]";
      const json& p = j[i];
      KG_CHECK(p.is_object() && p.size() == 1, ConfigError, where, ": ", k,
               ": expected {\"Sequence\": ...} or {\"SpecialToken\": ...}, got ", p.dump());
      TemplatePiece piece;
      if (p.contains("Sequence")) {
        const json& s = p["Sequence"];
        const std::string id = need(s, k + ".Sequence", "id", json::value_t::string).get<std::string>();
        KG_CHECK(id == "A" || id == "B", ConfigError, where, ": ", k, ".Sequence.id: expected \"A\" or \"B\", got \"",
                 id, "\"");
        piece.sequence = id == "A" ? 0 : 1;
        piece.type_id = need(s, k + ".Sequence", "type_id", json::value_t::number_unsigned).get<int64_t>();
      } else if (p.contains("SpecialToken")) {
        const json& s = p["SpecialToken"];
        const std::string id = need(s, k + ".SpecialToken", "id", json::value_t::string).get<std::string>();
        piece.type_id = need(s, k + ".SpecialToken", "type_id", json::value_t::number_unsigned).get<int64_t>();
        KG_CHECK(special.is_object() && special.contains(id), ConfigError, where, ": ", k, ".SpecialToken.id: \"", id,
                 "\" is not in post_processor.special_tokens");
        const json& ids = need(special[id], "post_processor.special_tokens." + id, "ids", json::value_t::array);
        for (const auto& x : ids) {
          KG_CHECK(x.is_number_integer() && x.get<int64_t>() >= 0, ConfigError, where,
                   ": post_processor.special_tokens.", id, ".ids: expected non-negative integers, got ", ids.dump());
          piece.ids.push_back(x.get<int64_t>());
        }
      } else {
        unsupported(k, p, "Sequence and SpecialToken pieces");
      }
      out.push_back(std::move(piece));
    }
    return out;
  }

  void post_processor(const json& j, Tokenizer& t) const {
    const std::string key = "post_processor";
    if (j.is_null()) {  // tokenizers' default_process: the sequences as they are, the second with type id 1
      t.single_ = {TemplatePiece{0, {}, 0}};
      t.pair_ = {TemplatePiece{0, {}, 0}, TemplatePiece{1, {}, 1}};
      return;
    }
    std::string type = type_of(j, key);
    const json* pj = &j;
    if (type == "Sequence") {  // ByteLevel steps (offsets only) around at most one processor that adds tokens
      only_keys(j, key, {"type", "processors"});
      const json& list = need(j, key, "processors", json::value_t::array);
      const json* chosen = nullptr;
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string k = key + ".processors[" + std::to_string(i) + "]";
        const std::string t = type_of(list[i], k);
        if (t == "ByteLevel") continue;
        KG_CHECK(!chosen, ConfigError, where, ": ", key, ": more than one processor other than ByteLevel is not supported");
        chosen = &list[i];
      }
      if (!chosen) {
        post_processor(json(nullptr), t);
        return;
      }
      pj = chosen;
      type = type_of(*pj, key);
    }
    const json& jj = *pj;
    if (type == "ByteLevel") {  // offsets only: the default processing
      only_keys(jj, key, {"type", "add_prefix_space", "trim_offsets", "use_regex"});
      post_processor(json(nullptr), t);
      return;
    }
    if (type == "RobertaProcessing") {  // <s> A </s> and <s> A </s></s> B </s>, every type id 0
      only_keys(jj, key, {"type", "sep", "cls", "trim_offsets", "add_prefix_space"});
      auto token_id = [&](const char* name) {
        const json& v = need(jj, key, name, json::value_t::array);
        KG_CHECK(v.size() == 2 && v[0].is_string() && v[1].is_number_integer() && v[1].get<int64_t>() >= 0,
                 ConfigError, where, ": post_processor.", name, ": expected [token, id], got ", v.dump());
        return v[1].get<int64_t>();
      };
      const int64_t cls = token_id("cls"), sep = token_id("sep");
      t.single_ = {TemplatePiece{-1, {cls}, 0}, TemplatePiece{0, {}, 0}, TemplatePiece{-1, {sep}, 0}};
      t.pair_ = {TemplatePiece{-1, {cls}, 0}, TemplatePiece{0, {}, 0}, TemplatePiece{-1, {sep, sep}, 0},
                 TemplatePiece{1, {}, 0}, TemplatePiece{-1, {sep}, 0}};
      return;
    }
    if (type == "TemplateProcessing") {
      only_keys(jj, key, {"type", "single", "pair", "special_tokens"});
      const json& special = need(jj, key, "special_tokens", json::value_t::object);
      t.single_ = template_pieces(need(jj, key, "single", json::value_t::array), key + ".single", special);
      t.pair_ = template_pieces(need(jj, key, "pair", json::value_t::array), key + ".pair", special);
    } else if (type == "BertProcessing") {
      only_keys(jj, key, {"type", "sep", "cls"});
      auto token_id = [&](const char* name) {
        const json& v = need(jj, key, name, json::value_t::array);
        KG_CHECK(v.size() == 2 && v[0].is_string() && v[1].is_number_integer() && v[1].get<int64_t>() >= 0,
                 ConfigError, where, ": post_processor.", name, ": expected [token, id], got ", v.dump());
        return v[1].get<int64_t>();
      };
      const int64_t cls = token_id("cls"), sep = token_id("sep");
      t.single_ = {TemplatePiece{-1, {cls}, 0}, TemplatePiece{0, {}, 0}, TemplatePiece{-1, {sep}, 0}};
      t.pair_ = {TemplatePiece{-1, {cls}, 0}, TemplatePiece{0, {}, 0}, TemplatePiece{-1, {sep}, 0},
                 TemplatePiece{1, {}, 1}, TemplatePiece{-1, {sep}, 1}};
    } else {
      unsupported(key + ".type", type, "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel");
    }
    // As tokenizers checks a template: the single one uses A alone, the pair one A and B.
    auto uses = [](const std::vector<TemplatePiece>& t, int seq) {
      size_t n = 0;
      for (const auto& p : t) n += p.sequence == seq;
      return n;
    };
    KG_CHECK(uses(t.single_, 0) == 1 && uses(t.single_, 1) == 0, ConfigError, where,
             ": post_processor.single: expected the sequence A once and no B");
    KG_CHECK(uses(t.pair_, 0) == 1 && uses(t.pair_, 1) == 1, ConfigError, where,
             ": post_processor.pair: expected the sequences A and B once each");
  }

  std::optional<TruncationOptions> truncation(const json& j) const {
    if (j.is_null()) return std::nullopt;
    const std::string key = "truncation";
    KG_CHECK(j.is_object(), ConfigError, where, ": truncation: expected an object or null, got ", j.dump());
    only_keys(j, key, {"direction", "max_length", "strategy", "stride"});
    TruncationOptions o;
    o.max_length = need(j, key, "max_length", json::value_t::number_unsigned).get<size_t>();
    const std::string s = need(j, key, "strategy", json::value_t::string).get<std::string>();
    if (s == "LongestFirst")
      o.strategy = TruncationOptions::kLongestFirst;
    else if (s == "OnlyFirst")
      o.strategy = TruncationOptions::kOnlyFirst;
    else if (s == "OnlySecond")
      o.strategy = TruncationOptions::kOnlySecond;
    else
      unsupported("truncation.strategy", s, "LongestFirst, OnlyFirst, OnlySecond");
    if (j.contains("direction")) {
      const std::string d = need(j, key, "direction", json::value_t::string).get<std::string>();
      if (d != "Right" && d != "Left") unsupported("truncation.direction", d, "Right, Left");
      o.direction = d == "Left" ? TruncationOptions::kLeft : TruncationOptions::kRight;
    }
    // stride only shapes the overflowing encodings, which kgtrain does not make: the ids are the same.
    if (j.contains("stride")) need(j, key, "stride", json::value_t::number_unsigned);
    return o;
  }
};

TruncationOptions::Strategy truncation_strategy(const std::string& name, const std::string& key) {
  if (name == "longest_first") return TruncationOptions::kLongestFirst;
  if (name == "only_first") return TruncationOptions::kOnlyFirst;
  if (name == "only_second") return TruncationOptions::kOnlySecond;
  throw ConfigError(key + ": unknown truncation strategy \"" + name +
                    "\" (known: longest_first, only_first, only_second)");
}

Tokenizer Tokenizer::from_json(const std::string& json_text, const std::string& where) {
  // nlohmann's json frees nested values recursively: a hostile file nested 100,000 deep would overflow the stack.
  const size_t depth = json_nesting_depth(json_text);
  KG_CHECK(depth <= kMaxJsonDepth, ConfigError, where, ": JSON nested ", depth, " deep (a tokenizer.json is under 10; ",
           "kgtrain reads up to ", kMaxJsonDepth, ")");
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    throw ConfigError(where + ": not JSON (" + e.what() + ")");
  }
  KG_CHECK(j.is_object(), ConfigError, where, ": expected a JSON object, got ", j.type_name());
  const TokenizerReader r{where};
  r.only_keys(j, "(top level)", {"version", "truncation", "padding", "added_tokens", "normalizer", "pre_tokenizer",
                                 "model", "post_processor", "decoder"});
  Tokenizer t;
  t.where_ = where;
  KG_CHECK(j.contains("model"), ConfigError, where, ": missing key \"model\"");
  t.model_ = r.model(j["model"]);
  const json null;
  auto get = [&](const char* k) -> const json& { return j.contains(k) ? j[k] : null; };
  if (!get("padding").is_null()) r.unsupported("padding", get("padding"), "null: kgtrain pads per batch");
  r.normalizer(get("normalizer"), "normalizer", t.normalizer_);
  r.pre_tokenizer(get("pre_tokenizer"), "pre_tokenizer", t.pre_tokenizer_);
  for (auto& a : r.added_tokens(get("added_tokens"))) {
    if (a.normalized) {
      normalize(t.normalizer_, a.pattern);  // matched as the normalizer gives it
      if (a.pattern.empty()) continue;
      t.added_norm_.push_back(std::move(a));
    } else {
      t.added_.push_back(std::move(a));
    }
  }
  t.finish();
  r.post_processor(get("post_processor"), t);
  t.truncation_ = r.truncation(get("truncation"));
  return t;
}

Tokenizer Tokenizer::from_file(const std::string& path) { return from_json(read_file(path), path); }

}  // namespace kg::text
