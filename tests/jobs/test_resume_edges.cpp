// Resume where a kill left the checkpoints folder between two saves (found by scripts/reliability.py kills).
#include <catch2/catch.hpp>

#include <filesystem>

#include "core/fs.h"
#include "support/fixtures.h"
#include "support/job_helpers.h"
#include "train/checkpoint.h"
#include "train/checkpoint_store.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;

namespace {

std::string only_rotated(const std::string& ckpts) {
  for (const auto& e : fs::directory_iterator(ckpts))
    if (e.path().filename().string().rfind("step-", 0) == 0) return e.path().string();
  return "";
}

// The checkpoint at `dir` saved again with state.json "weights" = `weights` (as the checkpoint callback writes a
// best won by a weight average).
void mark_weights(const std::string& dir, const std::string& weights) {
  auto c = kg::train::load_checkpoint(dir);
  kg::train::CheckpointFiles f;
  f.model = c.weights;
  f.state_tensors = c.state_tensors;
  f.extra_weights = c.extra_weights;
  f.state = c.state;
  f.state["weights"] = weights;
  f.recipe_toml = c.recipe_toml;
  kg::train::save_checkpoint(dir, f);
}

}  // namespace

TEST_CASE("a kill between the best and last saves of the final epoch: --resume ends with the uninterrupted last",
          "[integration][resume]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 96, 8);
  const auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::vector<std::string> det{"device.deterministic=true", "checkpoint.keep_last=2"};
  const std::string run = dir / "run";
  auto fit = kg::test::run_kgtrain(kg::test::cat({"fit", recipe, "--run-dir", run, "--quiet"}, det));
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  const std::string ckpts = run + "/checkpoints", want = kg::read_file(ckpts + "/last/model.safetensors");

  // The final epoch's best is written (a copy of its state), the kill comes before its last: last is the epoch
  // before (the rotated step-*), and the fold's outputs were not written.
  const std::string older = only_rotated(ckpts);
  REQUIRE(!older.empty());
  std::error_code ec;
  kg::remove_tree(ckpts + "/best", ec);
  fs::copy(ckpts + "/last", ckpts + "/best", fs::copy_options::recursive);
  kg::remove_tree(ckpts + "/last", ec);
  fs::rename(older, ckpts + "/last");
  for (auto f : {"summary.json", "fold.json", "oof_fold.csv"}) fs::remove(run + "/" + f);
  REQUIRE(kg::train::find_latest(ckpts) == ckpts + "/best");

  auto resumed = kg::test::run_kgtrain({"fit", "--resume", run});
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK_THAT(resumed.output, Catch::Contains("resumed from " + ckpts + "/best"));
  CHECK(kg::read_file(ckpts + "/last/model.safetensors") == want);
  CHECK(kg::train::checkpoint_problem(ckpts + "/last") == "");
}

TEST_CASE("a checkpoint holding a weight average's weights is never resumed from", "[integration][resume]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 64, 8);
  const auto recipe = dir.write("tiny.toml", kg::test::tiny_recipe(ds.root));
  const std::string run = dir / "run", ckpts = run + "/checkpoints";
  auto fit = kg::test::run_kgtrain({"fit", recipe, "--run-dir", run, "--quiet", "train.epochs=1"});
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  // best won by EMA, and newer than last (as after a kill between the two saves).
  fs::copy(ckpts + "/last", ckpts + "/newer", fs::copy_options::recursive);
  mark_weights(ckpts + "/newer", "ema");
  for (auto f : {"summary.json", "fold.json", "oof_fold.csv"}) fs::remove(run + "/" + f);  // the fold unfinished
  CHECK(kg::train::find_latest(ckpts) == ckpts + "/last");  // complete, but skipped: not damaged either
  std::vector<std::string> skipped;
  kg::train::find_latest(ckpts, &skipped);
  CHECK(skipped.empty());
  auto r = kg::test::run_kgtrain({"fit", "--resume", ckpts + "/newer"});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("holds the \"ema\" weights") && Catch::Contains("checkpoints/last"));
}

}  // namespace KG_UNITY_ID
}  // namespace
