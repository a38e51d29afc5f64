// run.time_limit: the plan is shortened to fit the budget (schedule rescaled, not cut off), and the
// final checkpoint and out-of-fold predictions are written before the deadline.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/strings.h"
#include "support/fixtures.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using nlohmann::json;
namespace fs = std::filesystem;

TEST_CASE("a time budget shortens the run and still leaves checkpoints and predictions", "[integration][time_budget]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 96, 4, 16);
  auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string run = dir / "run";
  auto t0 = std::chrono::steady_clock::now();
  // 400 epochs cannot fit in 6 s on any machine; the budget must cut the plan, not the process.
  auto r = kg::test::run_kgtrain({"fit", recipe, "--run-dir", run, "train.epochs=400", "run.time_limit=6s",
                                  "model.width=8", "data.num_workers=0"});
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(wall < 6.0 + 4.0);  // process start-up and data check come on top of the budget's training part
  CHECK(r.output.find("time budget") != std::string::npos);
  auto s = json::parse(kg::read_file(run + "/summary.json"));
  CHECK(s["status"] == "completed");
  int64_t epochs = s["epochs_completed"].get<int64_t>();
  CHECK(epochs >= 1);
  CHECK(epochs < 400);
  CHECK(fs::exists(run + "/checkpoints/last/MANIFEST.json"));
  CHECK(fs::exists(run + "/oof_fold.csv"));
  // The rescaled plan ends its one-cycle schedule: the last logged epoch's lr is far below the peak.
  auto lines = kg::split(kg::read_file(run + "/metrics.jsonl"), '\n');
  double last_lr = 0;
  for (auto& l : lines)
    if (!l.empty()) last_lr = json::parse(l)["lr"].get<double>();
  if (s["finish"] == "completed") CHECK(last_lr < 0.02 / 100);
}

}  // namespace KG_UNITY_ID
}  // namespace
