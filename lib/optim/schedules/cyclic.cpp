// Cyclical learning rates (Smith 2017) = PyTorch CyclicLR on the update index: the lr climbs from base_lr
// to optim.lr over step_size_up updates and falls back over step_size_down; triangular2 halves each cycle's
// amplitude, exp_range scales it by gamma^t. Momentum, when cycled, moves inversely (max at base_lr).
#include <cmath>

#include "core/error.h"
#include "optim/schedule.h"

namespace kg::optim {
namespace {

// Keys of [schedule] when name = "cyclic"; each field's doc is in cyclic_fields() below and docs/reference.md.
struct CyclicOptions {
  double base_lr = 0.0;
  std::optional<int64_t> step_size_up;
  std::optional<double> step_epochs_up;
  int64_t step_size_down = 0;
  double step_epochs_down = 0.0;
  std::string mode = "triangular";
  double gamma = 1.0;
  bool cycle_momentum = false;
  double base_momentum = 0.8;
  double max_momentum = 0.9;
};

class CyclicSchedule : public Schedule {
 public:
  CyclicSchedule(const CyclicOptions& o, const ScheduleContext& c) : o_(o), max_lr_(c.lr) {
    base_lr_ = o.base_lr > 0 ? o.base_lr : c.lr / 10.0;
    KG_CHECK(base_lr_ <= max_lr_, ConfigError, "schedule.base_lr = ", base_lr_, " is above optim.lr = ", max_lr_,
             " (the top of the cycle): expected base_lr <= lr");
    KG_CHECK(o.step_size_down == 0 || o.step_epochs_down == 0.0, ConfigError,
             "schedule.step_size_down and schedule.step_epochs_down are both set: give one");
    const int64_t up = steps_or_epochs(o.step_size_up, o.step_epochs_up, c.steps_per_epoch, "cyclic", "step_size_up",
                                       "step_epochs_up");
    int64_t down = o.step_size_down > 0 ? o.step_size_down : up;
    if (o.step_epochs_down > 0) {
      down = epochs_to_steps(o.step_epochs_down, c.steps_per_epoch);
      KG_CHECK(down >= 1, ConfigError, "schedule.step_epochs_down = ", o.step_epochs_down, " is 0 updates at ",
               c.steps_per_epoch, " updates per epoch: expected at least 1 update");
    }
    total_ = static_cast<double>(up + down);
    ratio_ = static_cast<double>(up) / total_;
  }

  double lr_at(int64_t step) const override {
    double scale = 0, amp = 0;
    shape(step, scale, amp);
    return base_lr_ + (max_lr_ - base_lr_) * scale * amp;
  }
  std::optional<double> momentum_at(int64_t step) const override {
    if (!o_.cycle_momentum) return std::nullopt;
    double scale = 0, amp = 0;
    shape(step, scale, amp);
    return o_.max_momentum - (o_.max_momentum - o_.base_momentum) * scale * amp;
  }

 private:
  // Position in the triangle (0 at base, 1 at the peak) and the amplitude factor, as CyclicLR.get_lr.
  void shape(int64_t step, double& scale, double& amp) const {
    const double t = static_cast<double>(std::max<int64_t>(step, 0));
    const double cycle = std::floor(1.0 + t / total_);
    const double x = 1.0 + t / total_ - cycle;
    scale = x <= ratio_ ? x / ratio_ : (x - 1.0) / (ratio_ - 1.0);
    if (o_.mode == "triangular2")
      amp = 1.0 / std::pow(2.0, cycle - 1.0);
    else if (o_.mode == "exp_range")
      amp = std::pow(o_.gamma, t);
    else
      amp = 1.0;
  }

  CyclicOptions o_;
  double max_lr_, base_lr_ = 0, total_ = 2, ratio_ = 0.5;
};

config::Fields<CyclicOptions> cyclic_fields() {
  config::Fields<CyclicOptions> f;
  f.field("base_lr", &CyclicOptions::base_lr, "lr at the bottom of each cycle; the top is optim.lr (0 = optim.lr / 10)")
      .min(0);
  f.field("step_size_up", &CyclicOptions::step_size_up,
          "optimizer updates from base_lr up to optim.lr (or step_epochs_up)")
      .min(1);
  f.field("step_epochs_up", &CyclicOptions::step_epochs_up,
          "epochs from base_lr up to optim.lr, rounded to whole updates (or step_size_up)")
      .positive();
  f.field("step_size_down", &CyclicOptions::step_size_down, "optimizer updates back down to base_lr (0 = as up)")
      .min(0);
  f.field("step_epochs_down", &CyclicOptions::step_epochs_down, "epochs back down to base_lr (0 = as up)").min(0);
  f.field("mode", &CyclicOptions::mode,
          "amplitude policy: triangular constant, triangular2 halved every cycle, exp_range times gamma^update")
      .choices({"triangular", "triangular2", "exp_range"});
  f.field("gamma", &CyclicOptions::gamma, "exp_range: amplitude factor per optimizer update").positive();
  f.field("cycle_momentum", &CyclicOptions::cycle_momentum, "cycle momentum / beta1 inversely to the lr");
  f.field("base_momentum", &CyclicOptions::base_momentum, "momentum / beta1 at the lr peak").range(0, 1);
  f.field("max_momentum", &CyclicOptions::max_momentum, "momentum / beta1 at base_lr").range(0, 1);
  return f;
}

KG_REGISTER(schedule_registry(), "cyclic", "cyclical lr between base_lr and optim.lr (PyTorch CyclicLR)",
            "[schedule]\nname = \"cyclic\"\nstep_epochs_up = 2\nmode = \"triangular2\"", cyclic_fields(),
            [](const CyclicOptions& o, const ScheduleContext& c) -> SchedulePtr {
              return std::make_unique<CyclicSchedule>(o, c);
            });

}  // namespace
}  // namespace kg::optim
