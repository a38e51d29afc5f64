// What a training step changes in a model besides its weights: BatchNorm running statistics and the
// random generators (dropout, stochastic depth). Taken before a step that may be run again (an
// out-of-memory retry, a CUDA graph's warm-up and capture) and restored, so the step that counts
// computes exactly what it would have computed the first time.
//
// The out-of-memory retry takes one before every update, so it is cheap: the buffers are copied into one
// flat tensor per dtype and device (a concatenation: a launch or two instead of one copy per buffer, which
// for resnet50's 159 BatchNorm buffers was 159 kernel launches per update).
#pragma once
#include <vector>

#include <ATen/core/Tensor.h>

#include "model/model.h"

namespace kg::train {

class ModelSnapshot {
 public:
  void take(model::Network& net);
  void restore(model::Network& net) const;

 private:
  struct Group {
    at::Tensor flat;              // the members' values, flattened one after another
    std::vector<size_t> members;  // indexes into net.buffers()
  };
  std::vector<Group> groups_;
  size_t buffers_ = 0;
  model::TensorMap rng_;
};

}  // namespace kg::train
