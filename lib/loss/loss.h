// Losses: (logits [N, K], targets) -> scalar. Targets are class indices [N] (int64) or soft
// probabilities [N, K] (float) — mixup and soft pseudo-labels produce the latter.
#pragma once
#include <memory>
#include <string>

#include <ATen/core/Tensor.h>

#include "config/tree.h"
#include "core/registry.h"

namespace kg::loss {

class Loss {
 public:
  virtual ~Loss() = default;
  virtual at::Tensor forward(const at::Tensor& logits, const at::Tensor& targets) const = 0;
};
using LossPtr = std::unique_ptr<Loss>;

struct LossContext {
  int64_t num_classes = 0;
};

using LossRegistry = Registry<LossPtr(const LossContext&)>;
LossRegistry& loss_registry();

struct LossOptions {
  std::string name = "cross_entropy";  ///< loss function
};
LossPtr build(const config::Tree& recipe, const LossContext& ctx);

}  // namespace kg::loss
