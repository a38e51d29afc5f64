// Prediction over a loader, shared by fit (validation, out-of-fold rows), tta-predict and later
// pseudo-label. The training loop itself is train/trainer.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "data/loader.h"
#include "loss/loss.h"
#include "model/model.h"

namespace kg::train {

struct Predictions {
  at::Tensor probs;             // [N, K] float on the CPU: softmax (multiclass), sigmoid (binary, multilabel), raw (regression)
  at::Tensor targets;           // multiclass int64 [N]; others float [N, K]; undefined when unlabeled
  std::vector<int64_t> rows;    // table row of each prediction
  double loss = 0;              // mean loss when a loss was given and targets exist
  int64_t images = 0;
  double seconds = 0;
};

// Evaluation mode, no gradients. Runs every batch of `loader`; `task` picks the output activation.
Predictions predict(model::Network& net, data::Loader& loader, const c10::Device& device, const loss::Loss* loss,
                    const std::string& task = "multiclass");

}  // namespace kg::train
