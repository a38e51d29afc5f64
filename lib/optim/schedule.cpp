#include "optim/schedule.h"

#include "config/sections.h"

namespace kg::optim {

ScheduleRegistry& schedule_registry() {
  static ScheduleRegistry r("schedule");
  return r;
}

namespace {
config::Fields<ScheduleOptions> fields() {
  config::Fields<ScheduleOptions> f;
  f.field("name", &ScheduleOptions::name, "learning-rate schedule (counts optimizer updates)").kind("schedule");
  return f;
}
KG_REGISTER_SECTION("schedule", "the learning-rate schedule", fields().schema(), "schedule");

struct ConstantOptions {};
class Constant : public Schedule {
 public:
  explicit Constant(double lr) : lr_(lr) {}
  double lr_at(int64_t) const override { return lr_; }
 private:
  double lr_;
};
KG_REGISTER(schedule_registry(), "constant", "optim.lr at every step", "[schedule]\nname = \"constant\"",
            config::Fields<ConstantOptions>(),
            [](const ConstantOptions&, const ScheduleContext& c) -> SchedulePtr { return std::make_unique<Constant>(c.lr); });
}  // namespace

SchedulePtr build_schedule(const config::Tree& recipe, const ScheduleContext& ctx) {
  auto o = fields().load(config::Options(&recipe, "schedule"));
  return schedule_registry().create(o.name, config::Options(&recipe, "schedule"), ctx);
}

}  // namespace kg::optim
