// Adam (Kingma & Ba 2015) and AdamW (Loshchilov & Hutter 2019), exactly torch.optim.Adam / AdamW 1.13:
// Adam adds L2 weight decay to the gradient, AdamW decays the weights (p *= 1 - lr * wd); bias
// correction uses each parameter's own step count.
#include <cmath>
#include <map>
#include <string>
#include <tuple>
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

class Adam : public Optimizer {
 public:
  Adam(const AdamOptions& o, const OptimContext& ctx, bool decoupled) : Optimizer(ctx.groups), o_(o), decoupled_(decoupled) {
    name_ = decoupled ? "adamw" : "adam";
    momentum_ = o.betas[0];
  }

 protected:
  void update(const at::Tensor& p, const at::Tensor& grad, ParamState& s, const StepArgs& a) override {
    const double beta1 = *momentum_, beta2 = o_.betas[1];
    at::Tensor g = grad;
    if (decoupled_) {
      if (a.weight_decay != 0) p.mul_(1 - a.lr * a.weight_decay);
    } else if (a.weight_decay != 0) {
      g = g.add(p, a.weight_decay);
    }
    at::Tensor& exp_avg = slot(s, "exp_avg", p);
    at::Tensor& exp_avg_sq = slot(s, "exp_avg_sq", p);
    exp_avg.mul_(beta1).add_(g, 1 - beta1);
    exp_avg_sq.mul_(beta2).addcmul_(g, g, 1 - beta2);
    const double step = static_cast<double>(s.step);
    const double bias_correction1 = 1 - std::pow(beta1, step);
    const double bias_correction2 = 1 - std::pow(beta2, step);
    const double step_size = a.lr / bias_correction1;
    const double bias_correction2_sqrt = std::sqrt(bias_correction2);
    at::Tensor denom;
    if (o_.amsgrad) {
      at::Tensor& max_sq = slot(s, "max_exp_avg_sq", p);
      at::maximum_out(max_sq, max_sq, exp_avg_sq);
      denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(o_.eps);
    } else {
      denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(o_.eps);
    }
    p.addcdiv_(exp_avg, denom, -step_size);
  }

  // The same arithmetic as update(), op for op, over every parameter of the group that shares a step
  // count, device and dtypes, with multi-tensor (foreach) kernels: PyTorch's default AdamW on CUDA.
  // On the CPU LibTorch runs them tensor by tensor, so the result is bit-identical to update().
  void update_group(const std::vector<Item>& items, const StepArgs& a) override {
    if (o_.amsgrad || items.size() < 2) return Optimizer::update_group(items, a);
    std::map<std::tuple<int64_t, std::string, int, int>, std::vector<Item>> buckets;
    for (const auto& it : items)
      buckets[{it.s->step, it.p->device().str(), static_cast<int>(it.p->scalar_type()),
               static_cast<int>(it.grad->scalar_type())}].push_back(it);
    for (const auto& [key, bucket] : buckets) {
      if (bucket.size() == 1) {
        update(*bucket[0].p, *bucket[0].grad, *bucket[0].s, a);
        continue;
      }
      std::vector<at::Tensor> ps, gs, m, v;
      for (const auto& it : bucket) {
        ps.push_back(*it.p);
        gs.push_back(*it.grad);
        m.push_back(slot(*it.s, "exp_avg", *it.p));
        v.push_back(slot(*it.s, "exp_avg_sq", *it.p));
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
      const double step = static_cast<double>(std::get<0>(key));
      const double step_size = a.lr / (1 - std::pow(beta1, step));
      const double bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2, step));
      std::vector<at::Tensor> denom = at::_foreach_sqrt(v);
      at::_foreach_div_(denom, bias_correction2_sqrt);
      at::_foreach_add_(denom, o_.eps);
      at::_foreach_addcdiv_(ps, m, denom, -step_size);
    }
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
