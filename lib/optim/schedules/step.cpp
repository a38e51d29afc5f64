// Step decay = PyTorch StepLR on the update index: lr * gamma^floor(t / step_size).
#include <cmath>

#include "core/error.h"
#include "optim/schedule.h"

namespace kg::optim {
namespace {

// Keys of [schedule] when name = "step"; each field's doc is in step_fields() below and docs/reference.md.
struct StepOptions {
  std::optional<int64_t> step_size;
  std::optional<double> step_epochs;
  double gamma = 0.1;
};

class StepSchedule : public Schedule {
 public:
  StepSchedule(const StepOptions& o, const ScheduleContext& c)
      : lr_(c.lr),
        gamma_(o.gamma),
        size_(steps_or_epochs(o.step_size, o.step_epochs, c.steps_per_epoch, "step", "step_size", "step_epochs")) {}
  double lr_at(int64_t step) const override {
    return lr_ * std::pow(gamma_, static_cast<double>(std::max<int64_t>(step, 0) / size_));
  }

 private:
  double lr_, gamma_;
  int64_t size_;
};

config::Fields<StepOptions> step_fields() {
  config::Fields<StepOptions> f;
  f.field("step_size", &StepOptions::step_size, "optimizer updates between two decays (or step_epochs)").min(1);
  f.field("step_epochs", &StepOptions::step_epochs,
          "epochs between two decays, rounded to whole updates (or step_size)")
      .positive();
  f.field("gamma", &StepOptions::gamma, "lr factor at each decay").positive();
  return f;
}

KG_REGISTER(schedule_registry(), "step", "multiply the lr by gamma every step_size updates (PyTorch StepLR)",
            "[schedule]\nname = \"step\"\nstep_epochs = 3\ngamma = 0.1", step_fields(),
            [](const StepOptions& o, const ScheduleContext& c) -> SchedulePtr {
              return std::make_unique<StepSchedule>(o, c);
            });

}  // namespace
}  // namespace kg::optim
