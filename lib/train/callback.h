// Callbacks: the training loop's extension points (fastai/Lightning callbacks). Each callback is a
// registered component with its own recipe section ([ema], [swa], [early_stopping], ...); the loop
// calls every enabled one at fixed hooks, in registration-rank order:
//
//   fit start -> { epoch begin -> (step begin -> grads ready -> step end)* -> epoch end }* -> fit end
//
// "step" is one optimizer update (all micro-batches of an accumulation group). Callbacks keep their
// own state and hand it to checkpoints (save_state/load_state), so resume continues them exactly.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/registry.h"
#include "config/recipe.h"
#include "model/weights/safetensors.h"

namespace kg::train {

class Trainer;

// A set of weights evaluated at the end of an epoch besides the raw model (EMA, SWA).
struct Variant {
  std::string name;  // "ema", "swa": metric keys get the prefix "<name>_"
  const model::TensorMap* weights = nullptr;
  std::map<std::string, double> values;  // valid_loss and every metric, unprefixed
  bool candidate_for_best = true;        // may become checkpoints/best when its monitor value wins
};

// What the loop knows when an epoch ends; callbacks may add values and variants.
struct EpochReport {
  int64_t epoch = 0;                     // epochs completed (1-based)
  std::map<std::string, double> values;  // train_loss, valid_loss, lr, every metric, ema_*, ...
  std::vector<Variant> variants;
  bool improved = false;  // set by the loop after selecting "best"
  std::string best_from;  // "model" or a variant's name, when improved
};

class Callback {
 public:
  virtual ~Callback() = default;
  virtual std::string name() const = 0;
  // Hook order: lower first. Below 50 the callback runs before the loop chooses "best" at epoch end
  // (ema 10, swa 20); 50 and above after it (early_stopping 50, metrics_log 80, plots 85, checkpoint 90).
  virtual int order() const = 0;
  virtual void on_fit_start(Trainer&) {}
  virtual void on_epoch_begin(Trainer&) {}
  // After the schedule set this update's lr/momentum: a callback may override them (SWA).
  virtual void on_step_begin(Trainer&) {}
  // Gradients of the whole accumulation group are ready (unscaled, before clipping and the update).
  virtual void on_grads_ready(Trainer&) {}
  // After the optimizer update (skipped updates do not call it).
  virtual void on_step_end(Trainer&) {}
  // After validation of the raw weights (values filled); before "best" is chosen and checkpoints written.
  virtual void on_epoch_end(Trainer&, EpochReport&) {}
  // After the last epoch, before the final checkpoint (SWA swaps in its average here).
  virtual void on_fit_end(Trainer&) {}
  // Tensors under "cb.<name>." and a JSON object; restored before on_fit_start on resume.
  virtual void save_state(model::TensorMap& tensors, nlohmann::json& state) const {}
  virtual void load_state(const model::TensorMap& tensors, const nlohmann::json& state) {}
  // True when on_fit_end leaves other weights in the model (SWA): the loop saves checkpoints/last again.
  virtual bool replaces_weights_at_fit_end() const { return false; }
  // Weights written beside the model in each checkpoint as <name>.safetensors (EMA, SWA).
  virtual const model::TensorMap* extra_weights() const { return nullptr; }
};
using CallbackPtr = std::unique_ptr<Callback>;

// A callback's factory returns nullptr when its section disables it.
using CallbackRegistry = Registry<CallbackPtr(const config::Recipe&)>;
CallbackRegistry& callback_registry();

// Every enabled callback of the recipe, sorted by order().
std::vector<CallbackPtr> build_callbacks(const config::Recipe& recipe);

}  // namespace kg::train
