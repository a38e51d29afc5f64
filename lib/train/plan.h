// The training plan: which learning rate, momentum, layer-group multipliers and frozen groups apply
// at every optimizer update and epoch. One phase for ordinary runs (the recipe's [schedule]); two for
// train.mode = "fine_tune" (fastai: one-cycle on the head with the body frozen, then one-cycle on all
// groups with discriminative rates). Gradual unfreezing (train.freeze + train.unfreeze_every) thaws one
// more group every N epochs. A pure function of (update, epoch) apart from metric-driven schedules
// (plateau), whose state is checkpointed.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/recipe.h"
#include "optim/schedule.h"

namespace kg::train {

struct Phase {
  int64_t epochs = 0;
  int64_t first_step = 0;             // update index where the phase starts
  optim::SchedulePtr schedule;        // sampled at (update - first_step)
  std::vector<double> group_lr_mult;  // per layer group; empty = the optimizer's own multipliers
  int64_t frozen_groups = 0;          // layer groups frozen (from the stem) at the phase's start
};

class Plan {
 public:
  // Optimizer updates in `epoch` of a run of `epochs` (progressive resizing may change the batch size).
  using StepsOf = std::function<int64_t(int64_t epoch, int64_t epochs)>;
  // `epochs` = train.epochs (fine_tune adds train.freeze_epochs before them); `group_names` = the
  // model's layer groups, stem first. ConfigError when freezing cannot apply (one group, freeze too large).
  Plan(const config::Recipe& recipe, int64_t epochs, StepsOf steps_of, std::vector<std::string> group_names);

  int64_t epochs() const { return epochs_; }
  int64_t steps_in_epoch(int64_t epoch) const { return steps_of_(epoch, epochs_); }
  int64_t first_step_of_epoch(int64_t epoch) const;
  int64_t total_steps() const { return first_step_of_epoch(epochs_); }
  const std::string& mode() const { return mode_; }

  double lr_at(int64_t step) const;
  std::optional<double> momentum_at(int64_t step) const;
  // Layer-group multipliers in force at `epoch` (nullptr = the optimizer's own).
  const std::vector<double>* group_lr_mult(int64_t epoch) const;
  // Layer groups frozen during `epoch` (0 = none), counted from the stem.
  int64_t frozen_groups(int64_t epoch) const;
  // Plateau schedules see each validation.
  void observe(int64_t step, const std::map<std::string, double>& values);

  // Time budget: the run now has `epochs` epochs; schedules are rebuilt over the new length (the
  // update index keeps counting, so the curve is stretched or compressed, never cut off).
  void rescale(int64_t epochs);

  nlohmann::json state() const;
  void load_state(const nlohmann::json& s);
  // One line for the log.
  std::string describe() const;

 private:
  const Phase& phase_of_step(int64_t step) const;
  const Phase& phase_of_epoch(int64_t epoch) const;
  void build();

  config::Recipe recipe_;  // a copy: plans outlive the caller's recipe in tests and tools
  int64_t epochs_, train_epochs_, num_groups_;
  StepsOf steps_of_;
  std::vector<std::string> group_names_;
  std::string mode_;
  int64_t freeze_ = 0, unfreeze_every_ = 0;
  std::vector<Phase> phases_;
};

// fastai's even_mults(start, stop, n): n values spaced geometrically from start to stop.
std::vector<double> even_mults(double start, double stop, int64_t n);

}  // namespace kg::train
