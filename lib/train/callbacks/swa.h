// Stochastic Weight Averaging (Izmailov et al. 2018) as Lightning's StochasticWeightAveraging runs it:
// from swa_epoch_start the lr anneals to swa_lr (torch.optim.swa_utils.SWALR, one position per epoch),
// the parameters are averaged at each epoch end, and after the last epoch the average replaces the
// weights and BatchNorm statistics are recomputed over the training data. Internal header: the callback
// registers itself as "swa" ([swa] section); tests and tools use the pieces directly.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "train/callback.h"

namespace torch::nn {
class Module;
}

namespace kg::train {

// Recipe section [swa]; each field's doc is in swa_fields() (train/callbacks/swa.cpp) and docs/reference.md.
struct SwaOptions {
  static SwaOptions load(const config::Tree& recipe);  // recipe.get<SwaOptions>() decodes it once
  bool enabled = false;
  double swa_epoch_start = 0.8;
  double swa_lr = 0.0;
  int64_t annealing_epochs = 10;
  std::string annealing_strategy = "cos";
  bool use_for_best = false;
  int64_t bn_batches = 0;
};

// Epochs trained before averaging starts, in a run of `epochs` (Lightning's swa_start, 0-based epoch index).
int64_t swa_start_epoch(const SwaOptions& o, int64_t epochs);
// torch.optim.swa_utils.SWALR (torch 1.13) stepped once per epoch from `lr0`: the lr of SWA epoch k (0 =
// the first). anneal_epochs = 0 gives swa_lr at once.
double swalr_lr(double lr0, double swa_lr, int64_t anneal_epochs, const std::string& strategy, int64_t k);

class SwaCallback : public Callback {
 public:
  explicit SwaCallback(SwaOptions o) : o_(std::move(o)) {}

  std::string name() const override { return "swa"; }
  int order() const override { return 20; }
  void on_step_begin(Trainer& t) override;
  void on_epoch_end(Trainer& t, EpochReport& r) override;
  void on_fit_end(Trainer& t) override;
  // After averaging, the SWA weights are the final model (checkpoints/last).
  bool replaces_weights_at_fit_end() const override { return n_ > 0; }
  // Tensors "cb.swa.<parameter name>"; {"n", "started", "start", "anneal", "lr0", "last_epoch"}.
  void save_state(model::TensorMap& tensors, nlohmann::json& state) const override;
  void load_state(const model::TensorMap& tensors, const nlohmann::json& state) override;
  // The parameter average during training; after the fit, the full state (BatchNorm buffers recalibrated).
  const model::TensorMap* extra_weights() const override;

  // --- the pieces the hooks use (tests, tools) ---
  // average += (w - average) / (n + 1) over `m`'s parameters (buffers are not averaged); n += 1.
  void accumulate(const torch::nn::Module& m);
  // Copies the average into `m`'s parameters (CheckpointError when the names or shapes differ).
  void apply_to(torch::nn::Module& m) const;
  const model::TensorMap& average() const { return avg_; }
  int64_t averaged() const { return n_; }

 private:
  // Starts SWA when `epoch` (0-based) reached the start; true while it runs.
  bool active(Trainer& t, int64_t epoch);

  SwaOptions o_;
  model::TensorMap avg_;    // parameter name -> running mean, on the model's device
  model::TensorMap final_;  // after on_fit_end: the SWA model's full state (CPU)
  int64_t n_ = 0;           // epochs averaged
  bool started_ = false;
  int64_t start_ = 0;        // first SWA epoch (0-based)
  int64_t anneal_ = 0;       // annealing epochs in force (the cap applied)
  double lr0_ = -1;          // schedule's lr at SWA start (< 0: not seen yet)
  double lr_ = -1;           // lr set for the current SWA epoch (< 0: none)
  int64_t last_epoch_ = -1;  // last averaged epoch (0-based)
};

}  // namespace kg::train
