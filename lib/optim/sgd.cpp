// SGD with momentum and Nesterov, exactly torch.optim.SGD: weight decay is L2 added to the gradient and
// the first momentum buffer is the gradient itself. Parameters of one device and dtype are updated
// together with multi-tensor kernels (torch.optim.SGD's default foreach path on CUDA).
#include <vector>

#include <torch/torch.h>

#include "core/error.h"
#include "optim/optimizer.h"

namespace kg::optim {
namespace {

// Keys of [optim] when name = "sgd"; each field's doc is in sgd_fields() below and docs/reference.md.
struct SgdOptions {
  double momentum = 0.9;
  bool nesterov = false;
  double dampening = 0.0;
};

class Sgd : public MultiTensorOptimizer {
 public:
  Sgd(const SgdOptions& o, const OptimContext& ctx) : MultiTensorOptimizer(ctx.groups, /*by_step=*/false), o_(o) {
    name_ = "sgd";
    if (o.momentum != 0) momentum_ = o.momentum;
  }
  int64_t state_slots() const override { return o_.momentum != 0 ? 1 : 0; }  // momentum_buffer

 protected:
  // Op for op torch.optim.SGD: d = g + wd * p; buf = d (first step) or buf * momentum + (1 - dampening) * d;
  // d = d + momentum * buf (Nesterov) or buf; p -= lr * d. LibTorch runs the foreach ops tensor by tensor
  // on the CPU, so grouping changes no bit there (tested).
  void update_bucket(Bucket& b, const StepArgs& a) override {
    auto& ps = b.ps;
    auto& ds = b.gs;
    const auto& states = b.states;
    if (a.weight_decay != 0) ds = at::_foreach_add(ds, ps, a.weight_decay);
    if (momentum_ && *momentum_ != 0) {
      const double mom = *momentum_;
      std::vector<at::Tensor> bufs, their_ds, all;
      for (size_t i = 0; i < ps.size(); ++i) {
        auto it = states[i]->slots.find("momentum_buffer");
        if (it == states[i]->slots.end()) {
          it = states[i]->slots.emplace("momentum_buffer", ds[i].clone().detach()).first;
        } else {
          bufs.push_back(it->second);
          their_ds.push_back(ds[i]);
        }
        all.push_back(it->second);
      }
      if (!bufs.empty()) {
        at::_foreach_mul_(bufs, mom);
        at::_foreach_add_(bufs, their_ds, 1 - o_.dampening);
      }
      ds = o_.nesterov ? at::_foreach_add(ds, all, mom) : all;
    }
    at::_foreach_add_(ps, ds, -a.lr);
  }

 private:
  SgdOptions o_;
};

config::Fields<SgdOptions> sgd_fields() {
  config::Fields<SgdOptions> f;
  f.field("momentum", &SgdOptions::momentum, "momentum factor; one_cycle cycles it (0 = plain SGD, nothing to cycle)")
      .range(0, 1);
  f.field("nesterov", &SgdOptions::nesterov, "Nesterov momentum (Sutskever et al. 2013)");
  f.field("dampening", &SgdOptions::dampening, "dampening of the momentum buffer's gradient term").range(0, 1);
  return f;
}

KG_REGISTER(optimizer_registry(), "sgd", "SGD with momentum / Nesterov and L2 weight decay (PyTorch SGD)",
            "[optim]\nname = \"sgd\"\nlr = 0.1\nweight_decay = 5e-4\nmomentum = 0.9\nnesterov = true", sgd_fields(),
            [](const SgdOptions& o, const OptimContext& ctx) -> OptimizerPtr {
              KG_CHECK(!o.nesterov || (o.momentum > 0 && o.dampening == 0), ConfigError, ctx.prefix,
                       ".nesterov = true needs ", ctx.prefix, ".momentum > 0 and ", ctx.prefix,
                       ".dampening = 0 (as PyTorch's SGD)");
              return std::make_unique<Sgd>(o, ctx);
            });

}  // namespace
}  // namespace kg::optim
