// tokenizer.json's reader, shared by tokenizer_json.cpp (added tokens, post-processor, truncation, the file) and
// tokenizer_components.cpp (normalizer, pre-tokenizer, model). Private to lib/text.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
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

  void normalizer(const json& j, const std::string& key, std::vector<NormalizerStep>& steps) const;
  void pre_tokenizer(const json& j, const std::string& key, std::vector<PreTokenizerStep>& steps) const;
  std::unordered_map<std::string, int64_t> vocab_map(const json& j, const std::string& key) const;
  // A string or null (tokenizers' Option<String>).
  std::string optional_string(const json& j, const std::string& key, const char* name) const;
  bool optional_bool(const json& j, const std::string& key, const char* name, bool fallback) const;
  std::shared_ptr<const TokenModel> model(const json& j) const;
  std::vector<AddedToken> added_tokens(const json& j) const;
  std::vector<TemplatePiece> template_pieces(const json& j, const std::string& key, const json& special) const;
  void post_processor(const json& j, Tokenizer& t) const;
  std::optional<TruncationOptions> truncation(const json& j) const;
};

}  // namespace kg::text
