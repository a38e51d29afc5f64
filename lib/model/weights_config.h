// Hugging Face's timm layout: a folder with config.json beside model.safetensors (or pytorch_model.bin), as a timm
// model from the Hub is saved (and attached to a Kaggle notebook as a dataset). config.json names the architecture the
// weights were trained for ("tf_efficientnet_b0.ns_jft_in1k"), which kgtrain holds against model.name: TF-ported
// weights have the same names and shapes as the PyTorch network's and would otherwise load without a word.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kg::model {

struct WeightsConfig {
  std::string path;                    // the config.json read
  std::string architecture;            // without its pretrained tag: "tf_efficientnet_b0"; "" = not stated
  std::optional<int64_t> num_classes;  // the classifier's outputs
  std::vector<std::string> unread;     // keys kgtrain does not read (listed in the report, otherwise ignored)
  std::string str() const;             // "config.json: tf_efficientnet_b0, 1000 classes"
};

// The config.json in `dir`, if there is one. ConfigError (exit 2) naming the file and the key for a value of the wrong
// type, or a file that is not JSON.
std::optional<WeightsConfig> read_weights_config(const std::string& dir);
// The weights file of a folder in that layout: model.safetensors, else pytorch_model.bin. CheckpointError (exit 3)
// naming the folder when it holds neither.
std::string weights_in_folder(const std::string& dir);
// ConfigError (exit 2) naming both when `config` states an architecture other than `model_name`.
void check_architecture(const WeightsConfig& config, const std::string& model_name);

}  // namespace kg::model
