// Out-of-memory back-off (train.oom_backoff) with injected OOMs: the micro-batch halves, accumulation
// doubles, the effective batch and the schedule stay, and the weights are bit-identical to a run that
// used the smaller micro-batch from the start.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>

#include "core/fs.h"
#include "support/fixtures.h"
#include "support/job_helpers.h"
#include "train/trainer_rig.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

namespace fs = std::filesystem;

using kg::test::EnvVar;

TEST_CASE("OOM back-off: 16 -> 8 -> 4 images per micro-batch, same weights as batch 4 x 4 from the start",
          "[integration][train][oom]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 64, 4);
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  const std::vector<std::string> common{"train.epochs=2", "optim.lr=0.05", "optim.momentum=0.9"};
  kg::test::Rig big(ds.root, dir / "a", kg::test::cat(common, {"train.batch_size=16"}), 48, {}, {}, {},
                    /*fake_oom_above=*/4);
  big.trainer->fit();
  kg::test::Rig small(ds.root, dir / "b", kg::test::cat(common, {"train.batch_size=4", "train.accum_steps=4"}), 48);
  small.trainer->fit();
  CHECK(kg::test::max_diff(big.params(), small.params()) == 0.0);
  const auto& st = big.trainer->state();
  CHECK(st.oom_halvings == 2);
  REQUIRE(st.oom_events.size() == 2);
  CHECK(st.oom_events[0]["from"] == 16);
  CHECK(st.oom_events[0]["to"] == 8);
  CHECK(st.oom_events[0]["accum_steps"] == 2);
  CHECK(st.oom_events[1]["from"] == 8);
  CHECK(st.oom_events[1]["to"] == 4);
  CHECK(st.oom_events[1]["accum_steps"] == 4);
  CHECK(st.oom_events[0]["update"] == 1);  // both at the first update: it was retried, not skipped
  CHECK(st.oom_events[1]["update"] == 1);
  CHECK(st.step == small.trainer->state().step);  // 3 updates per epoch either way: the schedule is unchanged
  CHECK(st.step == 6);
  CHECK(st.skipped_updates == 0);
}

TEST_CASE("OOM back-off with accumulation already on: 2 x 16 becomes 8 x 4 (effective batch 32)",
          "[integration][train][oom]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 72, 4);
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  const std::vector<std::string> common{"train.epochs=1", "optim.lr=0.05"};
  kg::test::Rig big(ds.root, dir / "a", kg::test::cat(common, {"train.batch_size=16", "train.accum_steps=2"}), 64, {},
                    {}, {}, 8);
  big.trainer->fit();
  kg::test::Rig small(ds.root, dir / "b", kg::test::cat(common, {"train.batch_size=8", "train.accum_steps=4"}), 64);
  small.trainer->fit();
  CHECK(kg::test::max_diff(big.params(), small.params()) == 0.0);
  CHECK(big.trainer->state().oom_halvings == 1);
  CHECK(big.trainer->state().step == 2);
}

TEST_CASE("fit: OOM back-off through the binary with BatchNorm, recorded in summary.json, exit 4 at one image",
          "[train][oom][integration]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 64, 8);
  const std::string recipe = dir.write("r.toml", kg::test::tiny_recipe(ds.root));
  const std::vector<std::string> base{"fit", recipe, "train.epochs=2", "plots.enabled=false"};
  kg::test::RunResult a;
  {
    EnvVar fake("KGTRAIN_FAKE_OOM_ABOVE", "4");
    a = kg::test::run_kgtrain(kg::test::cat(base, {"train.batch_size=16", "--run-dir", dir / "a"}));
  }
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  CHECK_THAT(a.output, Catch::Contains("out of memory at update 1 (micro-batch 16): now 8 x 2 accumulated") &&
                           Catch::Contains("(micro-batch 8): now 4 x 4"));
  auto b =
      kg::test::run_kgtrain(kg::test::cat(base, {"train.batch_size=4", "train.accum_steps=4", "--run-dir", dir / "b"}));
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  // resnet9 has BatchNorm: the failed attempts' statistics were rolled back.
  CHECK(kg::read_file(dir / "a/checkpoints/last/model.safetensors") ==
        kg::read_file(dir / "b/checkpoints/last/model.safetensors"));
  auto summary = kg::test::read_json(dir / "a/summary.json");
  REQUIRE(summary["folds"][0].contains("oom_backoff"));
  CHECK(summary["folds"][0]["oom_backoff"]["halvings"] == 2);
  CHECK(summary["folds"][0]["oom_backoff"]["events"].size() == 2);

  kg::test::RunResult c;
  {
    EnvVar fake("KGTRAIN_FAKE_OOM_ABOVE", "0");  // every micro-batch fails
    c = kg::test::run_kgtrain(kg::test::cat(base, {"train.batch_size=4", "--run-dir", dir / "c"}));
  }
  INFO(c.output);
  CHECK(c.exit_code == 4);
  // resnet9 has BatchNorm, which cannot train on one image: the back-off stops at two.
  CHECK_THAT(c.output, Catch::Contains("out of memory at the smallest micro-batch (2 images") &&
                           Catch::Contains("train.batch_size 4, halved 1 time(s)"));
  CHECK(fs::exists(dir / "c/checkpoints/last/MANIFEST.json"));

  kg::test::RunResult off;
  {
    EnvVar fake("KGTRAIN_FAKE_OOM_ABOVE", "4");
    off = kg::test::run_kgtrain(
        kg::test::cat(base, {"train.batch_size=16", "train.oom_backoff=false", "--run-dir", dir / "d"}));
  }
  CHECK(off.exit_code == 4);  // without the back-off the OOM ends the run as before
  CHECK_THAT(off.output, Catch::Contains("out of memory"));
}

TEST_CASE("train.batch_size = auto: the largest power of two that ran, never an untested size",
          "[train][oom][integration]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 64, 8);
  const std::string recipe = dir.write("r.toml", kg::test::tiny_recipe(ds.root));
  const std::vector<std::string> base{"fit", recipe, "train.epochs=1", "plots.enabled=false",
                                      "train.batch_size=\"auto\""};
  kg::test::RunResult a;
  {
    EnvVar fake("KGTRAIN_FAKE_OOM_ABOVE", "16");
    a = kg::test::run_kgtrain(kg::test::cat(base, {"train.auto_batch_max=256", "--run-dir", dir / "a"}));
  }
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  CHECK_THAT(a.output, Catch::Contains("batch size auto: 16 (out of memory at 32)"));
  auto s = kg::test::read_json(dir / "a/summary.json");
  REQUIRE(s.contains("auto_batch"));
  CHECK(s["auto_batch"]["batch_size"] == 16);
  const auto& trials = s["auto_batch"]["trials"];
  REQUIRE(trials.size() == 5);  // 2, 4, 8, 16 ran; 32 failed
  for (int i = 0; i < 4; ++i) CHECK(trials[i]["fits"] == true);
  CHECK(trials[4]["batch"] == 32);
  CHECK(trials[4]["fits"] == false);
  // The run trained with the number, and its recipe.toml says so (tta-predict and resume read it).
  CHECK_THAT(kg::read_file(dir / "a/recipe.toml"), Catch::Contains("batch_size = 16"));

  auto b = kg::test::run_kgtrain(kg::test::cat(base, {"train.auto_batch_max=8", "--run-dir", dir / "b"}));
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  CHECK(kg::test::read_json(dir / "b/summary.json")["auto_batch"]["batch_size"] == 8);

  auto bad = kg::test::run_kgtrain({"fit", recipe, "train.batch_size=\"big\"", "--dry-run"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Catch::Contains("train.batch_size") && Catch::Contains("\"auto\""));
}

}  // namespace KG_UNITY_ID
}  // namespace
