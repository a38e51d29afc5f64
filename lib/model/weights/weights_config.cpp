#include "model/weights/weights_config.h"

#include <algorithm>
#include <filesystem>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "model/model.h"

namespace fs = std::filesystem;

namespace kg::model {
namespace {

// What timm's save_pretrained writes at the top level; kgtrain reads the first two.
const std::vector<std::string> kKnownKeys{"architecture",   "num_classes",  "num_features", "global_pool",
                                          "pretrained_cfg", "model_args",   "label_names",  "label_descriptions",
                                          "model_type",     "architectures"};

// A list of `n` (0 = any count > 0) positive numbers at pretrained_cfg.<key>, or ConfigError naming it.
template <class T>
std::vector<T> numbers(const nlohmann::json& cfg, const char* key, size_t n, const std::string& path) {
  if (!cfg.contains(key) || cfg[key].is_null()) return {};
  const auto& v = cfg[key];
  bool ok = v.is_array() && !v.empty() && (n == 0 || v.size() == n);
  for (size_t i = 0; ok && i < v.size(); ++i)
    ok = (std::is_integral<T>::value ? v[i].is_number_integer() : v[i].is_number()) && v[i].get<double>() > 0;
  KG_CHECK(ok, ConfigError, path, ": pretrained_cfg.", key, ": expected ",
           n ? "a list of " + std::to_string(n) : std::string("a non-empty list of"), " positive ",
           std::is_integral<T>::value ? "integers" : "numbers", ", got ", v.dump());
  return v.get<std::vector<T>>();
}

WeightsPreprocessing read_preprocessing(const nlohmann::json& cfg, const std::string& path) {
  WeightsPreprocessing p;
  p.mean = numbers<double>(cfg, "mean", 0, path);
  p.std = numbers<double>(cfg, "std", 0, path);
  KG_CHECK(p.mean.size() == p.std.size() || p.mean.empty() || p.std.empty(), ConfigError, path,
           ": pretrained_cfg: mean has ", p.mean.size(), " values and std ", p.std.size(),
           "; expected one per channel");
  p.input_size = numbers<int64_t>(cfg, "input_size", 3, path);
  if (cfg.contains("interpolation") && !cfg["interpolation"].is_null()) {
    KG_CHECK(cfg["interpolation"].is_string(), ConfigError, path,
             ": pretrained_cfg.interpolation: expected a string, got ", cfg["interpolation"].dump());
    p.interpolation = cfg["interpolation"].get<std::string>();
  }
  if (cfg.contains("crop_pct") && !cfg["crop_pct"].is_null()) {
    const auto& v = cfg["crop_pct"];
    KG_CHECK(v.is_number() && v.get<double>() > 0 && v.get<double>() <= 1, ConfigError, path,
             ": pretrained_cfg.crop_pct: expected a number in (0, 1], got ", v.dump());
    p.crop_pct = v.get<double>();
  }
  return p;
}

}  // namespace

std::string WeightsConfig::str() const {
  std::string s = "config.json: " + (!architecture.empty() ? architecture
                                     : !model_type.empty() ? "transformers' " + model_type
                                                           : std::string("no architecture stated"));
  if (num_classes) s += ", " + std::to_string(*num_classes) + " classes";
  if (!unread.empty()) s += "; not read: " + join(unread, ", ");
  return s;
}

std::optional<WeightsConfig> read_weights_config(const std::string& dir) {
  const std::string path = (fs::path(dir) / "config.json").string();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return std::nullopt;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(path + ": not JSON (" + e.what() + ")");
  }
  KG_CHECK(j.is_object(), ConfigError, path, ": expected a JSON object, got ", j.type_name());
  WeightsConfig c;
  c.path = path;
  if (j.contains("architecture")) {
    KG_CHECK(j["architecture"].is_string(), ConfigError, path, ": architecture: expected a string, got ",
             j["architecture"].dump());
    const std::string arch = j["architecture"].get<std::string>();
    c.architecture = arch.substr(0, arch.find('.'));  // "resnet50.a1_in1k" -> "resnet50"
  }
  if (j.contains("model_type")) {
    KG_CHECK(j["model_type"].is_string(), ConfigError, path, ": model_type: expected a string, got ",
             j["model_type"].dump());
    c.model_type = j["model_type"].get<std::string>();
  }
  if (j.contains("architectures") && !j["architectures"].is_null()) {
    const auto& a = j["architectures"];
    bool ok = a.is_array();
    for (size_t i = 0; ok && i < a.size(); ++i) ok = a[i].is_string();
    KG_CHECK(ok, ConfigError, path, ": architectures: expected a list of strings, got ", a.dump());
    c.architectures = a.get<std::vector<std::string>>();
  }
  if (j.contains("num_classes")) {
    KG_CHECK(j["num_classes"].is_number_integer() && j["num_classes"].get<int64_t>() >= 0, ConfigError, path,
             ": num_classes: expected an integer >= 0, got ", j["num_classes"].dump());
    c.num_classes = j["num_classes"].get<int64_t>();
  }
  KG_CHECK(!j.contains("pretrained_cfg") || j["pretrained_cfg"].is_object(), ConfigError, path,
           ": pretrained_cfg: expected an object, got ", j["pretrained_cfg"].dump());
  if (j.contains("pretrained_cfg")) c.preprocessing = read_preprocessing(j["pretrained_cfg"], path);
  for (auto& [key, v] : j.items())
    if (std::find(kKnownKeys.begin(), kKnownKeys.end(), key) == kKnownKeys.end()) c.unread.push_back(key);
  return c;
}

std::string weights_in_folder(const std::string& dir) {
  std::error_code ec;
  for (const char* name : {"model.safetensors", "pytorch_model.bin"})
    if (fs::is_regular_file(fs::path(dir) / name, ec)) return (fs::path(dir) / name).string();
  throw CheckpointError(dir +
                        " is a folder without model.safetensors or pytorch_model.bin (Hugging Face's timm "
                        "layout); name the weights file itself");
}

std::optional<WeightsConfig> weights_config_for(const std::string& path) {
  std::error_code ec;
  return read_weights_config(fs::is_directory(path, ec) ? path : fs::path(path).parent_path().string());
}

void check_architecture(const WeightsConfig& config, const std::string& model_name) {
  if (!config.model_type.empty() || !config.architectures.empty()) {
    const std::string what = (config.model_type.empty() ? std::string() : "model_type \"" + config.model_type + "\"") +
                             (config.architectures.empty() ? std::string()
                                                           : std::string(config.model_type.empty() ? "" : ", ") +
                                                                 "architectures " + join(config.architectures, ", "));
    throw ConfigError(config.path + " is a transformers config.json (" + what + "): kgtrain does not build " +
                      (config.model_type.empty() ? join(config.architectures, ", ") : config.model_type) +
                      " as an image model, and model.name = \"" + model_name +
                      "\" takes timm's layout (a config.json with \"architecture\", as timm's save_pretrained "
                      "writes it) or a weights file alone");
  }
  if (config.architecture.empty() || config.architecture == model_name) return;
  const bool tf = starts_with(config.architecture, "tf_") && config.architecture.substr(3) == model_name;
  const bool known = model_registry().find_info(config.architecture) != nullptr;
  throw ConfigError("model.name = \"" + model_name + "\" but " + config.path + " says these weights are " +
                    config.architecture +
                    (tf ? " (TensorFlow's port: \"same\" padding and BatchNorm eps 1e-3; the names and shapes are " +
                              model_name + "'s, so they would load without an error and compute other features)"
                        : "") +
                    (known ? "; set model.name = \"" + config.architecture + "\""
                           : "; kgtrain does not build " + config.architecture) +
                    ", or use weights trained for " + model_name);
}

}  // namespace kg::model
