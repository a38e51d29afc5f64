// LAMB (You et al. 2019, "Large Batch Optimization for Deep Learning") as timm's Lamb: Adam moments with
// bias correction, update u = m_hat / (sqrt(v_hat) + eps) + wd * p, scaled per tensor by the trust ratio
// ||p|| / ||u|| (1 when either norm is 0). timm's global gradient-norm clipping is not part of it here.
#include <cmath>

#include <torch/torch.h>

#include "optim/optimizer.h"

namespace kg::optim {
namespace {

// Keys of [optim] when name = "lamb"; each field's doc is in lamb_fields() below and docs/reference.md.
struct LambOptions {
  std::vector<double> betas{0.9, 0.999};
  double eps = 1e-6;
  bool trust_clip = false;
  bool always_adapt = false;
};

class Lamb : public Optimizer {
 public:
  Lamb(const LambOptions& o, const OptimContext& ctx) : Optimizer(ctx.groups), o_(o) {
    name_ = "lamb";
    momentum_ = o.betas[0];
  }

 protected:
  void update(const at::Tensor& p, const at::Tensor& grad, ParamState& s, const StepArgs& a) override {
    const double beta1 = *momentum_, beta2 = o_.betas[1];
    const double step = static_cast<double>(s.step);
    const double bias_correction1 = 1 - std::pow(beta1, step);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    at::Tensor& exp_avg = slot(s, "exp_avg", p);
    at::Tensor& exp_avg_sq = slot(s, "exp_avg_sq", p);
    exp_avg.mul_(beta1).add_(grad, 1 - beta1);
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
    at::Tensor denom = (exp_avg_sq.sqrt() / std::sqrt(bias_correction2)).add_(o_.eps);
    at::Tensor update = (exp_avg / bias_correction1).div_(denom);
    if (a.weight_decay != 0) update.add_(p, a.weight_decay);
    if (a.weight_decay != 0 || o_.always_adapt) {
      // Kept as tensors: reading the norms back would synchronise a GPU once per parameter.
      at::Tensor w_norm = p.norm(2), u_norm = update.norm(2);
      at::Tensor one = torch::ones_like(w_norm);
      at::Tensor trust = torch::where(w_norm > 0, torch::where(u_norm > 0, w_norm / u_norm, one), one);
      if (o_.trust_clip) trust = torch::minimum(trust, one);
      update.mul_(trust);
    }
    p.add_(update, -a.lr);
  }

 private:
  LambOptions o_;
};

config::Fields<LambOptions> lamb_fields() {
  config::Fields<LambOptions> f;
  f.field("betas", &LambOptions::betas, "(beta1, beta2); beta1 is cycled by one_cycle").size(2).range(0, 1);
  f.field("eps", &LambOptions::eps, "term added to the denominator").positive();
  f.field("trust_clip", &LambOptions::trust_clip, "clamp the trust ratio ||p||/||update|| to at most 1 (LAMBC)");
  f.field("always_adapt", &LambOptions::always_adapt,
          "apply the trust ratio also to params without weight decay (timm: false, they take plain Adam steps)");
  return f;
}

KG_REGISTER(optimizer_registry(), "lamb", "LAMB: Adam with a per-tensor trust ratio, for large batches (timm Lamb)",
            "[optim]\nname = \"lamb\"\nlr = 5e-3\nweight_decay = 0.02", lamb_fields(),
            [](const LambOptions& o, const OptimContext& ctx) -> OptimizerPtr {
              return std::make_unique<Lamb>(o, ctx);
            });

}  // namespace
}  // namespace kg::optim
