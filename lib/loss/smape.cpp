// Differentiable SMAPE in percent (0..200), on the scale of the smape metric (Kaggle's definition):
// 100 * mean over every (row, output) cell of 2 |y - p| / (|y| + |p| + eps), eps = 1e-8 keeping 0/0
// (and its gradient) finite.
#include <torch/torch.h>

#include "loss/loss.h"

namespace kg::loss {
namespace {

constexpr double kEps = 1e-8;

struct SmapeOptions {};

class Smape : public Loss {
 public:
  at::Tensor forward(const at::Tensor& logits, const at::Tensor& targets) const override {
    auto y = detail::dense_targets(logits, targets, "smape");
    return 200.0 * ((y - logits).abs() / (y.abs() + logits.abs() + kEps)).mean();
  }
};

KG_REGISTER(loss_registry(), "smape",
            "symmetric mean absolute percentage error in percent, 0..200, eps 1e-8 in the denominator (regression)",
            "[loss]\nname = \"smape\"", config::Fields<SmapeOptions>(),
            [](const SmapeOptions&, const LossContext&) -> LossPtr { return std::make_unique<Smape>(); });
KG_LOSS_TASKS("smape", {Task::regression});

}  // namespace
}  // namespace kg::loss
