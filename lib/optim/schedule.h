// Learning-rate schedules: pure functions of the optimizer-update index, so lr-find, plots and tests
// can sample them without training. Each schedule is a component in schedule_registry() (one file each
// under optim/schedules/); the [schedule] section adds a linear warm-up in front of any of them.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/registry.h"
#include "config/recipe.h"

namespace kg::optim {

struct ScheduleContext {
  double lr = 1e-3;             // optim.lr: the peak learning rate
  int64_t total_steps = 1;      // optimizer updates in the whole run
  int64_t steps_per_epoch = 1;  // optimizer updates per epoch
};

class Schedule {
 public:
  virtual ~Schedule() = default;
  // The lr of update `step` (0-based optimizer-update index; never micro-batches).
  virtual double lr_at(int64_t step) const = 0;
  // Momentum / beta1 at `step`, when the schedule cycles it.
  virtual std::optional<double> momentum_at(int64_t step) const { return std::nullopt; }
  // Metric-driven schedules (plateau): called once after each validation with every value of that
  // epoch ("valid_loss", "train_loss", "accuracy", ...) and `step` = the number of updates done so far,
  // i.e. the index of the next update: a change applies to lr_at(s) for s >= step. Others ignore it.
  virtual void observe(int64_t step, const std::map<std::string, double>& values) {}
  // Checkpointable state (plateau's best / bad epochs / lr history); stateless schedules return {}.
  virtual nlohmann::json state() const { return nlohmann::json::object(); }
  virtual void load_state(const nlohmann::json& s) {}
};
using SchedulePtr = std::unique_ptr<Schedule>;

using ScheduleRegistry = Registry<SchedulePtr(const ScheduleContext&)>;
ScheduleRegistry& schedule_registry();

// The [schedule] section's own keys; the selected schedule adds its keys next to them.
// Recipe section [schedule]; each field's doc is in schedule_fields() (optim/schedule.cpp) and docs/reference.md.
struct ScheduleOptions {
  static ScheduleOptions load(const config::Tree& recipe);  // recipe.get<ScheduleOptions>() decodes it once
  std::string name = "one_cycle";
  int64_t warmup_steps = 0;
  double warmup_epochs = 0.0;
  double warmup_lr = 0.0;
};

// Builds [schedule] for a run: the named schedule, behind a linear warm-up when one is set (timm's
// warmup_prefix: the schedule then runs over the remaining total - W updates, starting after the warm-up).
SchedulePtr build_schedule(const config::Recipe& recipe, const ScheduleContext& ctx);

// lr (and momentum when the schedule cycles it) at every update 0..total-1, for plots and lr traces.
struct ScheduleTrace {
  std::vector<double> lr;
  std::vector<std::optional<double>> momentum;
};
ScheduleTrace sample(const Schedule& s, int64_t total_steps);

// Helpers for schedule components. Updates in `epochs` epochs, rounded to the nearest update.
int64_t epochs_to_steps(double epochs, int64_t steps_per_epoch);
// A length given by exactly one of schedule.<steps_key> (updates) or schedule.<epochs_key> (epochs), in
// updates; ConfigError when neither or both are set or the epochs round to no update.
int64_t steps_or_epochs(const std::optional<int64_t>& steps, const std::optional<double>& epochs,
                        int64_t steps_per_epoch, const std::string& schedule, const std::string& steps_key,
                        const std::string& epochs_key);

}  // namespace kg::optim
