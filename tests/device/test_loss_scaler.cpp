// The fp16 loss scaler: GradScaler's rules (skip + back off on inf/NaN, growth after N clean updates),
// its state in checkpoints, and the training loop's use of it (exact with power-of-two scales).
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "core/error.h"
#include "device/loss_scaler.h"
#include "support/fixtures.h"
#include "train/checkpoint.h"
#include "train/trainer_rig.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::device::LossScaler;
using kg::device::LossScalerOptions;

namespace {
LossScalerOptions opts(double init, int64_t interval) {
  LossScalerOptions o;
  o.init_scale = init;
  o.growth_interval = interval;
  return o;
}
// Counts the updates the optimizer really made.
struct StepCounter : kg::train::Callback {
  int* steps;
  explicit StepCounter(int* s) : steps(s) {}
  std::string name() const override { return "step_counter"; }
  int order() const override { return 90; }
  void on_step_end(kg::train::Trainer&) override { ++*steps; }
};
}  // namespace

TEST_CASE("LossScaler: back-off and skip on inf/NaN, growth after growth_interval clean updates",
          "[device][scaler][unit]") {
  LossScaler s(opts(65536, 3));
  CHECK(s.enabled());
  CHECK(s.scale() == 65536);
  s.update(true);
  s.update(true);
  CHECK(s.scale() == 65536);
  CHECK(s.growth_tracker() == 2);
  s.update(false);  // overflow: x0.5, the count of clean updates starts again
  CHECK(s.scale() == 32768);
  CHECK(s.growth_tracker() == 0);
  CHECK(s.overflow_skips() == 1);
  s.update(true);
  s.update(true);
  CHECK(s.scale() == 32768);
  s.update(true);  // third clean update in a row: x2
  CHECK(s.scale() == 65536);
  CHECK(s.growth_tracker() == 0);
  // Default rules are GradScaler's: 2^16, x2 after 2000 clean updates, x0.5 on overflow.
  LossScaler d{LossScalerOptions{}};
  CHECK(d.scale() == 65536);
  for (int i = 0; i < 1999; ++i) d.update(true);
  CHECK(d.scale() == 65536);
  d.update(true);
  CHECK(d.scale() == 131072);
  // Disabled (fp32/bf16): scale 1, update does nothing.
  LossScaler off(LossScalerOptions{}, false);
  CHECK(off.scale() == 1.0);
  off.update(false);
  CHECK(off.scale() == 1.0);
  CHECK(off.overflow_skips() == 0);
}

TEST_CASE("LossScaler: unscale divides by the scale and detects injected inf and NaN", "[device][scaler][unit]") {
  LossScaler s(opts(1024, 2000));
  auto g1 = torch::full({3}, 2048.0), g2 = torch::full({2, 2}, -512.0);
  CHECK(s.unscale_and_check({g1, g2}));
  CHECK(torch::equal(g1, torch::full({3}, 2.0)));
  CHECK(torch::equal(g2, torch::full({2, 2}, -0.5)));
  auto bad = torch::ones({4});
  bad[2] = std::numeric_limits<float>::infinity();
  CHECK_FALSE(s.unscale_and_check({g1, bad}));
  auto nan = torch::ones({2});
  nan[0] = std::numeric_limits<float>::quiet_NaN();
  CHECK_FALSE(s.unscale_and_check({nan}));
  CHECK(s.unscale_and_check({}));
}

TEST_CASE("LossScaler: state round trip, malformed state is a checkpoint error", "[device][scaler][unit]") {
  LossScaler a(opts(65536, 5));
  a.update(false);
  a.update(true);
  a.update(true);
  LossScaler b(opts(65536, 5));
  b.load_state(a.state());
  CHECK(b.scale() == a.scale());
  CHECK(b.growth_tracker() == 2);
  CHECK(b.overflow_skips() == 1);
  for (int i = 0; i < 3; ++i) {
    a.update(true);
    b.update(true);
  }
  CHECK(b.scale() == a.scale());  // both grew at the same update
  CHECK(b.scale() == 65536);
  LossScaler c(opts(8, 5));
  c.load_state(nlohmann::json());  // a checkpoint of an fp32 run: fresh state kept
  CHECK(c.scale() == 8);
  CHECK_THROWS_AS(c.load_state({{"enabled", true}, {"scale", "big"}}), kg::CheckpointError);
  CHECK_THROWS_AS(c.load_state({{"enabled", true}, {"scale", -1.0}, {"growth_tracker", 0}}), kg::CheckpointError);
}

TEST_CASE("Trainer with the loss scaler: power-of-two scaling changes nothing when nothing overflows",
          "[integration][device][scaler][trainer]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 4);
  const std::vector<std::string> args{"train.epochs=2", "train.batch_size=8", "optim.lr=0.05"};
  std::filesystem::create_directories(dir / "a");
  std::filesystem::create_directories(dir / "b");
  kg::test::Rig plain(ds.root, dir / "a", args, 40);
  plain.trainer->fit();
  kg::test::Rig scaled(ds.root, dir / "b", args, 40, {}, {}, LossScaler(opts(1024, 3)));
  scaled.trainer->fit();
  CHECK(kg::test::max_diff(plain.params(), scaled.params()) == 0.0);
  // 10 clean updates with growth every 3: 1024 x 2^3
  CHECK(scaled.trainer->scaler().scale() == 8192);
  CHECK(scaled.trainer->scaler().overflow_skips() == 0);
}

TEST_CASE("Trainer with the loss scaler: overflowing updates are skipped and the scale backs off",
          "[integration][device][scaler][trainer]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 48, 4);
  std::filesystem::create_directories(dir / "r");
  int steps = 0;
  std::vector<kg::train::CallbackPtr> extra;
  extra.push_back(std::make_unique<StepCounter>(&steps));
  // A scale beyond float32's range makes the first gradients overflow: what fp16 does at 2^16.
  kg::test::Rig r(ds.root, dir / "r", {"train.epochs=3", "train.batch_size=8", "optim.lr=0.05"}, 40, std::move(extra),
                  {}, LossScaler(opts(std::ldexp(1.0, 140), 100000)));
  auto before = r.params();
  r.trainer->fit();
  const auto& sc = r.trainer->scaler();
  const int64_t skips = sc.overflow_skips();
  CHECK(skips >= 1);
  CHECK(skips < 15);  // x0.5 per skip: a few dozen bits at most
  CHECK(sc.scale() == std::ldexp(1.0, 140 - static_cast<int>(skips)));
  CHECK(r.trainer->state().step == 15);            // 5 updates x 3 epochs: the schedule counts skipped ones
  CHECK(steps == 15 - skips);                      // ... the optimizer made only the clean ones
  CHECK(r.trainer->state().skipped_updates == 0);  // overflow skips are not divergence
  auto after = r.params();
  for (auto& [k, v] : after) CHECK(torch::isfinite(v).all().item<bool>());
  CHECK(kg::test::max_diff(before, after) > 0);
  // The scale is saved with the checkpoint and restored on resume.
  auto ck = kg::train::load_checkpoint((dir / "r") + "/checkpoints/last", true);
  REQUIRE(ck.state.contains("scaler"));
  CHECK(ck.state["scaler"]["scale"].get<double>() == sc.scale());
  std::filesystem::create_directories(dir / "s");
  kg::test::Rig again(ds.root, dir / "s", {"train.epochs=3", "train.batch_size=8", "optim.lr=0.05"}, 40, {}, {},
                      LossScaler(opts(65536, 100000)));
  again.trainer->resume(ck);
  CHECK(again.trainer->scaler().scale() == sc.scale());
  CHECK(again.trainer->scaler().overflow_skips() == skips);
}

}  // namespace KG_UNITY_ID
}  // namespace
