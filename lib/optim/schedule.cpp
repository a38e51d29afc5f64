#include "optim/schedule.h"

#include <algorithm>
#include <cmath>

#include "config/sections.h"
#include "core/error.h"

namespace kg::optim {

ScheduleRegistry& schedule_registry() {
  static ScheduleRegistry r("schedule");
  return r;
}

int64_t epochs_to_steps(double epochs, int64_t steps_per_epoch) {
  // Clamped to +-2^62: llround of a value past int64 is undefined (1e300 epochs read as -2^63 updates).
  const double steps = epochs * static_cast<double>(std::max<int64_t>(steps_per_epoch, 1));
  constexpr double kLimit = 4611686018427387904.0;
  return std::llround(std::clamp(steps, -kLimit, kLimit));
}

int64_t steps_or_epochs(const std::optional<int64_t>& steps, const std::optional<double>& epochs,
                        int64_t steps_per_epoch, const std::string& schedule, const std::string& steps_key,
                        const std::string& epochs_key) {
  KG_CHECK(steps || epochs, ConfigError, "schedule ", schedule, " needs schedule.", steps_key,
           " (in optimizer updates) or schedule.", epochs_key, " (in epochs)");
  KG_CHECK(!(steps && epochs), ConfigError, "schedule.", steps_key, " and schedule.", epochs_key,
           " are both set: give the length in updates or in epochs, not both");
  if (steps) return *steps;
  const int64_t n = epochs_to_steps(*epochs, steps_per_epoch);
  KG_CHECK(n >= 1, ConfigError, "schedule.", epochs_key, " = ", *epochs, " is ", n, " updates at ", steps_per_epoch,
           " updates per epoch: expected at least 1 update");
  return n;
}

namespace {
config::Fields<ScheduleOptions> schedule_fields() {
  config::Fields<ScheduleOptions> f;
  f.field("name", &ScheduleOptions::name, "learning-rate schedule (counts optimizer updates)").kind("schedule");
  f.field("warmup_steps", &ScheduleOptions::warmup_steps,
          "linear warm-up in optimizer updates before the schedule starts (0 = none)")
      .min(0);
  f.field("warmup_epochs", &ScheduleOptions::warmup_epochs,
          "linear warm-up in epochs, rounded to whole updates (0 = none; not with warmup_steps)")
      .min(0);
  f.field("warmup_lr", &ScheduleOptions::warmup_lr,
          "lr at update 0 of the warm-up, ramped linearly to the schedule's start")
      .min(0);
  return f;
}
KG_REGISTER_SECTION("schedule", "the learning-rate schedule", schedule_fields().schema(), "schedule");

struct ConstantOptions {};
class Constant : public Schedule {
 public:
  explicit Constant(double lr) : lr_(lr) {}
  double lr_at(int64_t) const override { return lr_; }

 private:
  double lr_;
};
KG_REGISTER(schedule_registry(), "constant", "optim.lr at every step", "[schedule]\nname = \"constant\"",
            config::Fields<ConstantOptions>(), [](const ConstantOptions&, const ScheduleContext& c) -> SchedulePtr {
              return std::make_unique<Constant>(c.lr);
            });

// timm's warmup_prefix=True: updates 0..W-1 ramp linearly from warmup_lr to the main schedule's first lr;
// the main schedule was built for total - W updates and sees update t as t - W.
// (= PyTorch SequentialLR([LinearLR(warmup_lr/lr, 1, W), main], milestones=[W]) for schedules starting at lr.)
class Warmup : public Schedule {
 public:
  Warmup(SchedulePtr main, int64_t warmup_steps, double warmup_lr)
      : main_(std::move(main)), w_(warmup_steps), warmup_lr_(warmup_lr) {}

  double lr_at(int64_t step) const override {
    if (step >= w_) return main_->lr_at(step - w_);
    const double t = static_cast<double>(std::max<int64_t>(step, 0));
    return warmup_lr_ + (main_->lr_at(0) - warmup_lr_) * t / static_cast<double>(w_);
  }
  std::optional<double> momentum_at(int64_t step) const override {
    return main_->momentum_at(std::max<int64_t>(step - w_, 0));
  }
  // A metric seen during the warm-up takes effect when the main schedule starts.
  void observe(int64_t step, const std::map<std::string, double>& values) override {
    main_->observe(std::max<int64_t>(step - w_, 0), values);
  }
  nlohmann::json state() const override { return main_->state(); }
  void load_state(const nlohmann::json& s) override { main_->load_state(s); }

 private:
  SchedulePtr main_;
  int64_t w_;
  double warmup_lr_;
};
}  // namespace

ScheduleOptions ScheduleOptions::load(const config::Tree& recipe) {
  return schedule_fields().load(config::Options(&recipe, "schedule"));
}

SchedulePtr build_schedule(const config::Recipe& recipe, const ScheduleContext& ctx) {
  const config::Options src = recipe.section("schedule");
  auto o = schedule_fields().load(src);
  KG_CHECK(o.warmup_steps == 0 || o.warmup_epochs == 0.0, ConfigError,
           "schedule.warmup_steps and schedule.warmup_epochs are both set (", src.where("warmup_steps"), ", ",
           src.where("warmup_epochs"), "): give the warm-up in updates or in epochs, not both");
  const int64_t w = o.warmup_steps > 0 ? o.warmup_steps : epochs_to_steps(o.warmup_epochs, ctx.steps_per_epoch);
  if (w == 0) return schedule_registry().create(o.name, src, ctx);
  KG_CHECK(w<ctx.total_steps, ConfigError, o.warmup_steps> 0 ? src.where("warmup_steps") : src.where("warmup_epochs"),
           ": the warm-up (", w, " updates) must be shorter than the run (", ctx.total_steps,
           " updates); shorten it or raise train.epochs");
  ScheduleContext main_ctx = ctx;
  main_ctx.total_steps = ctx.total_steps - w;
  return std::make_unique<Warmup>(schedule_registry().create(o.name, src, main_ctx), w, o.warmup_lr);
}

ScheduleTrace sample(const Schedule& s, int64_t total_steps) {
  ScheduleTrace t;
  const auto n = static_cast<size_t>(std::max<int64_t>(total_steps, 0));
  t.lr.reserve(n);
  t.momentum.reserve(n);
  for (int64_t i = 0; i < total_steps; ++i) {
    t.lr.push_back(s.lr_at(i));
    t.momentum.push_back(s.momentum_at(i));
  }
  return t;
}

}  // namespace kg::optim
