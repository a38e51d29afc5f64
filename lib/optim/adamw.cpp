// AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization") via LibTorch's implementation.
#include <torch/optim/adamw.h>

#include "optim/optimizer.h"

namespace kg::optim {
namespace {

struct AdamWOptions {
  std::vector<double> betas{0.9, 0.999};  ///< Adam's (beta1, beta2); one-cycle cycles beta1
  double eps = 1e-8;                      ///< added to the denominator
  bool amsgrad = false;                   ///< AMSGrad variant
};

class AdamW : public Optimizer {
 public:
  AdamW(const AdamWOptions& o, const OptimContext& ctx) {
    auto make = [&](double wd) {
      return std::make_unique<torch::optim::AdamWOptions>(
          torch::optim::AdamWOptions(ctx.lr).betas({o.betas[0], o.betas[1]}).eps(o.eps).weight_decay(wd).amsgrad(o.amsgrad));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    if (!ctx.params.decay.empty()) groups.emplace_back(ctx.params.decay, make(ctx.weight_decay));
    if (!ctx.params.no_decay.empty()) groups.emplace_back(ctx.params.no_decay, make(0.0));
    opt_ = std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(ctx.lr));
  }
  void set_lr(double lr) override {
    for (auto& g : opt_->param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
  }
  void set_momentum(double m) override {
    for (auto& g : opt_->param_groups()) {
      auto& o = static_cast<torch::optim::AdamWOptions&>(g.options());
      o.betas({m, std::get<1>(o.betas())});
    }
  }
  void step() override { opt_->step(); }
  void zero_grad() override {
    // Drop gradients instead of zeroing them (set_to_none): the next backward writes fresh tensors.
    for (auto& g : opt_->param_groups())
      for (auto& p : g.params()) p.mutable_grad() = torch::Tensor();
  }
  torch::optim::Optimizer& torch_optimizer() override { return *opt_; }

 private:
  std::unique_ptr<torch::optim::AdamW> opt_;
};

config::Fields<AdamWOptions> fields() {
  config::Fields<AdamWOptions> f;
  f.field("betas", &AdamWOptions::betas, "(beta1, beta2); beta1 is cycled by one_cycle").size(2).range(0, 1);
  f.field("eps", &AdamWOptions::eps, "term added to the denominator").positive();
  f.field("amsgrad", &AdamWOptions::amsgrad, "use the AMSGrad variant");
  return f;
}

KG_REGISTER(optimizer_registry(), "adamw", "Adam with decoupled weight decay (PyTorch AdamW)",
            "[optim]\nname = \"adamw\"\nlr = 3e-3\nweight_decay = 5e-4\nbetas = [0.9, 0.99]", fields(),
            [](const AdamWOptions& o, const OptimContext& ctx) -> OptimizerPtr { return std::make_unique<AdamW>(o, ctx); });

}  // namespace
}  // namespace kg::optim
