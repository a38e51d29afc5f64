#include "optim/optimizer.h"

#include <torch/nn/module.h>

#include "config/sections.h"

namespace kg::optim {

OptimizerRegistry& optimizer_registry() {
  static OptimizerRegistry r("optimizer");
  return r;
}

namespace {
config::Fields<OptimOptions> fields() {
  config::Fields<OptimOptions> f;
  f.field("name", &OptimOptions::name, "optimizer").kind("optimizer");
  f.field("lr", &OptimOptions::lr, "peak learning rate (the schedule scales it)").positive();
  f.field("weight_decay", &OptimOptions::weight_decay, "weight decay (decoupled for AdamW)").min(0);
  f.field("decay_norm_bias", &OptimOptions::decay_norm_bias, "also decay biases and normalization weights");
  return f;
}
KG_REGISTER_SECTION("optim", "the optimizer", fields().schema(), "optimizer");
}  // namespace

OptimOptions load_options(const config::Tree& recipe) { return fields().load(config::Options(&recipe, "optim")); }

ParamGroups split_for_decay(const torch::nn::Module& model, bool decay_norm_bias) {
  ParamGroups g;
  for (const auto& p : model.parameters()) {
    if (!p.requires_grad()) continue;
    // timm's filter_bias_and_bn: every 1-d parameter is a bias or a norm scale/shift.
    if (!decay_norm_bias && p.dim() <= 1) g.no_decay.push_back(p);
    else g.decay.push_back(p);
  }
  return g;
}

OptimizerPtr build(const config::Tree& recipe, const torch::nn::Module& model) {
  auto o = load_options(recipe);
  OptimContext ctx{split_for_decay(model, o.decay_norm_bias), o.lr, o.weight_decay};
  return optimizer_registry().create(o.name, config::Options(&recipe, "optim"), ctx);
}

}  // namespace kg::optim
