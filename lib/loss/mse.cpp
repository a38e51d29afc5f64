// Mean squared error over every (row, output) cell, as torch.nn.functional.mse_loss.
#include <torch/torch.h>

#include "loss/loss.h"

namespace kg::loss {
namespace {

struct MseOptions {};

class Mse : public Loss {
 public:
  at::Tensor forward(const at::Tensor& logits, const at::Tensor& targets) const override {
    return torch::mse_loss(logits, detail::dense_targets(logits, targets, "mse"));
  }
};

KG_REGISTER(loss_registry(), "mse", "mean squared error (regression)", "[loss]\nname = \"mse\"",
            config::Fields<MseOptions>(),
            [](const MseOptions&, const LossContext&) -> LossPtr { return std::make_unique<Mse>(); });
KG_LOSS_TASKS("mse", {Task::regression});

}  // namespace
}  // namespace kg::loss
