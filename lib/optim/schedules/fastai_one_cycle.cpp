#include "optim/schedules/fastai_one_cycle.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace kg::optim {
namespace {

// fastai's fit_one_cycle on its own step convention: position = update / total (so the last update
// sits just short of the end), combined_cos(pct_start, start, middle, end) for lr and momentum.
class FastaiOneCycle : public Schedule {
 public:
  FastaiOneCycle(double lr_max, int64_t total, double pct_start, double div, double div_final)
      : lr_max_(lr_max), total_(std::max<int64_t>(total, 1)), pct_(pct_start), div_(div), div_final_(div_final) {}
  double lr_at(int64_t step) const override {
    return combined(pos(step), lr_max_ / div_, lr_max_, lr_max_ / div_final_);
  }
  std::optional<double> momentum_at(int64_t step) const override { return combined(pos(step), 0.95, 0.85, 0.95); }

 private:
  double pos(int64_t step) const { return static_cast<double>(step) / static_cast<double>(total_); }
  static double sched_cos(double start, double end, double p) {
    return start + (1 + std::cos(M_PI * (1 - p))) * (end - start) / 2;
  }
  double combined(double p, double start, double middle, double end) const {
    // combine_scheds([pct, 1 - pct], [SchedCos(start, middle), SchedCos(middle, end)])
    if (p < pct_ || pct_ >= 1.0) return sched_cos(start, middle, pct_ > 0 ? std::min(p / pct_, 1.0) : 1.0);
    return sched_cos(middle, end, (p - pct_) / (1.0 - pct_));
  }
  double lr_max_;
  int64_t total_;
  double pct_, div_, div_final_;
};

}  // namespace

SchedulePtr fastai_one_cycle(double lr_max, int64_t total_steps, double pct_start, double div, double div_final) {
  return std::make_unique<FastaiOneCycle>(lr_max, total_steps, pct_start, div, div_final);
}

}  // namespace kg::optim
