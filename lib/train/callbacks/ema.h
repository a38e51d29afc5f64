// Exponential moving average of the weights (timm ModelEmaV3): a shadow copy of every parameter and
// buffer, pulled toward the model after each optimizer update, evaluated as the "ema" variant at each
// epoch end and written as ema.safetensors in every checkpoint. Internal header: the callback registers
// itself as "ema" ([ema] section); tests and tools use the class directly.
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

// Recipe section [ema]; each field's doc is in ema_fields() (train/callbacks/ema.cpp) and docs/reference.md.
struct EmaOptions {
  static EmaOptions load(const config::Tree& recipe);  // recipe.get<EmaOptions>() decodes it once
  bool enabled = false;
  double decay = 0.9998;
  bool warmup = false;
  double warmup_power = 2.0 / 3;
  double warmup_gamma = 1.0;
  int64_t every = 1;
  bool use_for_best = true;
};

// timm ModelEmaV3.get_decay(step) with update_after_step = 0 and min_decay = 0. `step` counts the
// optimizer updates including the current one (timm's num_updates, Trainer::state().step in on_step_end),
// so the first update copies the weights (decay 0).
double ema_decay(const EmaOptions& o, int64_t step);

class EmaCallback : public Callback {
 public:
  explicit EmaCallback(EmaOptions o) : o_(std::move(o)) {}

  std::string name() const override { return "ema"; }
  int order() const override { return 10; }
  void on_fit_start(Trainer& t) override;
  void on_step_end(Trainer& t) override;
  void on_epoch_end(Trainer& t, EpochReport& r) override;
  // Tensors "cb.ema.<state_dict name>" (CPU copies) and {"updates": n}.
  void save_state(model::TensorMap& tensors, nlohmann::json& state) const override;
  void load_state(const model::TensorMap& tensors, const nlohmann::json& state) override;
  const model::TensorMap* extra_weights() const override { return shadow_.empty() ? nullptr : &shadow_; }

  // --- the pieces the hooks use (tests, tools) ---
  // Binds the average to `m`'s parameters and buffers: a copy of them on their device, or the state
  // load_state restored (moved to their device; CheckpointError when names or shapes differ).
  void attach(const torch::nn::Module& m);
  // One EMA update after optimizer update `step`: floating tensors shadow.lerp_(model, 1 - decay),
  // integer buffers (num_batches_tracked) copied.
  void update(int64_t step);
  const model::TensorMap& shadow() const { return shadow_; }
  int64_t updates() const { return updates_; }
  bool restored() const { return restored_; }

 private:
  EmaOptions o_;
  model::TensorMap shadow_;                               // state_dict names -> the average
  std::vector<std::pair<at::Tensor, at::Tensor>> pairs_;  // (shadow, live model tensor)
  int64_t updates_ = 0;
  bool restored_ = false;  // load_state found a saved average
};

}  // namespace kg::train
