// `kgtrain lr-find` and `fit optim.lr = "find"` end to end through the real binary on the tiny dataset.
#include <catch2/catch.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "data/csv.h"
#include "support/fixtures.h"
#include "test_paths.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;
namespace fs = std::filesystem;

namespace {
json read_json(const std::string& path) { return json::parse(kg::read_file(path)); }
}  // namespace

TEST_CASE("lr-find writes its curve, suggestions, plot and summary", "[integration][jobs][lr_find]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 96, 8);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string run = dir / "lrf";
  auto r = kg::test::run_kgtrain({"lr-find", recipe, "lr_find.num_steps=40", "--run-dir", run, "--quiet"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  for (auto f : {"lr_find.csv", "lr_find.json", "lr_find.png", "summary.json", "recipe.toml", "provenance.json"})
    CHECK(fs::exists(fs::path(run) / f));
  auto lf = read_json(run + "/lr_find.json");
  for (auto k : {"valley", "slide", "minimum", "steep"}) CHECK(lf["suggestions"].contains(k));
  CHECK(lf["chosen"] == "valley");
  CHECK(lf["lr"] == lf["suggestions"]["valley"]);
  const int64_t steps = lf["steps"].get<int64_t>();
  CHECK(steps <= 40);
  CHECK(lf["stopped_early"].get<bool>() == (steps < 40));
  auto csv = kg::data::read_csv(run + "/lr_find.csv");
  CHECK(csv.header == std::vector<std::string>{"lr", "loss", "smoothed"});
  REQUIRE(static_cast<int64_t>(csv.rows.size()) == steps);
  CHECK(std::stod(csv.rows[0][0]) == 1e-7);
  auto png = kg::read_file(run + "/lr_find.png");
  CHECK(png.substr(1, 3) == "PNG");
  auto s = read_json(run + "/summary.json");
  CHECK(s["command"] == "lr-find");
  CHECK(s["status"] == "completed");
  CHECK(s["lr"] == lf["lr"]);
  CHECK(s["timings"]["seconds_per_update"].get<double>() > 0);
  CHECK(s["inputs"]["train_table"]["sha256"].get<std::string>().size() == 64);
  CHECK(s["outputs"].size() == 3);
  // The short table on stdout: the chosen suggestion first.
  const auto table = r.output.find("suggestion");
  REQUIRE(table != std::string::npos);
  CHECK(r.output.find("valley", table) < r.output.find("slide", table));
  CHECK(r.output.find("<- chosen") != std::string::npos);

  SECTION("--dry-run builds everything and writes nothing") {
    auto d = kg::test::run_kgtrain({"lr-find", recipe, "--run-dir", dir / "dry", "--dry-run"});
    CHECK(d.exit_code == 0);
    CHECK_FALSE(fs::exists(dir / "dry"));
  }
  SECTION("bad [lr_find] values and too short a sweep: exit 2 with the key named") {
    auto b =
        kg::test::run_kgtrain({"lr-find", recipe, "lr_find.start_lr=1", "lr_find.end_lr=0.1", "--run-dir", dir / "b1"});
    CHECK(b.exit_code == 2);
    CHECK(b.output.find("lr_find.start_lr") != std::string::npos);
    auto c = kg::test::run_kgtrain({"lr-find", recipe, "lr_find.suggestion=middle", "--run-dir", dir / "b2"});
    CHECK(c.exit_code == 2);
    auto t = kg::test::run_kgtrain({"lr-find", recipe, "lr_find.num_steps=6", "--run-dir", dir / "b3", "--quiet"});
    CHECK(t.exit_code == 2);
    CHECK(t.output.find("lr_find.num_steps") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "b3/summary.json"));
  }
}

TEST_CASE("fit optim.lr=find trains bit-identically to fit with the lr it found", "[integration][jobs][lr_find]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 96, 8);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string found = dir / "found", given = dir / "given";
  auto a = kg::test::run_kgtrain(
      {"fit", recipe, "optim.lr=\"find\"", "lr_find.num_steps=40", "train.epochs=1", "--run-dir", found, "--quiet"});
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  for (auto f : {"lr_find.csv", "lr_find.json", "lr_find.png"}) CHECK(fs::exists(fs::path(found) / f));
  auto lf = read_json(found + "/lr_find.json");
  const double lr = lf["lr"].get<double>();
  auto s = read_json(found + "/summary.json");
  REQUIRE(s.contains("lr_find"));
  CHECK(s["lr_find"]["lr"].get<double>() == lr);
  CHECK(s["lr_find"]["chosen"] == "valley");
  // The checkpoint's recipe holds the number, so tta-predict and resume see the lr that trained.
  CHECK(kg::read_file(found + "/checkpoints/last/recipe.toml").find("\"find\"") == std::string::npos);

  auto b = kg::test::run_kgtrain({"fit", recipe, "optim.lr=" + json(lr).dump(), "lr_find.num_steps=40",
                                  "train.epochs=1", "--run-dir", given, "--quiet"});
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  CHECK_FALSE(fs::exists(fs::path(given) / "lr_find.json"));
  CHECK(kg::read_file(found + "/checkpoints/last/model.safetensors") ==
        kg::read_file(given + "/checkpoints/last/model.safetensors"));
  CHECK(read_json(found + "/summary.json")["best"] == read_json(given + "/summary.json")["best"]);
}

}  // namespace KG_UNITY_ID
}  // namespace
