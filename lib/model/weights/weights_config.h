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

// pretrained_cfg's preprocessing: what the weights were trained on (timm's eval transform). Unset = not stated.
struct WeightsPreprocessing {
  std::vector<double> mean, std;    // per channel, [0, 1] pixel units
  std::vector<int64_t> input_size;  // [channels, height, width]
  std::string interpolation;        // timm's: bicubic, bilinear, nearest, ...
  std::optional<double> crop_pct;   // eval: resize to size / crop_pct, then centre crop
  bool empty() const { return mean.empty() && std.empty() && input_size.empty() && interpolation.empty() && !crop_pct; }
};

struct WeightsConfig {
  std::string path;          // the config.json read
  std::string architecture;  // without its pretrained tag: "tf_efficientnet_b0"; "" = not stated
  // transformers' layout (save_pretrained of a transformers model): its model_type ("vit", "deberta-v2") and
  // architectures ("ViTForImageClassification"); "" / empty = not stated.
  std::string model_type;
  std::vector<std::string> architectures;
  std::optional<int64_t> num_classes;  // the classifier's outputs
  std::vector<std::string> unread;     // keys kgtrain does not read (listed in the report, otherwise ignored)
  WeightsPreprocessing preprocessing;  // from pretrained_cfg
  std::string str() const;             // "config.json: tf_efficientnet_b0, 1000 classes"
};

// The config.json in `dir`, if there is one (pretrained_cfg's mean, std, input_size, interpolation and crop_pct read;
// its other keys ignored). ConfigError (exit 2) naming the file and the key for a value of the wrong
// type, or a file that is not JSON.
std::optional<WeightsConfig> read_weights_config(const std::string& dir);
// The weights file of a folder in that layout: model.safetensors, else pytorch_model.bin. CheckpointError (exit 3)
// naming the folder when it holds neither.
std::string weights_in_folder(const std::string& dir);
// ConfigError (exit 2) naming both when `config` states an architecture other than `model_name`, and naming the
// model_type when it is a transformers config.json (no image network of kgtrain takes those weights: they would load
// by whatever names happen to match, or fail far from the cause).
void check_architecture(const WeightsConfig& config, const std::string& model_name);
// The config.json that comes with weights at `path`: the folder's own, or the one beside the file.
std::optional<WeightsConfig> weights_config_for(const std::string& path);

}  // namespace kg::model
