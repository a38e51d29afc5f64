// Huber loss, as torch.nn.functional.huber_loss(delta=...): 0.5 d^2 for |d| < delta, else
// delta * (|d| - 0.5 delta), averaged over every (row, output) cell.
#include <torch/torch.h>

#include "loss/loss.h"

namespace kg::loss {
namespace {

// Keys of [loss] when name = "huber"; each field's doc is in huber_fields() below and docs/reference.md.
struct HuberOptions {
  double delta = 1.0;
};

class Huber : public Loss {
 public:
  explicit Huber(const HuberOptions& o) : delta_(o.delta) {}
  at::Tensor forward(const at::Tensor& logits, const at::Tensor& targets) const override {
    return torch::huber_loss(logits, detail::dense_targets(logits, targets, "huber"), at::Reduction::Mean, delta_);
  }

 private:
  double delta_;
};

config::Fields<HuberOptions> huber_fields() {
  config::Fields<HuberOptions> f;
  f.field("delta", &HuberOptions::delta, "error size where the loss turns from quadratic to linear (target units)")
      .positive();
  return f;
}

KG_REGISTER(loss_registry(), "huber", "Huber loss, quadratic near 0 and linear beyond delta (regression)",
            "[loss]\nname = \"huber\"\ndelta = 1.0", huber_fields(),
            [](const HuberOptions& o, const LossContext&) -> LossPtr { return std::make_unique<Huber>(o); });
KG_LOSS_TASKS("huber", {Task::regression});

}  // namespace
}  // namespace kg::loss
