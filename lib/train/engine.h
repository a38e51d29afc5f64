// The training and prediction loops shared by every job (fit, tta-predict, and later lr-find,
// pseudo-label): one optimizer update per batch, the schedule driven by the update index.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "data/loader.h"
#include "loss/loss.h"
#include "model/model.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "train/progress.h"

namespace kg::train {

struct EpochResult {
  double loss = 0;        // mean training loss
  int64_t images = 0;
  double seconds = 0;
  double lr = 0;          // learning rate of the last update
  bool stopped = false;   // a stop signal arrived; the epoch is incomplete
};

// Changes a batch's model input and targets on the device (mixup/cutmix); empty = none.
using BatchHook = std::function<void(at::Tensor& x, at::Tensor& y, int64_t batch_index)>;

// Trains one epoch; `step` (optimizer updates so far) advances by one per batch.
EpochResult train_epoch(model::Network& net, optim::Optimizer& opt, const optim::Schedule& schedule,
                        const loss::Loss& loss, data::Loader& loader, const c10::Device& device, int64_t& step,
                        Progress& progress, const BatchHook& hook = {});

struct Predictions {
  at::Tensor probs;             // [N, K] float on the CPU, softmax of the logits
  at::Tensor targets;           // [N] int64 (undefined when unlabeled)
  std::vector<int64_t> rows;    // table row of each prediction
  double loss = 0;              // mean loss when a loss was given and targets exist
  int64_t images = 0;
  double seconds = 0;
};

// Evaluation mode, no gradients. Runs every batch of `loader`.
Predictions predict(model::Network& net, data::Loader& loader, const c10::Device& device, const loss::Loss* loss);

}  // namespace kg::train
