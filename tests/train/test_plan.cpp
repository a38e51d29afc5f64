// The training plan: fastai's fine_tune reproduced (tests/golden/fine_tune.json, transcribed from
// fastai's code by scripts/golden/gen_fine_tune.py), freezing errors, time-budget rescaling.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/fs.h"
#include "support/fixtures.h"
#include "test_paths.h"
#include "train/plan.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;

namespace {
kg::config::Recipe recipe_with(const kg::test::TempDir& dir, const std::vector<std::string>& args) {
  auto file = dir.write("plan.toml", "[train]\nepochs = 3\n");
  return kg::test::resolve_recipe({file}, args);
}
std::vector<std::string> groups(int n) {
  std::vector<std::string> g;
  for (int i = 0; i < n; ++i) g.push_back(i == 0 ? "stem" : i == n - 1 ? "head" : "stage" + std::to_string(i));
  return g;
}
}  // namespace

TEST_CASE("train.mode = fine_tune reproduces fastai's fine_tune lr, momentum and frozen groups", "[unit][plan]") {
  kg::test::TempDir dir;
  auto golden = json::parse(kg::read_file(KGTRAIN_SOURCE_DIR "/tests/golden/fine_tune.json"));
  for (auto& c : golden["cases"]) {
    const int n = c["groups"].get<int>();
    const int64_t spe = c["steps_per_epoch"].get<int64_t>();
    auto recipe = recipe_with(dir, {"train.mode=fine_tune", "train.epochs=" + std::to_string(c["epochs"].get<int>()),
                                    "train.freeze_epochs=" + std::to_string(c["freeze_epochs"].get<int>()),
                                    "train.fine_tune_lr_mult=" + std::to_string(c["lr_mult"].get<double>()),
                                    "optim.lr=" + std::to_string(c["base_lr"].get<double>())});
    kg::train::Plan plan(
        recipe, c["epochs"].get<int64_t>(), [spe](int64_t, int64_t) { return spe; }, groups(n));
    const auto& trace = c["trace"];
    REQUIRE(plan.total_steps() == static_cast<int64_t>(trace.size()));
    for (size_t s = 0; s < trace.size(); ++s) {
      int64_t epoch = static_cast<int64_t>(s) / spe;
      const auto* mult = plan.group_lr_mult(epoch);
      REQUIRE(mult);
      for (int g = 0; g < n; ++g) {
        double want = trace[s]["lr"][g].get<double>();
        INFO("update " << s << " group " << g);
        CHECK(plan.lr_at(static_cast<int64_t>(s)) * (*mult)[static_cast<size_t>(g)] == Approx(want).epsilon(1e-6));
      }
      CHECK(plan.momentum_at(static_cast<int64_t>(s)).value() == Approx(trace[s]["mom"].get<double>()).epsilon(1e-6));
    }
    for (size_t e = 0; e < c["frozen"].size(); ++e)
      CHECK(plan.frozen_groups(static_cast<int64_t>(e)) == c["frozen"][e].get<int64_t>());
  }
}

TEST_CASE("freezing needs groups to freeze and leaves one frozen at least", "[unit][plan]") {
  kg::test::TempDir dir;
  auto steps = [](int64_t, int64_t) { return int64_t{4}; };
  CHECK_THROWS_WITH(kg::train::Plan(recipe_with(dir, {"train.freeze=1"}), 3, steps, {"all"}),
                    Catch::Contains("only one layer group") && Catch::Contains("silent no-op"));
  CHECK_THROWS_WITH(kg::train::Plan(recipe_with(dir, {"train.mode=fine_tune"}), 3, steps, {"all"}),
                    Catch::Contains("only one group"));
  CHECK_THROWS_WITH(kg::train::Plan(recipe_with(dir, {"train.freeze=3"}), 3, steps, groups(3)),
                    Catch::Contains("would freeze nothing") && Catch::Contains("1..2"));
  CHECK_THROWS_AS(kg::train::Plan(recipe_with(dir, {"train.unfreeze_every=1"}), 3, steps, groups(3)), kg::ConfigError);
  kg::train::Plan p(recipe_with(dir, {"train.freeze=1", "train.unfreeze_every=2", "train.epochs=6"}), 6, steps,
                    groups(4));
  std::vector<int64_t> frozen;
  for (int64_t e = 0; e < 6; ++e) frozen.push_back(p.frozen_groups(e));
  CHECK(frozen == std::vector<int64_t>{3, 3, 2, 2, 1, 1});
}

TEST_CASE("a rescaled plan (time budget) still completes its schedule", "[unit][plan]") {
  kg::test::TempDir dir;
  auto steps = [](int64_t, int64_t) { return int64_t{10}; };
  kg::train::Plan p(recipe_with(dir, {"schedule.name=one_cycle", "optim.lr=0.1", "train.epochs=10"}), 10, steps,
                    groups(3));
  CHECK(p.total_steps() == 100);
  p.rescale(4);
  CHECK(p.epochs() == 4);
  CHECK(p.total_steps() == 40);
  CHECK(p.lr_at(39) == Approx(0.1 / 1e5).epsilon(1e-6));  // still anneals to lr / div_final at its new end
  auto st = p.state();
  kg::train::Plan q(recipe_with(dir, {"schedule.name=one_cycle", "optim.lr=0.1", "train.epochs=10"}), 10, steps,
                    groups(3));
  q.load_state(st);
  CHECK(q.epochs() == 4);
}

}  // namespace KG_UNITY_ID
}  // namespace
