#include "loss/masked_lm.h"

#include <ATen/ATen.h>

#include "core/error.h"

namespace kg::loss {

at::Tensor MaskedLmLoss::forward(const at::Tensor& logits, const at::Tensor& targets) const {
  KG_CHECK(targets.dim() == 2 && !targets.is_floating_point(), DataError,
           "masked-language-model targets must be int64 [batch, length] (-100: not predicted), got ", targets.sizes());
  const at::Tensor y = targets.masked_select(targets.ge(0));
  KG_CHECK(logits.dim() == 2 && logits.size(0) == y.size(0), DataError, "the network predicted ", logits.size(0),
           " tokens but the batch masks ", y.size(0));
  if (y.size(0) == 0) return logits.sum() * 0.0;
  return at::cross_entropy_loss(logits, y);
}

}  // namespace kg::loss
