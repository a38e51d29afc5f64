// The masked-language-model loss (kgtrain pretrain): cross-entropy of the predicted tokens' logits [M, vocab]
// (model/text/mlm.h: the positions of Inputs::predict in row-major order) against the targets [B, L], whose
// positions other than -100 are those same tokens (data/mlm_masking.h) -- transformers' *ForMaskedLM loss, the mean
// over the predicted tokens. Not in the loss registry: it goes with the MLM network and its batches, not a task.
#pragma once
#include <ATen/core/Tensor.h>

#include "loss/loss.h"

namespace kg::loss {

class MaskedLmLoss final : public Loss {
 public:
  // A batch with no predicted token gives 0, still a function of the logits (its backward adds nothing).
  at::Tensor forward(const at::Tensor& logits, const at::Tensor& targets) const override;
};

}  // namespace kg::loss
