// The training micro-batch (train/step.h MicroStep) under device.cuda_graphs, which captures it
// in a CUDA graph per input shape and replays it (device/graph.h): one launch instead of hundreds of
// kernels, the gain Keras calls steps_per_execution and torch.compile's "reduce-overhead" mode.
//
// A graph reads its inputs from static tensors the batch is copied into, and writes the gradients into
// memory of its own: after a replay they are added to the parameters' .grad exactly as backward would
// (set where unset, summed in place where accumulation micro-batches left one), so the optimizer,
// clipping, the loss scaler and the all-reduce see what an eager step gives them. Warm-up and capture
// are undone (BatchNorm statistics, random generators) before the replay that counts.
#pragma once
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "config/recipe.h"
#include "device/graph.h"
#include "device/precision.h"
#include "model/model.h"
#include "train/step.h"

namespace kg::train {

// Why device.cuda_graphs cannot capture this recipe's step ("" = it can): recomputation in backward
// (model.grad_checkpointing) and SyncBatchNorm's collectives in forward are not capturable.
std::string graphs_blocker(const config::Recipe& recipe, bool multi_process);

class GraphedSteps {
 public:
  // `params`: every parameter of the network (their .grad receives the gradients); `log` reports
  // captures and the fallback.
  GraphedSteps(std::unique_ptr<device::GraphCapturer> capturer, MicroStep step, std::vector<at::Tensor> params,
               std::function<void(const std::string&)> log);
  ~GraphedSteps();

  bool on() const { return on_; }
  // The micro-batch's step (captured for a new input shape, then replayed); the detached loss, valid
  // until the next call. `sole`: the update has this micro-batch alone (its gradients are used in place).
  // A capture that fails for another reason than memory turns graphs off: this step and the rest of the
  // run are eager (logged). Out-of-memory errors propagate (the trainer backs off; call clear()).
  at::Tensor run(const model::Inputs& in, const at::Tensor& y, double weight, bool sole);
  // Drops the graphs when what they captured changed: trainable parameters (freezing) or train/eval
  // modes of the modules. Called at every epoch's start.
  void check_model();
  void clear();
  int64_t captures() const { return captures_; }

 private:
  struct Entry;
  std::string signature() const;
  Entry& entry_for(const model::Inputs& in, const at::Tensor& y);

  std::unique_ptr<device::GraphCapturer> capturer_;
  MicroStep step_;
  std::vector<at::Tensor> params_;
  std::function<void(const std::string&)> log_;
  std::list<std::unique_ptr<Entry>> entries_;  // most recently used first
  std::string model_signature_;
  bool on_ = true;
  int64_t captures_ = 0;
};

}  // namespace kg::train
