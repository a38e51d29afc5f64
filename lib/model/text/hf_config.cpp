#include "model/text/hf_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace kg::model::text {

HfConfig HfConfig::read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot read the encoder's config.json (a Hugging Face model folder has one)");
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

HfConfig HfConfig::parse(const std::string& json_text, const std::string& path) {
  HfConfig c;
  c.path_ = path;
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) throw ConfigError(path + ": not a JSON object");
  c.json_ = std::make_shared<const nlohmann::json>(std::move(j));
  if (!c.has("model_type")) {
    std::string arch = c.has("architectures") ? " (architectures: " + c.dump("architectures") + ")" : "";
    throw ConfigError(path + ": no \"model_type\"" + arch + "; kgtrain builds the encoder from it");
  }
  c.model_type_ = c.get_string("model_type");
  return c;
}

const nlohmann::json* HfConfig::find(const std::string& key) const {
  auto it = json_->find(key);
  if (it == json_->end() || it->is_null()) return nullptr;
  return &*it;
}

bool HfConfig::has(const std::string& key) const { return find(key) != nullptr; }

std::string HfConfig::dump(const std::string& key) const {
  const auto* v = find(key);
  return v ? v->dump() : "";
}

void HfConfig::fail(const std::string& key, const std::string& what) const {
  throw ConfigError(path_ + ": " + key + " " + what);
}

namespace {
template <class T, class Check>
T hf_get(const HfConfig& c, const nlohmann::json* v, const std::string& key, const std::optional<T>& fallback,
         Check is_type, const char* type_name) {
  if (!v) {
    if (fallback) return *fallback;
    c.fail(key, "is missing (" + std::string(type_name) + " expected)");
  }
  if (!is_type(*v)) c.fail(key, "expected " + std::string(type_name) + ", got " + v->dump());
  return v->get<T>();
}
}  // namespace

int64_t HfConfig::get_int(const std::string& key, std::optional<int64_t> fallback) const {
  const auto* v = find(key);
  // 1.0 is accepted where an integer is meant (configs written by hand).
  if (v && v->is_number_float() && std::floor(v->get<double>()) == v->get<double>())
    return static_cast<int64_t>(v->get<double>());
  return hf_get<int64_t>(*this, v, key, fallback, [](const nlohmann::json& x) { return x.is_number_integer(); },
                         "an integer");
}

double HfConfig::get_double(const std::string& key, std::optional<double> fallback) const {
  return hf_get<double>(*this, find(key), key, fallback, [](const nlohmann::json& x) { return x.is_number(); },
                        "a number");
}

bool HfConfig::get_bool(const std::string& key, std::optional<bool> fallback) const {
  return hf_get<bool>(*this, find(key), key, fallback, [](const nlohmann::json& x) { return x.is_boolean(); },
                      "true or false");
}

std::string HfConfig::get_string(const std::string& key, std::optional<std::string> fallback) const {
  return hf_get<std::string>(*this, find(key), key, fallback, [](const nlohmann::json& x) { return x.is_string(); },
                             "a string");
}

std::vector<std::string> HfConfig::get_strings(const std::string& key, std::vector<std::string> fallback) const {
  const auto* v = find(key);
  if (!v) return fallback;
  std::vector<std::string> raw;
  if (v->is_string()) {
    std::stringstream ss(v->get<std::string>());
    for (std::string part; std::getline(ss, part, '|');) raw.push_back(part);
  } else if (v->is_array()) {
    for (const auto& x : *v) {
      if (!x.is_string()) fail(key, "expected a list of strings, got " + v->dump());
      raw.push_back(x.get<std::string>());
    }
  } else {
    fail(key, "expected a list of strings or \"a|b\", got " + v->dump());
  }
  std::vector<std::string> out;
  for (auto s : raw) {
    s.erase(0, s.find_first_not_of(" \t"));
    s.erase(s.find_last_not_of(" \t") + 1);
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (!s.empty()) out.push_back(s);
  }
  return out;
}

namespace {
const nlohmann::json* hf_walk(const nlohmann::json& root, const std::vector<std::string>& path) {
  const nlohmann::json* v = &root;
  for (const auto& k : path) {
    if (!v->is_object()) return nullptr;
    auto it = v->find(k);
    if (it == v->end() || it->is_null()) return nullptr;
    v = &*it;
  }
  return v;
}
std::string hf_dotted(const std::vector<std::string>& path) {
  std::string s;
  for (const auto& k : path) s += (s.empty() ? "" : ".") + k;
  return s;
}
}  // namespace

std::optional<double> HfConfig::get_nested_double(const std::vector<std::string>& path) const {
  const auto* v = hf_walk(*json_, path);
  if (!v) return std::nullopt;
  if (!v->is_number()) fail(hf_dotted(path), "expected a number, got " + v->dump());
  return v->get<double>();
}

std::optional<std::string> HfConfig::get_nested_string(const std::vector<std::string>& path) const {
  const auto* v = hf_walk(*json_, path);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(hf_dotted(path), "expected a string, got " + v->dump());
  return v->get<std::string>();
}

std::string HfConfig::get_choice(const std::string& key, const std::vector<std::string>& allowed,
                                 std::optional<std::string> fallback) const {
  std::string v = get_string(key, std::move(fallback));
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end()) return v;
  std::string known;
  for (const auto& a : allowed) known += (known.empty() ? "" : ", ") + a;
  fail(key, "\"" + v + "\" is not implemented in kgtrain (known: " + known + ")");
}

namespace {
const std::map<std::string, HfActivation>& hf_activations() {
  static const std::map<std::string, HfActivation> m{
      {"gelu", HfActivation::kGelu},           {"gelu_new", HfActivation::kGeluNew},
      {"gelu_pytorch_tanh", HfActivation::kGeluPytorchTanh}, {"gelu_fast", HfActivation::kGeluFast},
      {"quick_gelu", HfActivation::kQuickGelu}, {"relu", HfActivation::kRelu},
      {"silu", HfActivation::kSilu},           {"swish", HfActivation::kSilu},
      {"tanh", HfActivation::kTanh}};
  return m;
}
}  // namespace

HfActivation read_activation(const HfConfig& cfg, const std::string& key, const std::string& fallback) {
  std::vector<std::string> names;
  for (const auto& [name, act] : hf_activations()) names.push_back(name);
  return hf_activations().at(cfg.get_choice(key, names, fallback));
}

at::Tensor apply_activation(HfActivation act, const at::Tensor& x) {
  switch (act) {
    case HfActivation::kGelu: return at::gelu(x);
    case HfActivation::kGeluPytorchTanh: return at::gelu(x, "tanh");
    case HfActivation::kGeluNew:  // transformers' NewGELUActivation, term for term
      return 0.5 * x * (1.0 + at::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * at::pow(x, 3.0))));
    case HfActivation::kGeluFast:
      return 0.5 * x * (1.0 + at::tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)));
    case HfActivation::kQuickGelu: return x * at::sigmoid(1.702 * x);
    case HfActivation::kRelu: return at::relu(x);
    case HfActivation::kSilu: return at::silu(x);
    case HfActivation::kTanh: return at::tanh(x);
  }
  return x;
}

}  // namespace kg::model::text
