// Cosine annealing. One cycle over the whole run = PyTorch CosineAnnealingLR(T_max = total - 1): the last
// update runs at min_lr (like fastai's annealing, and like one_cycle's end). With cycle_steps / cycle_epochs:
// SGDR (Loshchilov & Hutter 2017) = CosineAnnealingWarmRestarts(T_0, T_mult): cycle i lasts T_0 * mult^i
// updates and restarts at the peak instead of running its own last update at min_lr; cycle_mult may be
// fractional and cycle_decay lowers each restart's peak, as in timm's CosineLRScheduler.
#include <cmath>

#include "core/error.h"
#include "optim/schedule.h"

namespace kg::optim {
namespace {

// Keys of [schedule] when name = "cosine"; each field's doc is in cosine_fields() below and docs/reference.md.
struct CosineOptions {
  double min_lr = 0.0;
  int64_t cycle_steps = 0;
  double cycle_epochs = 0.0;
  double cycle_mult = 1.0;
  double cycle_decay = 1.0;
};

class CosineSchedule : public Schedule {
 public:
  CosineSchedule(const CosineOptions& o, const ScheduleContext& c)
      : o_(o), lr_(c.lr), last_(static_cast<double>(c.total_steps - 1)) {
    KG_CHECK(o.cycle_steps == 0 || o.cycle_epochs == 0.0, ConfigError,
             "schedule.cycle_steps and schedule.cycle_epochs are both set: give the cycle in updates or in epochs, not "
             "both");
    KG_CHECK(o.min_lr <= c.lr, ConfigError, "schedule.min_lr = ", o.min_lr, " is above optim.lr = ", c.lr,
             ": expected min_lr <= lr");
    cycle_ = o.cycle_steps;
    if (o.cycle_epochs > 0) {
      cycle_ = epochs_to_steps(o.cycle_epochs, c.steps_per_epoch);
      KG_CHECK(cycle_ >= 1, ConfigError, "schedule.cycle_epochs = ", o.cycle_epochs, " is 0 updates at ",
               c.steps_per_epoch, " updates per epoch: expected at least 1 update");
    }
  }

  double lr_at(int64_t step) const override {
    const int64_t t = std::max<int64_t>(step, 0);
    if (cycle_ == 0) {
      if (last_ <= 0) return lr_;
      return anneal(lr_, std::min(static_cast<double>(t), last_) / last_);
    }
    int64_t i = 0;
    double t_cur = 0, t_i = static_cast<double>(cycle_);
    if (o_.cycle_mult == 1.0) {
      i = t / cycle_;
      t_cur = static_cast<double>(t - i * cycle_);
    } else {  // cycles grow geometrically: a few iterations even for long runs
      double start = 0;
      while (static_cast<double>(t) >= start + t_i) {
        start += t_i;
        t_i *= o_.cycle_mult;
        ++i;
      }
      t_cur = static_cast<double>(t) - start;
    }
    return anneal(lr_ * std::pow(o_.cycle_decay, static_cast<double>(i)), t_cur / t_i);
  }

 private:
  double anneal(double peak, double pct) const {
    return o_.min_lr + (peak - o_.min_lr) * (1.0 + std::cos(M_PI * pct)) / 2.0;
  }

  CosineOptions o_;
  double lr_, last_;
  int64_t cycle_ = 0;
};

config::Fields<CosineOptions> cosine_fields() {
  config::Fields<CosineOptions> f;
  f.field("min_lr", &CosineOptions::min_lr,
          "lr at the bottom of the cosine (reached at the last update without restarts)")
      .min(0);
  f.field("cycle_steps", &CosineOptions::cycle_steps,
          "updates in the first cycle; restarts after it (0 = one cycle over the run)")
      .min(0);
  f.field("cycle_epochs", &CosineOptions::cycle_epochs,
          "epochs in the first cycle, rounded to whole updates (0 = one cycle over the run)")
      .min(0);
  f.field("cycle_mult", &CosineOptions::cycle_mult,
          "each cycle is cycle_mult times longer than the one before (SGDR T_mult; may be fractional)")
      .min(1);
  f.field("cycle_decay", &CosineOptions::cycle_decay,
          "each restart's peak lr is cycle_decay times the one before (timm)")
      .positive();
  return f;
}

KG_REGISTER(schedule_registry(), "cosine", "cosine annealing to min_lr, optionally with warm restarts (SGDR)",
            "[schedule]\nname = \"cosine\"\nmin_lr = 1e-6\nwarmup_epochs = 1", cosine_fields(),
            [](const CosineOptions& o, const ScheduleContext& c) -> SchedulePtr {
              return std::make_unique<CosineSchedule>(o, c);
            });

}  // namespace
}  // namespace kg::optim
