// Every learning-rate schedule against PyTorch's schedulers (tests/golden/schedules.json, made by
// scripts/golden/gen_schedules.py), built through the real recipe path: TOML text -> validate -> build_schedule.
#include <catch2/catch.hpp>

#include <cmath>

#include <nlohmann/json.hpp>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "core/strings.h"
#include "optim/schedule.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;

namespace {

json golden_cases() {
  static const json j = json::parse(kg::read_file(KGTRAIN_SOURCE_DIR "/tests/golden/schedules.json"));
  return j.at("cases");
}

std::string toml_value(const json& v) {
  if (v.is_string()) return "\"" + v.get<std::string>() + "\"";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) return kg::format_double(v.get<double>());  // keeps a '.' or 'e': a TOML float
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + toml_value(v[i]);
  return s + "]";
}

// The recipe a user would write for a golden case.
std::string recipe_for(const json& c) {
  std::string s = "[optim]\nlr = " + kg::format_double(c.at("lr").get<double>()) + "\n\n[schedule]\n";
  for (auto& [k, v] : c.at("schedule").items()) s += k + " = " + toml_value(v) + "\n";
  return s;
}

kg::optim::SchedulePtr build(const std::string& toml, double lr, int64_t total, int64_t per_epoch) {
  auto recipe = kg::config::Recipe::validate(kg::config::parse_toml_string(toml, "schedule.toml"));
  return kg::optim::build_schedule(recipe, {lr, total, per_epoch});
}
kg::optim::SchedulePtr build(const std::string& schedule_keys, int64_t total = 100, int64_t per_epoch = 10) {
  return build("[optim]\nlr = 0.1\n[schedule]\n" + schedule_keys, 0.1, total, per_epoch);
}

// The recipe error text for `schedule_keys`, "" when it builds.
std::string problems(const std::string& schedule_keys, int64_t total = 100, int64_t per_epoch = 10) {
  try {
    build(schedule_keys, total, per_epoch);
  } catch (const kg::ConfigError& e) {
    return e.what();
  }
  return "";
}

bool close_rel(double a, double b, double rel) { return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)); }

std::map<std::string, double> epoch_values(const json& v) {
  std::map<std::string, double> out;
  for (auto& [k, x] : v.items()) out[k] = x.get<double>();
  return out;
}

}  // namespace

TEST_CASE("every schedule matches its PyTorch reference at every update", "[unit][schedule]") {
  auto cases = golden_cases();
  REQUIRE(cases.size() >= 25);
  std::set<std::string> covered;
  for (const auto& c : cases) {
    const int64_t n = c.at("total_steps").get<int64_t>(), spe = c.at("steps_per_epoch").get<int64_t>();
    const std::string toml = recipe_for(c);
    INFO("case: " << c.at("name").get<std::string>() << "\nrecipe:\n"
                  << toml << "total_steps = " << n << ", steps_per_epoch = " << spe);
    covered.insert(c.at("schedule").at("name").get<std::string>());
    auto s = build(toml, c.at("lr").get<double>(), n, spe);
    const auto& want = c.at("lr_trace");
    REQUIRE(want.size() == static_cast<size_t>(n));
    const bool metric_driven = c.contains("epochs");
    for (int64_t t = 0; t < n; ++t) {
      INFO("update " << t);
      const double got = s->lr_at(t), ref = want[static_cast<size_t>(t)].get<double>();
      INFO("lr: kgtrain " << got << " torch " << ref);
      CHECK(close_rel(got, ref, 1e-9));
      if (c.at("momentum").is_null()) {
        CHECK_FALSE(s->momentum_at(t).has_value());
      } else {
        auto m = s->momentum_at(t);
        REQUIRE(m.has_value());
        const double mref = c.at("momentum")[static_cast<size_t>(t)].get<double>();
        INFO("momentum: kgtrain " << *m << " torch " << mref);
        CHECK(close_rel(*m, mref, 1e-9));
      }
      // Plateau: the epoch's value arrives after its last update and applies from the next one.
      if (metric_driven && (t + 1) % spe == 0)
        s->observe(t + 1, epoch_values(c.at("epochs")[static_cast<size_t>(t / spe)]));
    }
    // Afterwards the whole trace is still a function of the update index (plots, lr traces).
    auto trace = kg::optim::sample(*s, n);
    REQUIRE(trace.lr.size() == static_cast<size_t>(n));
    for (int64_t t = 0; t < n; ++t)
      CHECK(close_rel(trace.lr[static_cast<size_t>(t)], want[static_cast<size_t>(t)].get<double>(), 1e-9));
  }
  // Every registered schedule has a golden case (one_cycle's live in one_cycle.json).
  for (const auto& name : kg::optim::schedule_registry().names())
    if (name != "one_cycle") CHECK(covered.count(name) == 1);
}

TEST_CASE("the schedule registry holds every schedule the docs promise", "[unit][schedule]") {
  auto names = kg::optim::schedule_registry().names();
  for (const char* n :
       {"constant", "step", "multistep", "exponential", "cosine", "flat_cos", "one_cycle", "cyclic", "poly", "plateau"})
    CHECK(std::find(names.begin(), names.end(), n) != names.end());
}

TEST_CASE("plateau state survives a checkpoint round trip", "[unit][schedule]") {
  json golden;
  for (const auto& c : golden_cases())
    if (c.at("name") == "plateau min") golden = c;
  REQUIRE(golden.is_object());
  const int64_t n = golden.at("total_steps"), spe = golden.at("steps_per_epoch");
  const double lr = golden.at("lr");
  const std::string toml = recipe_for(golden);
  // Run 6 epochs, "checkpoint", resume into a fresh schedule through JSON text, run the rest.
  auto first = build(toml, lr, n, spe);
  const auto& epochs = golden.at("epochs");
  for (int64_t e = 0; e < 6; ++e) first->observe((e + 1) * spe, epoch_values(epochs[static_cast<size_t>(e)]));
  const std::string saved = first->state().dump();
  auto resumed = build(toml, lr, n, spe);
  resumed->load_state(json::parse(saved));
  for (int64_t e = 6; e < static_cast<int64_t>(epochs.size()); ++e)
    resumed->observe((e + 1) * spe, epoch_values(epochs[static_cast<size_t>(e)]));
  for (int64_t t = 0; t < n; ++t) {
    INFO("update " << t);
    CHECK(close_rel(resumed->lr_at(t), golden.at("lr_trace")[static_cast<size_t>(t)].get<double>(), 1e-9));
  }
  // A fresh plateau (best = +inf) serialises to valid JSON and back.
  auto fresh = build(toml, lr, n, spe);
  auto s = json::parse(fresh->state().dump());
  CHECK(s.at("best").is_null());
  CHECK_NOTHROW(build(toml, lr, n, spe)->load_state(s));
  CHECK_THROWS_AS(build(toml, lr, n, spe)->load_state(json{{"lr", "x"}}), kg::CheckpointError);
  // Stateless schedules have an empty state.
  CHECK(build("name = \"cosine\"\n")->state() == json::object());
}

TEST_CASE("plateau names the available values when the monitor is missing", "[unit][schedule]") {
  auto s = build("name = \"plateau\"\nmonitor = \"valid_f1\"\n");
  try {
    s->observe(10, {{"valid_loss", 0.5}, {"train_loss", 0.4}, {"accuracy", 0.9}});
    FAIL("no ConfigError");
  } catch (const kg::ConfigError& e) {
    CHECK_THAT(e.what(), Catch::Contains("schedule.monitor"));
    CHECK_THAT(e.what(), Catch::Contains("valid_f1"));
    CHECK_THAT(e.what(), Catch::Contains("accuracy, train_loss, valid_loss"));
  }
}

TEST_CASE("plateau mode auto maximises accuracy-like metrics and minimises losses", "[unit][schedule]") {
  auto run = [](const std::string& monitor, std::vector<double> values) {
    auto s = build("name = \"plateau\"\npatience = 0\nmonitor = \"" + monitor + "\"\n");
    int64_t step = 0;
    for (double v : values) s->observe(step += 10, {{monitor, v}});
    return s->lr_at(step);
  };
  // Rising accuracy / qwk / f1 is improvement; rising loss is not.
  CHECK(run("accuracy", {0.5, 0.6, 0.7}) == Approx(0.1));
  CHECK(run("valid_qwk", {0.5, 0.6, 0.7}) == Approx(0.1));
  CHECK(run("top_5", {0.5, 0.6, 0.7}) == Approx(0.1));
  CHECK(run("valid_loss", {0.5, 0.6, 0.7}) == Approx(0.001));
  CHECK(run("valid_rmse", {0.5, 0.4, 0.3}) == Approx(0.1));
}

TEST_CASE("warm-up ramps to the schedule's first lr and shifts the schedule", "[unit][schedule]") {
  // cyclic starts at base_lr, not optim.lr: the ramp ends there; momentum holds the schedule's first value.
  auto s = build(
      "name = \"cyclic\"\nbase_lr = 0.02\nstep_size_up = 4\ncycle_momentum = true\nwarmup_steps = 10\nwarmup_lr = "
      "0.001\n");
  auto main = build("name = \"cyclic\"\nbase_lr = 0.02\nstep_size_up = 4\ncycle_momentum = true\n", 90);
  for (int64_t t = 0; t < 10; ++t) {
    CHECK(s->lr_at(t) == Approx(0.001 + (0.02 - 0.001) * t / 10.0).epsilon(1e-12));
    CHECK(*s->momentum_at(t) == Approx(0.9));
  }
  for (int64_t t = 10; t < 100; ++t) {
    CHECK(s->lr_at(t) == Approx(main->lr_at(t - 10)).epsilon(1e-12));
    CHECK(*s->momentum_at(t) == Approx(*main->momentum_at(t - 10)).epsilon(1e-12));
  }
  // The main schedule runs over the remaining updates: cosine reaches min_lr exactly at the last update.
  auto c = build("name = \"cosine\"\nmin_lr = 0.001\nwarmup_epochs = 2.5\n", 100, 8);  // 20 updates
  CHECK(c->lr_at(0) == 0.0);
  CHECK(c->lr_at(20) == Approx(0.1));
  CHECK(c->lr_at(99) == Approx(0.001).epsilon(1e-12));
  CHECK(c->lr_at(98) > 0.001);
}

TEST_CASE("warm-up keys are checked", "[unit][schedule]") {
  CHECK_THAT(problems("name = \"cosine\"\nwarmup_steps = 5\nwarmup_epochs = 1.0\n"),
             Catch::Contains("schedule.warmup_steps") && Catch::Contains("schedule.warmup_epochs"));
  CHECK_THAT(problems("name = \"cosine\"\nwarmup_steps = 100\n"),
             Catch::Contains("schedule.warmup_steps") && Catch::Contains("shorter than the run"));
  CHECK_THAT(problems("name = \"cosine\"\nwarmup_epochs = 10.0\n"), Catch::Contains("schedule.warmup_epochs"));
  CHECK_THAT(problems("name = \"cosine\"\nwarmup_steps = -1\n"), Catch::Contains("schedule.warmup_steps"));
  CHECK(problems("name = \"cosine\"\nwarmup_steps = 99\n").empty());
}

TEST_CASE("bad schedule keys name the key and what is allowed", "[unit][schedule]") {
  CHECK_THAT(problems("name = \"step\"\nstep_size = 0\n"),
             Catch::Contains("schedule.step_size") && Catch::Contains(">= 1"));
  CHECK_THAT(problems("name = \"step\"\n"),
             Catch::Contains("schedule.step_size") && Catch::Contains("schedule.step_epochs"));
  CHECK_THAT(problems("name = \"step\"\nstep_size = 5\nstep_epochs = 1.0\n"), Catch::Contains("both set"));
  CHECK_THAT(problems("name = \"step\"\nstep_epochs = 0.01\n"),
             Catch::Contains("schedule.step_epochs") && Catch::Contains("0 updates"));
  CHECK_THAT(problems("name = \"step\"\nstep_size = 5\ngamma = 0.0\n"), Catch::Contains("schedule.gamma"));
  CHECK_THAT(problems("name = \"multistep\"\nmilestones = [10, 5]\n"),
             Catch::Contains("schedule.milestones") && Catch::Contains("strictly increasing"));
  CHECK_THAT(problems("name = \"multistep\"\nmilestones = []\n"), Catch::Contains("schedule.milestones"));
  CHECK_THAT(problems("name = \"multistep\"\nmilestone_epochs = [1.0, 1.02]\n"),
             Catch::Contains("schedule.milestone_epochs") && Catch::Contains("strictly increasing"));
  CHECK_THAT(problems("name = \"multistep\"\n"), Catch::Contains("schedule.milestones"));
  CHECK_THAT(problems("name = \"exponential\"\n"), Catch::Contains("schedule.gamma"));
  CHECK_THAT(problems("name = \"exponential\"\ngamma = 0.9\ngamma_per_epoch = 0.5\n"), Catch::Contains("both set"));
  CHECK_THAT(problems("name = \"cosine\"\ncycle_mult = 0.5\n"), Catch::Contains("schedule.cycle_mult"));
  CHECK_THAT(problems("name = \"cosine\"\ncycle_steps = 10\ncycle_epochs = 1.0\n"), Catch::Contains("both set"));
  CHECK_THAT(problems("name = \"cosine\"\nmin_lr = 0.5\n"), Catch::Contains("schedule.min_lr"));
  CHECK_THAT(problems("name = \"flat_cos\"\npct_start = 1.0\n"), Catch::Contains("schedule.pct_start"));
  CHECK_THAT(problems("name = \"cyclic\"\nstep_size_up = 5\nmode = \"triangle\"\n"),
             Catch::Contains("schedule.mode") && Catch::Contains("triangular2"));
  CHECK_THAT(problems("name = \"cyclic\"\n"), Catch::Contains("schedule.step_size_up"));
  CHECK_THAT(problems("name = \"cyclic\"\nstep_size_up = 5\nbase_lr = 0.5\n"), Catch::Contains("schedule.base_lr"));
  CHECK_THAT(problems("name = \"poly\"\npower = -1.0\n"), Catch::Contains("schedule.power"));
  CHECK_THAT(problems("name = \"plateau\"\nfactor = 1.5\n"), Catch::Contains("schedule.factor"));
  CHECK_THAT(problems("name = \"plateau\"\nmode = \"biggest\"\n"), Catch::Contains("schedule.mode"));
  CHECK_THAT(problems("name = \"cosin\"\n"), Catch::Contains("unknown schedule") && Catch::Contains("cosine"));
}

TEST_CASE("schedules are defined for short runs and out-of-range updates", "[unit][schedule]") {
  for (const char* keys :
       {"name = \"cosine\"\n", "name = \"poly\"\n", "name = \"flat_cos\"\n", "name = \"constant\"\n"}) {
    INFO(keys);
    auto s = build(keys, 1);
    CHECK(s->lr_at(0) == Approx(0.1));
    CHECK(std::isfinite(s->lr_at(-3)));
    CHECK(std::isfinite(s->lr_at(1000)));
  }
  // Cosine with a fractional cycle_mult far beyond the first cycle stays on the curve.
  auto s = build("name = \"cosine\"\ncycle_steps = 3\ncycle_mult = 1.3\n", 100000);
  for (int64_t t : {0, 1000, 99999}) {
    const double v = s->lr_at(t);
    CHECK(v >= 0.0);
    CHECK(v <= 0.1);
  }
}

TEST_CASE("every schedule builds from its documented example", "[unit][schedule]") {
  for (const auto* c : kg::optim::schedule_registry().components()) {
    INFO("schedule " << c->name << " example:\n" << c->example);
    CHECK_FALSE(c->doc.empty());
    for (const auto& k : c->schema) CHECK_FALSE(k.doc.empty());
    auto recipe = kg::config::Recipe::validate(kg::config::parse_toml_string(c->example, c->name + " example"));
    CHECK(recipe.tree().at("schedule.name").value == c->name);
    auto s = kg::optim::build_schedule(recipe, {0.1, 100, 10});
    for (int64_t t = 0; t < 100; ++t) {
      CHECK(std::isfinite(s->lr_at(t)));
      CHECK(s->lr_at(t) >= 0.0);
      CHECK(s->lr_at(t) <= 0.1 * (1 + 1e-12));
    }
    s->observe(10, {{"valid_loss", 1.0}, {"accuracy", 0.5}});  // ignored, or used by plateau
    auto again = kg::optim::build_schedule(recipe, {0.1, 100, 10});
    again->load_state(kg::config::json::parse(s->state().dump()));
    for (int64_t t = 0; t < 100; ++t) CHECK(again->lr_at(t) == s->lr_at(t));
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
