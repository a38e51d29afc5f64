// The `time_budget` callback (on when run.time_limit is set): Kaggle's 9-hour and Colab's session
// limits. After the first epoch it measures the time per epoch (training + validation + saving) and,
// when the remaining epochs would overrun the deadline, shortens the run: the plan is rescaled to the
// epochs that fit, so the schedule still completes (warm-up, annealing) instead of being cut off.
// Inside an epoch it stops at the step boundary that still leaves time for the final validation,
// checkpoint and predictions.
#include <algorithm>
#include <cmath>

#include "train/trainer.h"

namespace kg::train {
namespace {

using Clock = std::chrono::steady_clock;
double secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

class TimeBudget : public Callback {
 public:
  std::string name() const override { return "time_budget"; }
  int order() const override { return 95; }
  void on_fit_start(Trainer& t) override {
    last_epoch_end_ = Clock::now();
    last_step_end_ = last_epoch_end_;
  }
  void on_step_end(Trainer& t) override {
    last_step_end_ = Clock::now();
    if (!t.io().deadline) return;
    // Keep room for one validation + checkpoint + the job's predictions (twice the measured epoch end).
    double reserve = 2.0 * end_seconds_ + 5.0;
    if (secs(*t.io().deadline - last_step_end_) < reserve)
      t.request_stop("time budget: " + std::to_string(static_cast<int64_t>(secs(*t.io().deadline - last_step_end_))) +
                         " s left, stopping mid-epoch to save and predict",
                     /*mid_epoch=*/true, "time_budget");
  }
  void on_epoch_end(Trainer& t, EpochReport& r) override {
    auto now = Clock::now();
    end_seconds_ = std::max(end_seconds_, secs(now - last_step_end_));
    double epoch_s = secs(now - last_epoch_end_) + end_seconds_;  // checkpoint writing comes after this hook
    last_epoch_end_ = now;
    if (!t.io().deadline) return;
    const int64_t done = t.state().epoch, planned = t.plan().epochs();
    if (done >= planned) return;
    double left = secs(*t.io().deadline - now) - 2.0 * end_seconds_ - 5.0;
    int64_t fit = static_cast<int64_t>(std::floor(left / std::max(epoch_s, 1e-3)));
    if (done + fit >= planned) return;
    int64_t epochs = std::max<int64_t>(done + std::max<int64_t>(fit, 0), done + 1);
    if (fit <= 0) {
      t.request_stop(
          "time budget: no time for another epoch (" + std::to_string(static_cast<int64_t>(left)) + " s left)", false,
          "time_budget");
      return;
    }
    t.log("  time budget: " + std::to_string(static_cast<int64_t>(epoch_s)) + " s per epoch, " +
          std::to_string(static_cast<int64_t>(left)) + " s left: " + std::to_string(planned) + " epochs -> " +
          std::to_string(epochs) + " (schedule rescaled to finish)");
    t.plan().rescale(epochs);
    r.values["planned_epochs"] = static_cast<double>(epochs);
  }

 private:
  Clock::time_point last_epoch_end_, last_step_end_;
  double end_seconds_ = 0;  // validation + bookkeeping at an epoch end
};

KG_REGISTER(callback_registry(), "time_budget",
            "plans the epochs to finish inside run.time_limit and stops in time to save and predict",
            "[run]\ntime_limit = \"8h45m\"", config::Fields<config::NoOptions>(),
            [](const config::NoOptions&, const config::Recipe& recipe) -> CallbackPtr {
              return recipe.get<RunOptions>().time_limit.empty() ? nullptr : std::make_unique<TimeBudget>();
            });

}  // namespace
}  // namespace kg::train
