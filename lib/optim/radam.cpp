// RAdam (Liu et al. 2020, "On the Variance of the Adaptive Learning Rate and Beyond"), exactly
// torch.optim.RAdam 1.13: the adaptive step is rectified once the SMA length rho_t exceeds 5, before that
// the step is un-adapted momentum SGD. Weight decay is decoupled by default (fastai's and timm's choice,
// torch 2.x decoupled_weight_decay=True); false gives torch 1.13's L2 on the gradient.
#include <cmath>

#include <torch/torch.h>

#include "optim/optimizer.h"

namespace kg::optim {
namespace {

struct RAdamOptions {
  std::vector<double> betas{0.9, 0.999};  ///< (beta1, beta2); one_cycle cycles beta1
  double eps = 1e-8;                      ///< added to the denominator
  bool decoupled_weight_decay = true;     ///< p *= 1 - lr * wd (AdamW-style); false = L2 added to the gradient
};

class RAdam : public Optimizer {
 public:
  RAdam(const RAdamOptions& o, const OptimContext& ctx) : Optimizer(ctx.groups), o_(o) {
    name_ = "radam";
    momentum_ = o.betas[0];
  }

 protected:
  void update(const at::Tensor& p, const at::Tensor& grad, ParamState& s, const StepArgs& a) override {
    const double beta1 = *momentum_, beta2 = o_.betas[1];
    const double step = static_cast<double>(s.step);
    const double bias_correction1 = 1 - std::pow(beta1, step);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    at::Tensor g = grad;
    if (a.weight_decay != 0) {
      if (o_.decoupled_weight_decay) p.mul_(1 - a.lr * a.weight_decay);
      else g = g.add(p, a.weight_decay);
    }
    at::Tensor& exp_avg = slot(s, "exp_avg", p);
    at::Tensor& exp_avg_sq = slot(s, "exp_avg_sq", p);
    exp_avg.mul_(beta1).add_(g, 1 - beta1);
    exp_avg_sq.mul_(beta2).addcmul_(g, g, 1 - beta2);
    at::Tensor corrected = exp_avg / bias_correction1;
    const double rho_inf = 2 / (1 - beta2) - 1;
    const double rho_t = rho_inf - 2 * step * std::pow(beta2, step) / bias_correction2;
    if (rho_t > 5.0) {
      const double rect =
          std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t));
      at::Tensor adaptive_lr = exp_avg_sq.sqrt().add_(o_.eps).reciprocal() * std::sqrt(bias_correction2);
      p.add_(corrected * a.lr * adaptive_lr * rect, -1.0);
    } else {
      p.add_(corrected * a.lr, -1.0);
    }
  }

 private:
  RAdamOptions o_;
};

config::Fields<RAdamOptions> fields() {
  config::Fields<RAdamOptions> f;
  f.field("betas", &RAdamOptions::betas, "(beta1, beta2); beta1 is cycled by one_cycle").size(2).range(0, 1);
  f.field("eps", &RAdamOptions::eps, "term added to the denominator").positive();
  f.field("decoupled_weight_decay", &RAdamOptions::decoupled_weight_decay,
          "decay the weights (p *= 1 - lr*wd, AdamW-style); false = L2 added to the gradient (torch 1.13 RAdam)");
  return f;
}

KG_REGISTER(optimizer_registry(), "radam", "Rectified Adam (PyTorch RAdam), decoupled weight decay by default",
            "[optim]\nname = \"radam\"\nlr = 1e-3\nweight_decay = 0.01\nbetas = [0.9, 0.999]", fields(),
            [](const RAdamOptions& o, const OptimContext& ctx) -> OptimizerPtr { return std::make_unique<RAdam>(o, ctx); });

}  // namespace
}  // namespace kg::optim
