// Adam (Kingma & Ba 2015) and AdamW (Loshchilov & Hutter 2019), exactly torch.optim.Adam / AdamW 1.13:
// Adam adds L2 weight decay to the gradient, AdamW decays the weights (p *= 1 - lr * wd); bias
// correction uses each parameter's own step count.
#include <cmath>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "optim/optimizer.h"

namespace kg::optim {
namespace {

struct AdamOptions {
  std::vector<double> betas{0.9, 0.999};  ///< (beta1, beta2); one_cycle cycles beta1
  double eps = 1e-8;                      ///< added to the denominator
  bool amsgrad = false;                   ///< AMSGrad variant (Reddi et al. 2018)
};

class Adam : public MultiTensorOptimizer {
 public:
  Adam(const AdamOptions& o, const OptimContext& ctx, bool decoupled)
      : MultiTensorOptimizer(ctx.groups, /*by_step=*/true), o_(o), decoupled_(decoupled) {
    name_ = decoupled ? "adamw" : "adam";
    momentum_ = o.betas[0];
  }

 protected:
  // One Adam(W) update of `ps` (all at update count `step`) with multi-tensor (foreach) kernels, op for
  // op torch.optim.Adam(W)'s arithmetic. On the CPU LibTorch runs them tensor by tensor, so the result
  // does not depend on how the parameters are grouped (tested bit for bit).
  void update_bucket(Bucket& b, const StepArgs& a) override {
    auto& ps = b.ps;
    auto& gs = b.gs;
    const auto& states = b.states;
    const int64_t step = b.step;
    std::vector<at::Tensor> m, v;
    for (size_t i = 0; i < ps.size(); ++i) {
      m.push_back(slot(*states[i], "exp_avg", ps[i]));
      v.push_back(slot(*states[i], "exp_avg_sq", ps[i]));
    }
    const double beta1 = *momentum_, beta2 = o_.betas[1];
    if (decoupled_) {
      if (a.weight_decay != 0) at::_foreach_mul_(ps, 1 - a.lr * a.weight_decay);
    } else if (a.weight_decay != 0) {
      gs = at::_foreach_add(gs, ps, a.weight_decay);
    }
    at::_foreach_mul_(m, beta1);
    at::_foreach_add_(m, gs, 1 - beta1);
    at::_foreach_mul_(v, beta2);
    at::_foreach_addcmul_(v, gs, gs, 1 - beta2);
    const double step_size = a.lr / (1 - std::pow(beta1, static_cast<double>(step)));
    const double bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2, static_cast<double>(step)));
    if (o_.amsgrad) {
      for (size_t i = 0; i < ps.size(); ++i) {
        at::Tensor& max_sq = slot(*states[i], "max_exp_avg_sq", ps[i]);
        at::maximum_out(max_sq, max_sq, v[i]);
        v[i] = max_sq;  // the denominator's source from here on
      }
    }
    std::vector<at::Tensor> denom = at::_foreach_sqrt(v);
    at::_foreach_div_(denom, bias_correction2_sqrt);
    at::_foreach_add_(denom, o_.eps);
    at::_foreach_addcdiv_(ps, m, denom, -step_size);
  }

 private:
  AdamOptions o_;
  bool decoupled_;
};

config::Fields<AdamOptions> fields() {
  config::Fields<AdamOptions> f;
  f.field("betas", &AdamOptions::betas, "(beta1, beta2); beta1 is cycled by one_cycle").size(2).range(0, 1);
  f.field("eps", &AdamOptions::eps, "term added to the denominator").positive();
  f.field("amsgrad", &AdamOptions::amsgrad, "use the AMSGrad variant");
  return f;
}

KG_REGISTER(optimizer_registry(), "adam", "Adam with L2 weight decay added to the gradient (PyTorch Adam)",
            "[optim]\nname = \"adam\"\nlr = 1e-3\nweight_decay = 0\nbetas = [0.9, 0.999]", fields(),
            [](const AdamOptions& o, const OptimContext& ctx) -> OptimizerPtr { return std::make_unique<Adam>(o, ctx, false); });
KG_REGISTER(optimizer_registry(), "adamw", "Adam with decoupled weight decay (PyTorch AdamW)",
            "[optim]\nname = \"adamw\"\nlr = 3e-3\nweight_decay = 5e-4\nbetas = [0.9, 0.99]", fields(),
            [](const AdamOptions& o, const OptimContext& ctx) -> OptimizerPtr { return std::make_unique<Adam>(o, ctx, true); });

}  // namespace
}  // namespace kg::optim
