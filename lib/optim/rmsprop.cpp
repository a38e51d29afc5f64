// RMSprop (Hinton's lecture 6e), exactly torch.optim.RMSprop: L2 weight decay on the gradient, optional
// centering (Graves 2013) and momentum buffer.
#include <torch/torch.h>

#include "optim/optimizer.h"

namespace kg::optim {
namespace {

struct RmspropOptions {
  double alpha = 0.99;     ///< smoothing constant of the squared-gradient average
  double eps = 1e-8;       ///< added to the denominator
  double momentum = 0.0;   ///< momentum factor (0 = none; one_cycle then has nothing to cycle)
  bool centered = false;   ///< normalize by the gradient's estimated variance instead of its second moment
};

class Rmsprop : public Optimizer {
 public:
  Rmsprop(const RmspropOptions& o, const OptimContext& ctx) : Optimizer(ctx.groups), o_(o) {
    name_ = "rmsprop";
    if (o.momentum != 0) momentum_ = o.momentum;
  }

 protected:
  void update(const at::Tensor& p, const at::Tensor& grad, ParamState& s, const StepArgs& a) override {
    at::Tensor g = a.weight_decay != 0 ? grad.add(p, a.weight_decay) : grad;
    at::Tensor& square_avg = slot(s, "square_avg", p);
    square_avg.mul_(o_.alpha).addcmul_(g, g, 1 - o_.alpha);
    at::Tensor avg;
    if (o_.centered) {
      at::Tensor& grad_avg = slot(s, "grad_avg", p);
      grad_avg.mul_(o_.alpha).add_(g, 1 - o_.alpha);
      avg = square_avg.addcmul(grad_avg, grad_avg, -1).sqrt_();
    } else {
      avg = square_avg.sqrt();
    }
    avg.add_(o_.eps);
    if (momentum_ && *momentum_ > 0) {
      at::Tensor& buf = slot(s, "momentum_buffer", p);
      buf.mul_(*momentum_).addcdiv_(g, avg);
      p.add_(buf, -a.lr);
    } else {
      p.addcdiv_(g, avg, -a.lr);
    }
  }

 private:
  RmspropOptions o_;
};

config::Fields<RmspropOptions> fields() {
  config::Fields<RmspropOptions> f;
  f.field("alpha", &RmspropOptions::alpha, "smoothing constant of the squared-gradient average").range(0, 1);
  f.field("eps", &RmspropOptions::eps, "term added to the denominator").positive();
  f.field("momentum", &RmspropOptions::momentum, "momentum factor; one_cycle cycles it (0 = none, nothing to cycle)").range(0, 1);
  f.field("centered", &RmspropOptions::centered, "normalize by the gradient's estimated variance (centered RMSprop)");
  return f;
}

KG_REGISTER(optimizer_registry(), "rmsprop", "RMSprop with optional momentum and centering (PyTorch RMSprop)",
            "[optim]\nname = \"rmsprop\"\nlr = 1e-3\nweight_decay = 1e-5\nalpha = 0.9\nmomentum = 0.9", fields(),
            [](const RmspropOptions& o, const OptimContext& ctx) -> OptimizerPtr { return std::make_unique<Rmsprop>(o, ctx); });

}  // namespace
}  // namespace kg::optim
