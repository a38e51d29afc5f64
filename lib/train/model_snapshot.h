// What a training step changes in a model besides its weights: BatchNorm running statistics and the
// random generators (dropout, stochastic depth). Taken before a step that may be run again (an
// out-of-memory retry, a CUDA graph's warm-up and capture) and restored, so the step that counts
// computes exactly what it would have computed the first time.
#pragma once
#include <vector>

#include <ATen/core/Tensor.h>

#include "model/model.h"

namespace kg::train {

struct ModelSnapshot {
  std::vector<at::Tensor> buffers;
  model::TensorMap rng;
  void take(model::Network& net);
  void restore(model::Network& net) const;
};

}  // namespace kg::train
