// Reading tokenizer.json as tokenizers serializes it (tokenizers/src/tokenizer/serialization.rs and each
// component's serde form). What kgtrain does not implement is refused by name.
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "text/tokenizer.h"

namespace kg::text {

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
    } else {
      unsupported(key + ".type", type, "BertNormalizer, Lowercase, NFD and a Sequence of them");
    }
    steps.push_back(step);
  }

  bool pre_tokenizer(const json& j, const std::string& key) const {
    if (j.is_null()) return false;
    const std::string type = type_of(j, key);
    if (type != "BertPreTokenizer") unsupported(key + ".type", type, "BertPreTokenizer");
    only_keys(j, key, {"type"});
    return true;
  }

  std::shared_ptr<const WordPiece> model(const json& j) const {
    const std::string key = "model";
    const std::string type = type_of(j, key);
    if (type != "WordPiece") unsupported("model.type", type, "WordPiece");
    only_keys(j, key, {"type", "unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab"});
    WordPieceOptions o;
    o.unk_token = need(j, key, "unk_token", json::value_t::string).get<std::string>();
    o.continuing_subword_prefix = need(j, key, "continuing_subword_prefix", json::value_t::string).get<std::string>();
    o.max_input_chars_per_word = need(j, key, "max_input_chars_per_word", json::value_t::number_unsigned).get<size_t>();
    const json& v = need(j, key, "vocab", json::value_t::object);
    std::unordered_map<std::string, int64_t> vocab;
    vocab.reserve(v.size());
    for (const auto& kv : v.items()) {
      KG_CHECK(kv.value().is_number_integer() && kv.value().get<int64_t>() >= 0, ConfigError, where,
               ": model.vocab[\"", kv.key(), "\"]: expected a non-negative integer id, got ", kv.value().dump());
      vocab.emplace(kv.key(), kv.value().get<int64_t>());
    }
    return std::make_shared<const WordPiece>(std::move(vocab), std::move(o), where);
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
      for (const char* flag : {"single_word", "lstrip", "rstrip", "normalized"}) {
        if (!t.contains(flag)) continue;
        const json& f = need(t, key, flag, json::value_t::boolean);
        if (f.get<bool>()) unsupported(key + "." + flag, f, std::string(flag) + " = false only");
      }
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
    const std::string type = type_of(j, key);
    if (type == "TemplateProcessing") {
      only_keys(j, key, {"type", "single", "pair", "special_tokens"});
      const json& special = need(j, key, "special_tokens", json::value_t::object);
      t.single_ = template_pieces(need(j, key, "single", json::value_t::array), key + ".single", special);
      t.pair_ = template_pieces(need(j, key, "pair", json::value_t::array), key + ".pair", special);
    } else if (type == "BertProcessing") {
      only_keys(j, key, {"type", "sep", "cls"});
      auto token_id = [&](const char* name) {
        const json& v = need(j, key, name, json::value_t::array);
        KG_CHECK(v.size() == 2 && v[0].is_string() && v[1].is_number_integer() && v[1].get<int64_t>() >= 0,
                 ConfigError, where, ": post_processor.", name, ": expected [token, id], got ", v.dump());
        return v[1].get<int64_t>();
      };
      const int64_t cls = token_id("cls"), sep = token_id("sep");
      t.single_ = {TemplatePiece{-1, {cls}, 0}, TemplatePiece{0, {}, 0}, TemplatePiece{-1, {sep}, 0}};
      t.pair_ = {TemplatePiece{-1, {cls}, 0}, TemplatePiece{0, {}, 0}, TemplatePiece{-1, {sep}, 0},
                 TemplatePiece{1, {}, 1}, TemplatePiece{-1, {sep}, 1}};
    } else {
      unsupported(key + ".type", type, "TemplateProcessing and BertProcessing");
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
  t.bert_pre_tokenizer_ = r.pre_tokenizer(get("pre_tokenizer"), "pre_tokenizer");
  t.added_ = r.added_tokens(get("added_tokens"));
  for (const auto& a : t.added_) t.added_first_byte_[static_cast<unsigned char>(a.content[0])] = true;
  r.post_processor(get("post_processor"), t);
  t.truncation_ = r.truncation(get("truncation"));
  return t;
}

Tokenizer Tokenizer::from_file(const std::string& path) { return from_json(read_file(path), path); }

}  // namespace kg::text
