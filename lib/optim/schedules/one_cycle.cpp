// One-cycle policy (Smith & Topin 2017) with fastai's defaults (fit_one_cycle: div 25, div_final 1e5,
// pct_start 0.25, moms 0.95/0.85/0.95) and PyTorch OneCycleLR's step convention: the warm-up ends at
// step pct_start*total - 1 and the final lr is reached at step total - 1.
#include <cmath>

#include "core/error.h"
#include "optim/schedule.h"

namespace kg::optim {
namespace {

// Keys of [schedule] when name = "one_cycle"; each field's doc is in one_cycle_fields() below and docs/reference.md.
struct OneCycleOptions {
  double pct_start = 0.25;
  double div = 25.0;
  double div_final = 1e5;
  std::vector<double> moms{0.95, 0.85, 0.95};
  std::string anneal = "cos";
  bool cycle_momentum = true;
};

class OneCycle : public Schedule {
 public:
  OneCycle(const OneCycleOptions& o, const ScheduleContext& c) : o_(o), max_lr_(c.lr), total_(c.total_steps) {
    KG_CHECK(total_ >= 2, ConfigError, "schedule one_cycle needs at least 2 optimizer updates, the run has ", total_,
             " (raise train.epochs or lower train.batch_size)");
    warm_end_ = o.pct_start * static_cast<double>(total_) - 1.0;
  }

  double lr_at(int64_t step) const override {
    double lo = max_lr_ / o_.div, end = max_lr_ / o_.div_final;
    return phase(step, lo, max_lr_, max_lr_, end);
  }
  std::optional<double> momentum_at(int64_t step) const override {
    if (!o_.cycle_momentum) return std::nullopt;
    return phase(step, o_.moms[0], o_.moms[1], o_.moms[1], o_.moms[2]);
  }

 private:
  double anneal(double start, double end, double pct) const {
    if (o_.anneal == "linear") return start + (end - start) * pct;
    return end + (start - end) / 2.0 * (std::cos(M_PI * pct) + 1.0);
  }
  double phase(int64_t step, double a0, double a1, double b0, double b1) const {
    double s = static_cast<double>(std::min<int64_t>(std::max<int64_t>(step, 0), total_ - 1));
    if (s <= warm_end_) return anneal(a0, a1, warm_end_ > 0 ? s / warm_end_ : 1.0);
    double last = static_cast<double>(total_ - 1);
    return anneal(b0, b1, (s - warm_end_) / (last - warm_end_));
  }

  OneCycleOptions o_;
  double max_lr_;
  int64_t total_;
  double warm_end_;
};

config::Fields<OneCycleOptions> one_cycle_fields() {
  config::Fields<OneCycleOptions> f;
  f.field("pct_start", &OneCycleOptions::pct_start, "fraction of updates spent warming up").range(0, 1);
  f.field("div", &OneCycleOptions::div, "start lr = optim.lr / div").positive();
  f.field("div_final", &OneCycleOptions::div_final, "final lr = optim.lr / div_final").positive();
  f.field("moms", &OneCycleOptions::moms, "momentum or beta1 at start, at the peak lr, at the end").size(3).range(0, 1);
  f.field("anneal", &OneCycleOptions::anneal, "shape of both phases").choices({"cos", "linear"});
  f.field("cycle_momentum", &OneCycleOptions::cycle_momentum, "cycle momentum / beta1 inversely to the lr");
  return f;
}

KG_REGISTER(schedule_registry(), "one_cycle", "fastai fit_one_cycle: warm up to optim.lr, anneal to lr/div_final",
            "[schedule]\nname = \"one_cycle\"\npct_start = 0.25", one_cycle_fields(),
            [](const OneCycleOptions& o, const ScheduleContext& c) -> SchedulePtr {
              return std::make_unique<OneCycle>(o, c);
            });

}  // namespace
}  // namespace kg::optim
