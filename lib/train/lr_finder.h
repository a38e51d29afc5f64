// The learning-rate finder (fastai 2.7 Learner.lr_find / LRFinder / Recorder / the suggestion functions):
// an exponential lr sweep of one optimizer update per step, the loss smoothed and debiased (AvgSmoothLoss),
// stopped when it diverges, and four suggestions read off the smoothed curve. The `[lr_find]` section.
//
// Three layers: the pure parts (sweep_lr, SmoothLoss, the suggestion functions), `sweep` (recording,
// stopping, suggesting over any update function) and `find_lr` (the recipe's training step on a network,
// which is left exactly as it was found: weights, buffers, requires_grad, gradients, mode and RNG).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <nlohmann/json.hpp>

#include "config/recipe.h"
#include "device/loss_scaler.h"
#include "device/precision.h"
#include "optim/optimizer.h"
#include "train/options.h"
#include "train/step.h"

namespace kg::data {
struct Batch;
class Loader;
}  // namespace kg::data
namespace kg::loss {
class Loss;
}
namespace kg::model {
class Network;
}

namespace kg::train {

// Recipe section [lr_find]; each field's doc is in lr_finder_fields() (train/lr_finder.cpp) and docs/reference.md.
struct LrFindOptions {
  // recipe.get<LrFindOptions>() decodes it once; ConfigError when start_lr >= end_lr.
  static LrFindOptions load(const config::Tree& recipe);
  double start_lr = 1e-7;
  double end_lr = 10;
  int64_t num_steps = 100;
  double beta = 0.98;
  bool stop_div = true;
  double div_factor = 4;
  std::string suggestion = "valley";
};

// The lr of sweep update i: start_lr * (end_lr / start_lr)^(i / num_steps) (fastai SchedExp).
double sweep_lr(const LrFindOptions& o, int64_t i);

// fastai AvgSmoothLoss: val = beta * val + (1 - beta) * loss, debiased by 1 - beta^count.
class SmoothLoss {
 public:
  explicit SmoothLoss(double beta) : beta_(beta) {}
  double add(double loss);  // returns the smoothed value after `loss`
 private:
  double beta_, val_ = 0, pow_ = 1;
};

// The points the suggestions look at (fastai lr_find): recorded [num_steps / 10 : -5] (Python slice
// semantics), cut at the first non-finite loss.
struct LrCurve {
  std::vector<double> lrs, losses;
};
LrCurve suggestion_curve(const std::vector<double>& lrs, const std::vector<double>& smoothed, int64_t num_steps);

// fastai's suggestion functions on a curve of at least 2 points (slide: lr_diff + 1).
// valley: the longest decreasing subsequence; the lr a half-third into it. `index`: the chosen point.
double suggest_valley(const LrCurve& c, int64_t* index = nullptr);
// slide: the interval slide rule on np.gradient of the losses; empty when the curve is too short.
std::optional<double> suggest_slide(const LrCurve& c, int64_t lr_diff = 15, double thresh = 0.005,
                                    double adjust_value = 1.0);
// minimum: the lr at the lowest loss / 10.
double suggest_minimum(const LrCurve& c);
// steep: the lr where (loss[i+1] - loss[i]) / (log lr[i+1] - log lr[i]) is lowest.
double suggest_steep(const LrCurve& c);

// The suggestion names in report order.
const std::vector<std::string>& suggestion_names();

struct LrFindResult {
  LrFindOptions options;
  std::vector<double> lrs, losses, smoothed;  // one per update made
  bool stopped_early = false;
  std::string stop_reason;                                   // why it stopped before num_steps ("" when it did not)
  std::map<std::string, std::optional<double>> suggestions;  // every name of suggestion_names(); empty = n/a
  std::string chosen;                                        // options.suggestion
  double lr = 0;                                             // the chosen suggestion
  std::vector<std::string> notes;                            // disagreement (> 10x), unavailable suggestions
  double seconds = 0;                                        // the sweep's wall time
  int64_t steps() const { return static_cast<int64_t>(lrs.size()); }
  // lr_find.json: {"suggestions": {...}, "chosen", "lr", "steps", "stopped_early", ...}.
  nlohmann::json to_json() const;
};

// Fills suggestions, chosen, lr and notes from the recorded curve. ConfigError (exit 2) when fewer
// than 2 points survive the trimming, or the chosen suggestion cannot be computed.
void suggest(LrFindResult& r);

// Makes sweep update i at `lr`; returns its loss (non-finite: nothing was updated).
using LrUpdateFn = std::function<double(int64_t i, double lr)>;
// Called after each recorded update with the result so far (progress output).
using LrProgressFn = std::function<void(const LrFindResult& so_far)>;
// The sweep over any update: records lr, loss and smoothed loss per update, stops on divergence
// (stop_div), a non-finite loss or num_steps, then suggests. Polls the stop signal between updates
// (Interrupted, exit 130/143).
LrFindResult sweep(const LrFindOptions& o, const LrUpdateFn& update, const LrProgressFn& progress = {});

// One epoch of training micro-batches in fit's order.
class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual int64_t size() const = 0;       // micro-batches in the epoch
  virtual bool next(data::Batch& b) = 0;  // false at the end of the epoch
};
using BatchSourceFn = std::function<std::unique_ptr<BatchSource>(int64_t epoch)>;
std::unique_ptr<BatchSource> loader_source(std::unique_ptr<data::Loader> loader);

struct FinderParts {
  model::Network* net = nullptr;         // on `device`; left exactly as it was
  const config::Recipe* recipe =
      nullptr;  // [optim] (built here, thrown away), [train]: accumulation, clipping, freezing
  const loss::Loss* loss = nullptr;
  c10::Device device = c10::Device(c10::kCPU);
  device::Precision precision = device::Precision::fp32;
  device::LossScaler scaler;  // fp16: the loss scaler fit would start with
  BatchSourceFn batches;      // epoch 0, 1, ... as the sweep needs them
  std::function<void(at::Tensor& x, at::Tensor& y, int64_t epoch, int64_t batch_index)> mix;  // empty = none
  LrProgressFn progress;                                                                      // optional
};

// One sweep update with fit's training step (train/step.h): the recipe's optimizer (every group at the
// sweep lr times its multiplier), the freezing and layer-group multipliers of fit's first epoch,
// train.accum_steps micro-batches per update in fit's groups, mixing, the forward pass under autocast,
// and fit's gradient policy (fp16 unscaling, clipping, a skipped update when the loss or a gradient is
// not finite). Changes the network: find_lr puts it back.
class SweepStep {
 public:
  explicit SweepStep(const FinderParts& p);
  ~SweepStep();
  // One update at `lr` over the next batches; the update's mean loss (recorded also when it was skipped).
  double update(double lr);
  // How the last update went (applied, skipped as non-finite, fp16 scale overflow).
  const UpdateResult& last() const { return last_; }
  void drop_gradients();

 private:
  void open_epoch(int64_t e);
  FinderParts p_;
  TrainOptions topt_;
  GradientPolicy policy_;
  device::LossScaler scaler_;
  MicroStep step_;
  std::unique_ptr<optim::Optimizer> opt_;
  std::vector<at::Tensor> params_;
  std::unique_ptr<BatchSource> src_;
  int64_t epoch_ = 0;
  UpdateResult last_;
};

// The sweep with the recipe's training step: train.accum_steps micro-batches per update, the recipe's
// optimizer (every group at the sweep lr times its multiplier), the freezing and group multipliers of
// fit's first epoch, train.clip_grad_value / agc / clip_grad_norm, the forward pass under autocast.
LrFindResult find_lr(const LrFindOptions& o, const FinderParts& p);

}  // namespace kg::train
