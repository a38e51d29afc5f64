// The typed, immutable recipe: validated once, sections decoded once and shared, changes only through with().
#include <catch2/catch.hpp>

#include <atomic>

#include "config/recipe.h"
#include "config/resolve.h"
#include "core/error.h"
#include "train/lr_finder.h"
#include "train/options.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::config::Recipe;

Recipe recipe(const std::string& text) { return Recipe::validate(kg::config::parse_toml_string(text, "r.toml")); }

std::atomic<int> probe_loads{0};

// A section decoder that counts how often it runs.
struct Probe {
  int64_t epochs = 0;
  static Probe load(const kg::config::Tree& t) {
    ++probe_loads;
    return Probe{t.at("train.epochs").value.get<int64_t>()};
  }
};

TEST_CASE("recipe: a section is decoded once and shared by the recipe's copies", "[unit][config]") {
  probe_loads = 0;
  const Recipe r = recipe("[train]\nepochs = 3\n");
  const Recipe copy = r;
  CHECK(r.get<Probe>().epochs == 3);
  CHECK(copy.get<Probe>().epochs == 3);
  CHECK(&r.get<Probe>() == &copy.get<Probe>());
  CHECK(probe_loads == 1);
  // The real sections read their defaults, filled in by validation.
  CHECK(r.get<kg::train::TrainOptions>().epochs == 3);
  CHECK(r.get<kg::train::TrainOptions>().batch_size == kg::train::TrainOptions{}.batch_size);
  CHECK(r.tree().at("optim.lr").origin.kind == kg::config::Origin::Kind::Default);
}

TEST_CASE("recipe: with() makes a new, validated recipe and leaves the original as it was", "[unit][config]") {
  probe_loads = 0;
  const Recipe r = recipe("[train]\nepochs = 3\n");
  CHECK(r.get<Probe>().epochs == 3);
  const Recipe changed = r.with({{"train.epochs", 7}}, kg::config::Origin::command_line());
  CHECK(changed.get<Probe>().epochs == 7);
  CHECK(changed.tree().at("train.epochs").origin.kind == kg::config::Origin::Kind::CommandLine);
  CHECK(r.get<Probe>().epochs == 3);  // decoded before, still 3
  CHECK(r.tree().at("train.epochs").value == 3);
  CHECK(probe_loads == 2);
  // The change is validated as a recipe file's value would be: range, then unknown keys with a suggestion.
  CHECK_THROWS_WITH(r.with({{"train.epochs", 0}}, {}), Catch::Contains("train.epochs"));
  CHECK_THROWS_WITH(r.with({{"train.epoch", 2}}, {}), Catch::Contains("did you mean train.epochs"));
}

TEST_CASE("recipe: edited() may erase keys; validation fills their defaults again", "[unit][config]") {
  const Recipe r = recipe("[model]\nname = \"resnet9\"\nwidth = 8\n");
  const Recipe e = r.edited([](kg::config::Tree& t) { t.erase("model.width"); });
  CHECK(r.tree().at("model.width").value == 8);
  CHECK(e.tree().at("model.width").value == 64);
  CHECK(e.tree().at("model.width").origin.kind == kg::config::Origin::Kind::Default);
}

TEST_CASE("recipe: a section's cross-key check runs when it is first read", "[unit][config]") {
  const Recipe r = recipe("[lr_find]\nstart_lr = 10.0\nend_lr = 1.0\n");
  CHECK_THROWS_AS(r.get<kg::train::LrFindOptions>(), kg::ConfigError);
  CHECK_THROWS_AS(r.get<kg::train::LrFindOptions>(), kg::ConfigError);  // not cached as if it had worked
}

TEST_CASE("recipe: the empty recipe gives every section's defaults", "[unit][config]") {
  const Recipe r;
  CHECK(r.tree().find("train.epochs") == nullptr);
  CHECK(r.get<kg::train::TrainOptions>().epochs == kg::train::TrainOptions{}.epochs);
  CHECK(r.warnings().empty());
}

}  // namespace KG_UNITY_ID
}  // namespace
