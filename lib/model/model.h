// Models: a registry of networks built from `model.*` keys for a task's input and output sizes.
#pragma once
#include <memory>
#include <string>

#include <torch/nn/module.h>

#include "config/tree.h"
#include "core/registry.h"

namespace kg::model {

// A network maps a batch of images [N, C, H, W] to outputs [N, num_outputs].
class Network : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
};
using NetworkPtr = std::shared_ptr<Network>;

struct ModelContext {
  int64_t in_chans = 3;     // from data.channels
  int64_t num_outputs = 0;  // classes for multiclass
};

using ModelRegistry = Registry<NetworkPtr(const ModelContext&)>;
ModelRegistry& model_registry();

struct ModelOptions {
  std::string name = "resnet9";  ///< backbone name (see `kgtrain show --list`)
};

// Builds the recipe's model (model.name + its keys).
NetworkPtr build(const config::Tree& recipe, const ModelContext& ctx);
std::string model_name(const config::Tree& recipe);
int64_t count_parameters(const torch::nn::Module& m, bool trainable_only = false);

}  // namespace kg::model
