// A Hugging Face config.json read into typed values: each family's file (bert.cpp, deberta_v2.cpp, ...) reads the
// keys its architecture needs through HfConfig, whose errors (ConfigError, exit 2) name the file and the key:
//   "enc/config.json: hidden_act \"gelu_10\" is not implemented (known: gelu, gelu_new, ...)".
// Keys a family does not read are ignored, as transformers ignores them; a JSON null is an absent key.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json_fwd.hpp>

namespace kg::model::text {

class HfConfig {
 public:
  // `path` is the config.json file; ConfigError naming it for a missing file, bad JSON or no "model_type".
  static HfConfig read(const std::string& path);
  static HfConfig parse(const std::string& json_text, const std::string& path);

  const std::string& path() const { return path_; }
  const std::string& model_type() const { return model_type_; }
  bool has(const std::string& key) const;  // present and not null

  // A missing key takes `fallback`; without one it is an error naming the key. A value of another JSON type is an
  // error naming key, value and the expected type.
  int64_t get_int(const std::string& key, std::optional<int64_t> fallback = std::nullopt) const;
  double get_double(const std::string& key, std::optional<double> fallback = std::nullopt) const;
  bool get_bool(const std::string& key, std::optional<bool> fallback = std::nullopt) const;
  std::string get_string(const std::string& key, std::optional<std::string> fallback = std::nullopt) const;
  // A list of strings, or one string split at '|' (DeBERTa's "p2c|c2p"), lower-cased and trimmed.
  std::vector<std::string> get_strings(const std::string& key, std::vector<std::string> fallback = {}) const;
  // A value inside an object: rope_parameters.full_attention.rope_theta is ({"rope_parameters", "full_attention",
  // "rope_theta"}); absent anywhere on the way: `fallback` (std::nullopt: absent).
  std::optional<double> get_nested_double(const std::vector<std::string>& path) const;
  std::optional<std::string> get_nested_string(const std::vector<std::string>& path) const;
  // A string among `allowed` ("none" for norm_rel_ebd, ...): an error lists them.
  std::string get_choice(const std::string& key, const std::vector<std::string>& allowed,
                         std::optional<std::string> fallback = std::nullopt) const;

  // ConfigError "<path>: <key> <what>" (a value kgtrain cannot build, a size that does not fit another).
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;
  // The raw value of `key` as compact JSON, for messages ("" when absent).
  std::string dump(const std::string& key) const;

 private:
  HfConfig() = default;
  const nlohmann::json* find(const std::string& key) const;
  std::string path_;
  std::string model_type_;
  std::shared_ptr<const nlohmann::json> json_;
};

// The activations transformers' ACT2FN names that the encoders use, computed as transformers computes them.
enum class HfActivation { kGelu, kGeluNew, kGeluPytorchTanh, kGeluFast, kQuickGelu, kRelu, kSilu, kTanh };
HfActivation read_activation(const HfConfig& cfg, const std::string& key, const std::string& fallback);
at::Tensor apply_activation(HfActivation act, const at::Tensor& x);

}  // namespace kg::model::text
