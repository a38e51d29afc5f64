// Reading tokenizer.json as tokenizers serializes it (tokenizers/src/tokenizer/serialization.rs and each
// component's serde form): the file, added tokens, post-processor and truncation here, the normalizer,
// pre-tokenizer and model in tokenizer_components.cpp. What kgtrain does not implement is refused by name. Also the
// special ids a read tokenizer ends up with (masked-language modelling never masks them).
#include <algorithm>

#include "core/fs.h"
#include "text/tokenizer_reader.h"
#include "text/unicode.h"

namespace kg::text {

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

std::vector<AddedToken> TokenizerReader::added_tokens(const json& j) const {
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

std::vector<TemplatePiece> TokenizerReader::template_pieces(const json& j, const std::string& key, const json& special) const {
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

void TokenizerReader::post_processor(const json& j, Tokenizer& t) const {
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

std::optional<TruncationOptions> TokenizerReader::truncation(const json& j) const {
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

std::vector<int64_t> Tokenizer::special_ids() const {
  std::vector<int64_t> out;
  for (const auto* list : {&added_, &added_norm_})
    for (const auto& a : *list)
      if (a.id >= 0) out.push_back(a.id);
  for (const auto* pieces : {&single_, &pair_})
    for (const auto& p : *pieces)
      if (p.sequence < 0) out.insert(out.end(), p.ids.begin(), p.ids.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace kg::text
