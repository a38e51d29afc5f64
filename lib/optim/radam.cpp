// RAdam (Liu et al. 2020, "On the Variance of the Adaptive Learning Rate and Beyond"), exactly
// torch.optim.RAdam 1.13: the adaptive step is rectified once the SMA length rho_t exceeds 5, before that
// the step is un-adapted momentum SGD. Weight decay is decoupled by default (fastai's and timm's choice,
// torch 2.x decoupled_weight_decay=True); false gives torch 1.13's L2 on the gradient.
#include <cmath>
#include <vector>

#include <torch/torch.h>

#include "optim/optimizer.h"

namespace kg::optim {
namespace {

// Keys of [optim] when name = "radam"; each field's doc is in radam_fields() below and docs/reference.md.
struct RAdamOptions {
  std::vector<double> betas{0.9, 0.999};
  double eps = 1e-8;
  bool decoupled_weight_decay = true;
};

class RAdam : public MultiTensorOptimizer {
 public:
  RAdam(const RAdamOptions& o, const OptimContext& ctx) : MultiTensorOptimizer(ctx.groups, /*by_step=*/true), o_(o) {
    name_ = "radam";
    momentum_ = o.betas[0];
  }

 protected:
  // Op for op the per-parameter arithmetic of torch.optim.RAdam (on the CPU LibTorch runs the foreach
  // ops tensor by tensor: bit-identical whatever the grouping, tested).
  void update_bucket(Bucket& b, const StepArgs& a) override {
    auto& ps = b.ps;
    auto& gs = b.gs;
    const double beta1 = *momentum_, beta2 = o_.betas[1];
    const double step = static_cast<double>(b.step);
    const double bias_correction1 = 1 - std::pow(beta1, step);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    if (a.weight_decay != 0) {
      if (o_.decoupled_weight_decay)
        at::_foreach_mul_(ps, 1 - a.lr * a.weight_decay);
      else
        gs = at::_foreach_add(gs, ps, a.weight_decay);
    }
    std::vector<at::Tensor> m = slots(b, "exp_avg"), v = slots(b, "exp_avg_sq");
    at::_foreach_mul_(m, beta1);
    at::_foreach_add_(m, gs, 1 - beta1);
    at::_foreach_mul_(v, beta2);
    at::_foreach_addcmul_(v, gs, gs, 1 - beta2);
    std::vector<at::Tensor> update = at::_foreach_div(m, bias_correction1);  // the bias-corrected first moment
    at::_foreach_mul_(update, a.lr);
    const double rho_inf = 2 / (1 - beta2) - 1;
    const double rho_t = rho_inf - 2 * step * std::pow(beta2, step) / bias_correction2;
    if (rho_t > 5.0) {
      const double rect = std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
      std::vector<at::Tensor> adaptive_lr = at::_foreach_sqrt(v);
      at::_foreach_add_(adaptive_lr, o_.eps);
      at::_foreach_reciprocal_(adaptive_lr);
      at::_foreach_mul_(adaptive_lr, std::sqrt(bias_correction2));
      at::_foreach_mul_(update, adaptive_lr);
      at::_foreach_mul_(update, rect);
    }
    at::_foreach_add_(ps, update, -1.0);
  }

 private:
  RAdamOptions o_;
};

config::Fields<RAdamOptions> radam_fields() {
  config::Fields<RAdamOptions> f;
  f.field("betas", &RAdamOptions::betas, "(beta1, beta2); beta1 is cycled by one_cycle").size(2).range(0, 1);
  f.field("eps", &RAdamOptions::eps, "term added to the denominator").positive();
  f.field("decoupled_weight_decay", &RAdamOptions::decoupled_weight_decay,
          "decay the weights (p *= 1 - lr*wd, AdamW-style); false = L2 added to the gradient (torch 1.13 RAdam)");
  return f;
}

KG_REGISTER(optimizer_registry(), "radam", "Rectified Adam (PyTorch RAdam), decoupled weight decay by default",
            "[optim]\nname = \"radam\"\nlr = 1e-3\nweight_decay = 0.01\nbetas = [0.9, 0.999]", radam_fields(),
            [](const RAdamOptions& o, const OptimContext& ctx) -> OptimizerPtr {
              return std::make_unique<RAdam>(o, ctx);
            });

}  // namespace
}  // namespace kg::optim
