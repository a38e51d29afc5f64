// Learning-rate schedules: pure functions of the optimizer-update index, so lr-find, plots and tests
// can sample them without training.
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "config/tree.h"
#include "core/registry.h"

namespace kg::optim {

struct ScheduleContext {
  double lr = 1e-3;           // optim.lr: the peak learning rate
  int64_t total_steps = 1;    // optimizer updates in the whole run
  int64_t steps_per_epoch = 1;
};

class Schedule {
 public:
  virtual ~Schedule() = default;
  virtual double lr_at(int64_t step) const = 0;
  // Momentum / beta1 at `step`, when the schedule cycles it.
  virtual std::optional<double> momentum_at(int64_t step) const { return std::nullopt; }
};
using SchedulePtr = std::unique_ptr<Schedule>;

using ScheduleRegistry = Registry<SchedulePtr(const ScheduleContext&)>;
ScheduleRegistry& schedule_registry();

struct ScheduleOptions {
  std::string name = "one_cycle";  ///< learning-rate schedule
};

SchedulePtr build_schedule(const config::Tree& recipe, const ScheduleContext& ctx);

}  // namespace kg::optim
