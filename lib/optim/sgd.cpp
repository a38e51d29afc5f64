// SGD with momentum and Nesterov, exactly torch.optim.SGD: weight decay is L2 added to the gradient and
// the first momentum buffer is the gradient itself.
#include <torch/torch.h>

#include "core/error.h"
#include "optim/optimizer.h"

namespace kg::optim {
namespace {

struct SgdOptions {
  double momentum = 0.9;   ///< momentum factor (0 = plain SGD; one_cycle then has nothing to cycle)
  bool nesterov = false;   ///< Nesterov momentum (Sutskever et al. 2013)
  double dampening = 0.0;  ///< dampening of the momentum buffer's gradient term
};

class Sgd : public Optimizer {
 public:
  Sgd(const SgdOptions& o, const OptimContext& ctx) : Optimizer(ctx.groups), o_(o) {
    name_ = "sgd";
    if (o.momentum != 0) momentum_ = o.momentum;
  }

 protected:
  void update(const at::Tensor& p, const at::Tensor& grad, ParamState& s, const StepArgs& a) override {
    at::Tensor d_p = a.weight_decay != 0 ? grad.add(p, a.weight_decay) : grad;
    if (momentum_ && *momentum_ != 0) {
      const double mom = *momentum_;
      auto it = s.slots.find("momentum_buffer");
      if (it == s.slots.end()) {
        it = s.slots.emplace("momentum_buffer", d_p.clone().detach()).first;
      } else {
        it->second.mul_(mom).add_(d_p, 1 - o_.dampening);
      }
      d_p = o_.nesterov ? d_p.add(it->second, mom) : it->second;
    }
    p.add_(d_p, -a.lr);
  }

 private:
  SgdOptions o_;
};

config::Fields<SgdOptions> fields() {
  config::Fields<SgdOptions> f;
  f.field("momentum", &SgdOptions::momentum, "momentum factor; one_cycle cycles it (0 = plain SGD, nothing to cycle)").range(0, 1);
  f.field("nesterov", &SgdOptions::nesterov, "Nesterov momentum");
  f.field("dampening", &SgdOptions::dampening, "dampening of the momentum buffer's gradient term").range(0, 1);
  return f;
}

KG_REGISTER(optimizer_registry(), "sgd", "SGD with momentum / Nesterov and L2 weight decay (PyTorch SGD)",
            "[optim]\nname = \"sgd\"\nlr = 0.1\nweight_decay = 5e-4\nmomentum = 0.9\nnesterov = true", fields(),
            [](const SgdOptions& o, const OptimContext& ctx) -> OptimizerPtr {
              KG_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0), ConfigError,
                       ctx.prefix, ".nesterov = true needs ", ctx.prefix, ".momentum > 0 and ", ctx.prefix,
                       ".dampening = 0 (as PyTorch's SGD)");
              return std::make_unique<Sgd>(o, ctx);
            });

}  // namespace
}  // namespace kg::optim
