// fastai's fit_flat_cos (the "Ranger + flat-cos" recipe): optim.lr for pct_start of the run, then a cosine
// down to lr / div_final. fastai samples its schedule at t / total; kgtrain at t / (total - 1), like
// OneCycleLR, so the last update runs exactly at the final lr.
#include <cmath>

#include "core/error.h"
#include "optim/schedule.h"

namespace kg::optim {
namespace {

// Keys of [schedule] when name = "flat_cos"; each field's doc is in flat_cos_fields() below and docs/reference.md.
struct FlatCosOptions {
  double pct_start = 0.75;
  double div_final = 1e5;
};

class FlatCosSchedule : public Schedule {
 public:
  FlatCosSchedule(const FlatCosOptions& o, const ScheduleContext& c)
      : o_(o), lr_(c.lr), last_(static_cast<double>(c.total_steps - 1)) {}
  double lr_at(int64_t step) const override {
    if (last_ <= 0) return lr_;
    const double pos = std::min(static_cast<double>(std::max<int64_t>(step, 0)), last_) / last_;
    if (pos < o_.pct_start) return lr_;
    const double p = (pos - o_.pct_start) / (1.0 - o_.pct_start), end = lr_ / o_.div_final;
    return lr_ + (1.0 + std::cos(M_PI * (1.0 - p))) * (end - lr_) / 2.0;  // fastai's SchedCos
  }

 private:
  FlatCosOptions o_;
  double lr_, last_;
};

config::Fields<FlatCosOptions> flat_cos_fields() {
  config::Fields<FlatCosOptions> f;
  f.field("pct_start", &FlatCosOptions::pct_start, "fraction of the run at the flat lr, in [0, 1)")
      .min(0)
      .check([](const config::json& v) {
        return v.get<double>() < 1.0 ? std::string() : "expected a number in [0, 1), got " + v.dump();
      });
  f.field("div_final", &FlatCosOptions::div_final, "final lr = optim.lr / div_final").min(1);
  return f;
}

KG_REGISTER(schedule_registry(), "flat_cos", "fastai fit_flat_cos: flat optim.lr, then a cosine to lr/div_final",
            "[schedule]\nname = \"flat_cos\"\npct_start = 0.75", flat_cos_fields(),
            [](const FlatCosOptions& o, const ScheduleContext& c) -> SchedulePtr {
              return std::make_unique<FlatCosSchedule>(o, c);
            });

}  // namespace
}  // namespace kg::optim
