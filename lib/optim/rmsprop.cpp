// RMSprop (Hinton's lecture 6e), exactly torch.optim.RMSprop: L2 weight decay on the gradient, optional
// centering (Graves 2013) and momentum buffer. Parameters of one device and dtype are updated together
// with multi-tensor kernels (torch.optim.RMSprop's default foreach path on CUDA).
#include <vector>

#include <torch/torch.h>

#include "optim/optimizer.h"

namespace kg::optim {
namespace {

// Keys of [optim] when name = "rmsprop"; each field's doc is in rmsprop_fields() below and docs/reference.md.
struct RmspropOptions {
  double alpha = 0.99;
  double eps = 1e-8;
  double momentum = 0.0;
  bool centered = false;
};

class Rmsprop : public MultiTensorOptimizer {
 public:
  Rmsprop(const RmspropOptions& o, const OptimContext& ctx)
      : MultiTensorOptimizer(ctx.groups, /*by_step=*/false), o_(o) {
    name_ = "rmsprop";
    if (o.momentum != 0) momentum_ = o.momentum;
  }
  // square_avg, then grad_avg (centered) and momentum_buffer (momentum)
  int64_t state_slots() const override { return 1 + (o_.centered ? 1 : 0) + (o_.momentum != 0 ? 1 : 0); }

 protected:
  // Op for op torch.optim.RMSprop with multi-tensor kernels: g = grad + wd * p; sq = alpha * sq + (1 - alpha) * g²;
  // centered: ga = alpha * ga + (1 - alpha) * g, avg = sqrt(sq - ga²), else avg = sqrt(sq); avg += eps; with
  // momentum buf = momentum * buf + g / avg, p -= lr * buf, else p -= lr * g / avg. LibTorch runs the foreach
  // ops tensor by tensor on the CPU, so grouping changes no bit there (tested).
  void update_bucket(Bucket& b, const StepArgs& a) override {
    auto& ps = b.ps;
    auto& gs = b.gs;
    if (a.weight_decay != 0) gs = at::_foreach_add(gs, ps, a.weight_decay);
    std::vector<at::Tensor> sq = slots(b, "square_avg");
    at::_foreach_mul_(sq, o_.alpha);
    at::_foreach_addcmul_(sq, gs, gs, 1 - o_.alpha);
    std::vector<at::Tensor> avg;
    if (o_.centered) {
      std::vector<at::Tensor> ga = slots(b, "grad_avg");
      at::_foreach_mul_(ga, o_.alpha);
      at::_foreach_add_(ga, gs, 1 - o_.alpha);
      avg = at::_foreach_addcmul(sq, ga, ga, -1);
      at::_foreach_sqrt_(avg);
    } else {
      avg = at::_foreach_sqrt(sq);
    }
    at::_foreach_add_(avg, o_.eps);
    if (momentum_ && *momentum_ > 0) {
      std::vector<at::Tensor> buf = slots(b, "momentum_buffer");
      at::_foreach_mul_(buf, *momentum_);
      at::_foreach_addcdiv_(buf, gs, avg);
      at::_foreach_add_(ps, buf, -a.lr);
    } else {
      at::_foreach_addcdiv_(ps, gs, avg, -a.lr);
    }
  }

 private:
  RmspropOptions o_;
};

config::Fields<RmspropOptions> rmsprop_fields() {
  config::Fields<RmspropOptions> f;
  f.field("alpha", &RmspropOptions::alpha, "smoothing constant of the squared-gradient average").range(0, 1);
  f.field("eps", &RmspropOptions::eps, "term added to the denominator").positive();
  f.field("momentum", &RmspropOptions::momentum, "momentum factor; one_cycle cycles it (0 = none, nothing to cycle)")
      .range(0, 1);
  f.field("centered", &RmspropOptions::centered, "normalize by the gradient's estimated variance (centered RMSprop)");
  return f;
}

KG_REGISTER(optimizer_registry(), "rmsprop", "RMSprop with optional momentum and centering (PyTorch RMSprop)",
            "[optim]\nname = \"rmsprop\"\nlr = 1e-3\nweight_decay = 1e-5\nalpha = 0.9\nmomentum = 0.9",
            rmsprop_fields(), [](const RmspropOptions& o, const OptimContext& ctx) -> OptimizerPtr {
              return std::make_unique<Rmsprop>(o, ctx);
            });

}  // namespace
}  // namespace kg::optim
