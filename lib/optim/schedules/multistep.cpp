// Decay at given milestones = PyTorch MultiStepLR on the update index: lr * gamma^(milestones <= t).
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "optim/schedule.h"

namespace kg::optim {
namespace {

// Keys of [schedule] when name = "multistep"; each field's doc is in multistep_fields() below and docs/reference.md.
struct MultiStepOptions {
  std::optional<std::vector<int64_t>> milestones;
  std::optional<std::vector<double>> milestone_epochs;
  double gamma = 0.1;
};

// "" when the list is non-empty, positive and strictly increasing, else what is wrong (shown with the key's origin).
std::string check_increasing(const config::json& v) {
  if (v.empty()) return "expected at least one milestone, got []";
  for (size_t i = 0; i < v.size(); ++i) {
    if (!(v[i].get<double>() > 0)) return "expected milestones > 0, got " + v.dump();
    if (i > 0 && !(v[i].get<double>() > v[i - 1].get<double>()))
      return "expected strictly increasing milestones, got " + v.dump();
  }
  return "";
}

class MultiStepSchedule : public Schedule {
 public:
  MultiStepSchedule(const MultiStepOptions& o, const ScheduleContext& c) : lr_(c.lr), gamma_(o.gamma) {
    KG_CHECK(
        o.milestones || o.milestone_epochs, ConfigError,
        "schedule multistep needs schedule.milestones (in optimizer updates) or schedule.milestone_epochs (in epochs)");
    KG_CHECK(!(o.milestones && o.milestone_epochs), ConfigError,
             "schedule.milestones and schedule.milestone_epochs are both set: give the milestones in updates or in "
             "epochs, not both");
    if (o.milestones) {
      at_ = *o.milestones;
      return;
    }
    for (double e : *o.milestone_epochs) {
      const int64_t s = epochs_to_steps(e, c.steps_per_epoch);
      KG_CHECK(at_.empty() || s > at_.back(), ConfigError, "schedule.milestone_epochs: ", e,
               " and the milestone before it are both update ", s, " at ", c.steps_per_epoch,
               " updates per epoch: expected strictly increasing updates");
      KG_CHECK(s >= 1, ConfigError, "schedule.milestone_epochs: ", e, " is update 0 at ", c.steps_per_epoch,
               " updates per epoch: expected milestones after the first update");
      at_.push_back(s);
    }
  }
  double lr_at(int64_t step) const override {
    const auto passed = std::upper_bound(at_.begin(), at_.end(), step) - at_.begin();
    return lr_ * std::pow(gamma_, static_cast<double>(passed));
  }

 private:
  double lr_, gamma_;
  std::vector<int64_t> at_;
};

config::Fields<MultiStepOptions> multistep_fields() {
  config::Fields<MultiStepOptions> f;
  f.field("milestones", &MultiStepOptions::milestones,
          "optimizer updates at which the lr is multiplied by gamma (or milestone_epochs)")
      .check(check_increasing);
  f.field("milestone_epochs", &MultiStepOptions::milestone_epochs,
          "epochs at which the lr is multiplied by gamma (or milestones)")
      .check(check_increasing);
  f.field("gamma", &MultiStepOptions::gamma, "lr factor at each milestone").positive();
  return f;
}

KG_REGISTER(schedule_registry(), "multistep", "multiply the lr by gamma at each milestone (PyTorch MultiStepLR)",
            "[schedule]\nname = \"multistep\"\nmilestone_epochs = [3, 6, 8]\ngamma = 0.1", multistep_fields(),
            [](const MultiStepOptions& o, const ScheduleContext& c) -> SchedulePtr {
              return std::make_unique<MultiStepSchedule>(o, c);
            });

}  // namespace
}  // namespace kg::optim
