// Optimizers: LibTorch optimizers behind one small interface the schedules drive.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>

#include "config/tree.h"
#include "core/registry.h"

namespace kg::optim {

struct OptimOptions {
  std::string name = "adamw";    ///< optimizer
  double lr = 1e-3;              ///< peak learning rate (the schedule's maximum)
  double weight_decay = 0.01;    ///< decoupled (AdamW) or L2 (SGD) weight decay
  bool decay_norm_bias = false;  ///< also decay biases and normalization weights (timm/fastai: false)
};

// Parameters split for weight decay: biases and normalization weights (1-d tensors) get none.
struct ParamGroups {
  std::vector<torch::Tensor> decay;
  std::vector<torch::Tensor> no_decay;
};
ParamGroups split_for_decay(const torch::nn::Module& model, bool decay_norm_bias);

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual void set_lr(double lr) = 0;
  // Momentum (SGD) or beta1 (Adam family); cycled by one-cycle schedules.
  virtual void set_momentum(double m) = 0;
  virtual void step() = 0;
  virtual void zero_grad() = 0;
  virtual torch::optim::Optimizer& torch_optimizer() = 0;
};
using OptimizerPtr = std::unique_ptr<Optimizer>;

struct OptimContext {
  ParamGroups params;
  double lr = 1e-3;
  double weight_decay = 0.0;
};

using OptimizerRegistry = Registry<OptimizerPtr(const OptimContext&)>;
OptimizerRegistry& optimizer_registry();

OptimOptions load_options(const config::Tree& recipe);
OptimizerPtr build(const config::Tree& recipe, const torch::nn::Module& model);

}  // namespace kg::optim
