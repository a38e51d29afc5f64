// The one-cycle schedule against PyTorch's OneCycleLR (tests/golden/one_cycle.json, made by
// scripts/gen_golden.py), built through the real recipe path: TOML text -> validate -> build_schedule.
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "config/resolve.h"
#include "config/validate.h"
#include "core/error.h"
#include "core/fs.h"
#include "optim/optimizer.h"
#include "optim/schedule.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;

namespace {

json golden_cases() {
  static const json j = json::parse(kg::read_file(KGTRAIN_SOURCE_DIR "/tests/golden/one_cycle.json"));
  return j.at("cases");
}

std::string toml_number(double v) {
  std::ostringstream os;
  os.precision(17);
  os << v;
  std::string s = os.str();
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";  // a TOML float, not an integer
  return s;
}

// The recipe a user would write for this golden case.
std::string recipe_for(const json& c) {
  const auto& m = c.at("moms");
  return "[optim]\nname = \"adamw\"\nlr = " + toml_number(c.at("max_lr").get<double>()) +
         "\n\n[schedule]\nname = \"one_cycle\"\npct_start = " + toml_number(c.at("pct_start").get<double>()) +
         "\ndiv = " + toml_number(c.at("div").get<double>()) +
         "\ndiv_final = " + toml_number(c.at("div_final").get<double>()) + "\nmoms = [" +
         toml_number(m[0].get<double>()) + ", " + toml_number(m[1].get<double>()) + ", " +
         toml_number(m[2].get<double>()) + "]\nanneal = \"" + c.at("anneal").get<std::string>() + "\"\n";
}

struct Built {
  kg::optim::SchedulePtr schedule;
  double lr;
};

Built build(const std::string& toml, int64_t total_steps) {
  auto recipe = kg::config::Recipe::validate(kg::config::parse_toml_string(toml, "one_cycle.toml"));
  double lr = kg::optim::peak_lr(recipe.get<kg::optim::OptimOptions>());
  return {kg::optim::build_schedule(recipe, {lr, total_steps, total_steps}), lr};
}

bool close_rel(double a, double b, double rel) { return std::abs(a - b) <= rel * std::max(std::abs(a), std::abs(b)); }

}  // namespace

TEST_CASE("one_cycle matches torch OneCycleLR lr and beta1 at every step", "[unit][one_cycle]") {
  auto cases = golden_cases();
  REQUIRE(cases.size() >= 4);
  for (const auto& c : cases) {
    const int64_t n = c.at("total_steps").get<int64_t>();
    const auto& lr = c.at("lr");
    const auto& mom = c.at("momentum");
    REQUIRE(lr.size() == static_cast<size_t>(n));
    REQUIRE(mom.size() == static_cast<size_t>(n));
    const std::string toml = recipe_for(c);
    INFO("recipe:\n" << toml << "total_steps = " << n);
    auto b = build(toml, n);
    CHECK(b.lr == c.at("max_lr").get<double>());
    for (int64_t s = 0; s < n; ++s) {
      INFO("step " << s);
      const double want_lr = lr[static_cast<size_t>(s)].get<double>();
      const double got_lr = b.schedule->lr_at(s);
      INFO("lr: kgtrain " << got_lr << " torch " << want_lr);
      CHECK(close_rel(got_lr, want_lr, 1e-9));
      auto m = b.schedule->momentum_at(s);
      REQUIRE(m.has_value());
      INFO("beta1: kgtrain " << *m << " torch " << mom[static_cast<size_t>(s)].get<double>());
      CHECK(close_rel(*m, mom[static_cast<size_t>(s)].get<double>(), 1e-9));
    }
  }
}

TEST_CASE("one_cycle defaults are fastai's fit_one_cycle (div 25, div_final 1e5, moms 0.95/0.85/0.95, cos)",
          "[unit][one_cycle]") {
  // The golden case with those exact settings, reached from a recipe that only names the schedule.
  json golden;
  for (const auto& c : golden_cases())
    if (c.at("total_steps") == 100 && c.at("anneal") == "cos" && c.at("pct_start") == 0.25) golden = c;
  REQUIRE(golden.is_object());
  auto b = build(
      "[optim]\nlr = " + toml_number(golden.at("max_lr").get<double>()) + "\n[schedule]\nname = \"one_cycle\"\n", 100);
  for (int64_t s = 0; s < 100; ++s) {
    INFO("step " << s);
    CHECK(close_rel(b.schedule->lr_at(s), golden.at("lr")[static_cast<size_t>(s)].get<double>(), 1e-9));
    CHECK(close_rel(*b.schedule->momentum_at(s), golden.at("momentum")[static_cast<size_t>(s)].get<double>(), 1e-9));
  }
  // The shape in words: warm-up from lr/25 to the peak, then down to lr/1e5 at the last update.
  CHECK(b.schedule->lr_at(0) == Approx(3e-3 / 25).epsilon(1e-12));
  CHECK(b.schedule->lr_at(24) == Approx(3e-3).epsilon(1e-12));
  CHECK(b.schedule->lr_at(99) == Approx(3e-3 / 1e5).epsilon(1e-9));
  CHECK(*b.schedule->momentum_at(24) == Approx(0.85).epsilon(1e-12));
}

TEST_CASE("one_cycle with cycle_momentum = false leaves momentum alone", "[unit][one_cycle]") {
  auto b = build("[optim]\nlr = 0.01\n[schedule]\nname = \"one_cycle\"\ncycle_momentum = false\n", 10);
  for (int64_t s = 0; s < 10; ++s) CHECK_FALSE(b.schedule->momentum_at(s).has_value());
}

TEST_CASE("one_cycle needs at least 2 optimizer updates", "[unit][one_cycle]") {
  const std::string toml = "[optim]\nlr = 0.01\n[schedule]\nname = \"one_cycle\"\n";
  for (int64_t n : {1, 0}) {
    INFO("total_steps = " << n);
    try {
      build(toml, n);
      FAIL("no ConfigError for total_steps = " << n);
    } catch (const kg::ConfigError& e) {
      CHECK_THAT(e.what(), Catch::Contains("at least 2 optimizer updates"));
      CHECK_THAT(e.what(), Catch::Contains("train.epochs"));
    }
  }
  CHECK_NOTHROW(build(toml, 2));
}

TEST_CASE("one_cycle recipe keys are checked", "[unit][one_cycle]") {
  auto problems = [](const std::string& schedule_keys) -> std::string {
    try {
      build("[optim]\nlr = 0.01\n[schedule]\nname = \"one_cycle\"\n" + schedule_keys, 10);
    } catch (const kg::ConfigError& e) {
      return e.what();
    }
    return "";
  };
  CHECK_THAT(problems("anneal = \"cosine\"\n"), Catch::Contains("schedule.anneal"));
  CHECK_THAT(problems("moms = [0.9, 0.8]\n"), Catch::Contains("schedule.moms"));
  CHECK_THAT(problems("pct_start = 1.5\n"), Catch::Contains("schedule.pct_start"));
  CHECK_THAT(problems("div = 0.0\n"), Catch::Contains("schedule.div"));
}

}  // namespace KG_UNITY_ID
}  // namespace
