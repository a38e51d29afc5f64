// Polynomial decay over the whole run (PyTorch PolynomialLR with total_iters = total - 1, plus timm's
// min_lr floor): min_lr + (lr - min_lr) * (1 - t / (total - 1))^power, so the last update runs at min_lr.
#include <cmath>

#include "core/error.h"
#include "optim/schedule.h"

namespace kg::optim {
namespace {

// Keys of [schedule] when name = "poly"; each field's doc is in poly_fields() below and docs/reference.md.
struct PolyOptions {
  double power = 1.0;
  double min_lr = 0.0;
};

class PolySchedule : public Schedule {
 public:
  PolySchedule(const PolyOptions& o, const ScheduleContext& c)
      : o_(o), lr_(c.lr), last_(static_cast<double>(c.total_steps - 1)) {
    KG_CHECK(o.min_lr <= c.lr, ConfigError, "schedule.min_lr = ", o.min_lr, " is above optim.lr = ", c.lr,
             ": expected min_lr <= lr");
  }
  double lr_at(int64_t step) const override {
    if (last_ <= 0) return lr_;
    const double t = std::min(static_cast<double>(std::max<int64_t>(step, 0)), last_);
    return o_.min_lr + (lr_ - o_.min_lr) * std::pow(1.0 - t / last_, o_.power);
  }

 private:
  PolyOptions o_;
  double lr_, last_;
};

config::Fields<PolyOptions> poly_fields() {
  config::Fields<PolyOptions> f;
  f.field("power", &PolyOptions::power, "exponent of the decay (1 = linear)").positive();
  f.field("min_lr", &PolyOptions::min_lr, "lr at the last update").min(0);
  return f;
}

KG_REGISTER(schedule_registry(), "poly", "polynomial decay from optim.lr to min_lr over the run (PyTorch PolynomialLR)",
            "[schedule]\nname = \"poly\"\npower = 0.9", poly_fields(),
            [](const PolyOptions& o, const ScheduleContext& c) -> SchedulePtr {
              return std::make_unique<PolySchedule>(o, c);
            });

}  // namespace
}  // namespace kg::optim
