// Prediction over a loader, shared by fit (validation, out-of-fold rows), tta-predict and later
// pseudo-label. The training loop itself is train/trainer.h.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "core/tasks.h"
#include "data/loader.h"
#include "device/precision.h"
#include "loss/loss.h"
#include "model/model.h"

namespace kg::device {
class ProcessGroup;
}

namespace kg::train {

struct Predictions {
  at::Tensor probs;    // [N, K] float on the CPU: softmax (multiclass), sigmoid (binary, multilabel), raw (regression)
  at::Tensor targets;  // multiclass int64 [N]; others float [N, K]; undefined when unlabeled
  std::vector<int64_t> rows;  // table row of each prediction
  double loss = 0;            // mean loss when a loss was given and targets exist
  // Masked-language-model batches (Inputs::predict): no probs (a vocabulary's outputs per token); `images` counts
  // the predicted tokens, `loss` is their mean, and `extra` holds masked_accuracy (top-1) and perplexity.
  std::map<std::string, double> extra;
  int64_t images = 0;
  double seconds = 0;
};

// With it on, prediction loops (predict, predict_views) check for SIGINT / SIGTERM between batches and throw
// Interrupted (exit 130 / 143): tta-predict and pseudo-label, whose whole job is prediction, and fit's out-of-fold
// predictions after its last update. Off (the default) inside the training loop, whose validation is followed by
// the checkpoint a signal must not skip.
void set_predictions_stop_on_signal(bool on);
// On for its scope.
struct PredictionsStopOnSignal {
  PredictionsStopOnSignal() { set_predictions_stop_on_signal(true); }
  ~PredictionsStopOnSignal() { set_predictions_stop_on_signal(false); }
  PredictionsStopOnSignal(const PredictionsStopOnSignal&) = delete;
  PredictionsStopOnSignal& operator=(const PredictionsStopOnSignal&) = delete;
};

// Evaluation mode, no gradients. Runs every batch of `loader`; `task` picks the output activation.
// `precision`: the forward pass under autocast (device.precision); outputs are converted to float32.
Predictions predict(model::Network& net, data::Loader& loader, const c10::Device& device, const loss::Loss* loss,
                    Task task = Task::multiclass, device::Precision precision = device::Precision::fp32);

// Data parallel evaluation: every rank predicted its data::shard_rows share of the same rows; afterwards
// every rank holds all predictions in the rows' order (probs, targets, rows, images, the mean loss),
// as one process would have made them. Each share must hold at least one row.
void gather_predictions(Predictions& p, device::ProcessGroup& group);

// Raw outputs (logits / values, float32 on the CPU) of every view of each batch: views[i] maps the model
// input batch to the i-th view's input (test-time augmentation); each batch is loaded once.
using InputView = std::function<at::Tensor(const at::Tensor&)>;
struct ViewOutputs {
  std::vector<at::Tensor> raw;  // one [N, K] per view
  at::Tensor targets;           // as Predictions::targets
  std::vector<int64_t> rows;
  int64_t images = 0;
  double seconds = 0;
};
ViewOutputs predict_views(model::Network& net, data::Loader& loader, const c10::Device& device,
                          device::Precision precision, const std::vector<InputView>& views);

}  // namespace kg::train
