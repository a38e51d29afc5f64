// Exponential decay = PyTorch ExponentialLR on the update index: lr * gamma^t. gamma_per_epoch spreads the
// epoch's factor over its updates (gamma = gamma_per_epoch^(1 / updates per epoch)), so the decay is smooth.
#include <cmath>

#include "core/error.h"
#include "optim/schedule.h"

namespace kg::optim {
namespace {

// Keys of [schedule] when name = "exponential"; each field's doc is in exponential_fields() below and
// docs/reference.md.
struct ExponentialOptions {
  std::optional<double> gamma;
  std::optional<double> gamma_per_epoch;
};

class ExponentialSchedule : public Schedule {
 public:
  ExponentialSchedule(const ExponentialOptions& o, const ScheduleContext& c) : lr_(c.lr) {
    KG_CHECK(o.gamma || o.gamma_per_epoch, ConfigError,
             "schedule exponential needs schedule.gamma (per optimizer update) or schedule.gamma_per_epoch");
    KG_CHECK(
        !(o.gamma && o.gamma_per_epoch), ConfigError,
        "schedule.gamma and schedule.gamma_per_epoch are both set: give the decay per update or per epoch, not both");
    if (o.gamma) {
      gamma_ = *o.gamma;
    } else {
      gamma_ = *o.gamma_per_epoch;
      per_ = static_cast<double>(std::max<int64_t>(c.steps_per_epoch, 1));
    }
  }
  double lr_at(int64_t step) const override {
    return lr_ * std::pow(gamma_, static_cast<double>(std::max<int64_t>(step, 0)) / per_);
  }

 private:
  double lr_, gamma_ = 1.0, per_ = 1.0;
};

config::Fields<ExponentialOptions> exponential_fields() {
  config::Fields<ExponentialOptions> f;
  f.field("gamma", &ExponentialOptions::gamma, "lr factor per optimizer update (or gamma_per_epoch)").positive();
  f.field("gamma_per_epoch", &ExponentialOptions::gamma_per_epoch,
          "lr factor per epoch, spread smoothly over its updates (or gamma)")
      .positive();
  return f;
}

KG_REGISTER(schedule_registry(), "exponential", "multiply the lr by gamma every update (PyTorch ExponentialLR)",
            "[schedule]\nname = \"exponential\"\ngamma_per_epoch = 0.8", exponential_fields(),
            [](const ExponentialOptions& o, const ScheduleContext& c) -> SchedulePtr {
              return std::make_unique<ExponentialSchedule>(o, c);
            });

}  // namespace
}  // namespace kg::optim
