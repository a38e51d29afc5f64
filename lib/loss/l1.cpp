// Mean absolute error over every (row, output) cell, as torch.nn.functional.l1_loss.
#include <torch/torch.h>

#include "loss/loss.h"

namespace kg::loss {
namespace {

struct L1Options {};

class L1 : public Loss {
 public:
  at::Tensor forward(const at::Tensor& logits, const at::Tensor& targets) const override {
    return torch::l1_loss(logits, detail::dense_targets(logits, targets, "l1"));
  }
};

KG_REGISTER(loss_registry(), "l1", "mean absolute error (regression)", "[loss]\nname = \"l1\"",
            config::Fields<L1Options>(),
            [](const L1Options&, const LossContext&) -> LossPtr { return std::make_unique<L1>(); });
KG_LOSS_TASKS("l1", {Task::regression});

}  // namespace
}  // namespace kg::loss
