// The training loop's mechanics on a real Trainer: gradient accumulation equals the big batch,
// the schedule counts updates, clipping, the non-finite policy, freezing and gradual unfreezing.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "core/error.h"
#include "support/fixtures.h"
#include "train/trainer_rig.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

using kg::test::Rig;

namespace {

struct Grabber : kg::train::Callback {
  std::vector<double> lrs, grad_norms;
  std::string name() const override { return "test_grabber"; }
  int order() const override { return 5; }
  void on_step_end(kg::train::Trainer& t) override {
    lrs.push_back(t.optimizer().lr());
    double sq = 0;
    for (auto& p : t.net().parameters())
      if (p.grad().defined()) sq += p.grad().pow(2).sum().item<double>();
    grad_norms.push_back(std::sqrt(sq));
  }
};

}  // namespace

TEST_CASE("accumulating micro-batches gives the big batch's update, also for a short last group",
          "[integration][trainer]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 76, 4);
  auto run = [&](int64_t batch, int64_t accum, int64_t n_train, const std::string& sub) {
    std::filesystem::create_directories(dir / sub);
    auto g = std::make_unique<Grabber>();
    auto* gp = g.get();
    std::vector<kg::train::CallbackPtr> extra;
    extra.push_back(std::move(g));
    Rig r(ds.root, dir / sub,
          {"train.epochs=2", "train.batch_size=" + std::to_string(batch), "train.accum_steps=" + std::to_string(accum),
           "optim.lr=0.05", "optim.weight_decay=0.0", "optim.momentum=0.9", "schedule.name=cosine"},
          n_train, std::move(extra));
    r.trainer->fit();
    return std::make_tuple(r.params(), gp->lrs, r.trainer->state().step);
  };
  SECTION("8 x 1 == 1 x 8") {
    auto [a, lra, sa] = run(8, 1, 64, "a");
    auto [b, lrb, sb] = run(1, 8, 64, "b");
    CHECK(sa == 16);
    CHECK(sb == 16);
    CHECK(lra == lrb);  // the schedule advances once per update, whatever accum_steps is
    CHECK(kg::test::max_diff(a, b) < 1e-6);
  }
  SECTION("a short final group is its own mean (60 rows: 7 groups of 8 and one of 4)") {
    auto [a, lra, sa] = run(4, 2, 60, "c");
    auto [b, lrb, sb] = run(1, 8, 60, "d");
    CHECK(sa == 16);
    CHECK(sb == 16);
    CHECK(lra == lrb);
    CHECK(kg::test::max_diff(a, b) < 1e-6);
  }
}

TEST_CASE("clip_grad_norm bounds the global gradient norm the optimizer sees", "[integration][trainer]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 40, 4);
  auto g = std::make_unique<Grabber>();
  auto* gp = g.get();
  std::vector<kg::train::CallbackPtr> extra;
  extra.push_back(std::move(g));
  Rig r(ds.root, dir.path().string(), {"train.epochs=1", "train.clip_grad_norm=0.01"}, 32, std::move(extra));
  r.trainer->fit();
  REQUIRE(gp->grad_norms.size() == 4);
  for (double n : gp->grad_norms) CHECK(n <= 0.01 + 1e-6);
}

TEST_CASE("non-finite losses: skipped and logged, abort after N in a row", "[integration][trainer]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 40, 4);
  // Poison batches 1 and 2 of epoch 0 with NaN inputs.
  auto poison = [](at::Tensor& x, at::Tensor&, int64_t epoch, int64_t index) {
    if (epoch == 0 && (index == 1 || index == 2)) x.fill_(std::numeric_limits<float>::quiet_NaN());
  };
  SECTION("skip: the good updates happen, the bad ones leave the weights alone") {
    Rig r(ds.root, dir.path().string(), {"train.epochs=1", "train.nan_policy=skip"}, 32, {}, poison);
    auto out = r.trainer->fit();
    CHECK(out.status == "completed");
    CHECK(r.trainer->state().skipped_updates == 2);
    CHECK(r.trainer->state().step == 4);
    for (auto& [k, v] : r.params()) CHECK(torch::isfinite(v).all().item<bool>());
  }
  SECTION("abort after 2 consecutive: DivergedError (exit 5), last good weights saved") {
    Rig r(ds.root, dir.path().string(), {"train.epochs=1", "train.nan_max_consecutive=2"}, 32, {}, poison);
    try {
      r.trainer->fit();
      FAIL("expected DivergedError");
    } catch (const kg::DivergedError& e) {
      CHECK(e.exit_code() == 5);
      CHECK(std::string(e.what()).find("2 consecutive") != std::string::npos);
    }
    CHECK(std::filesystem::exists(dir / "checkpoints/last/model.safetensors"));
  }
}

TEST_CASE("freezing trains only the last groups, gradual unfreezing thaws one per epoch", "[integration][trainer]") {
  kg::test::TempDir dir;
  auto ds = kg::test::make_tiny_dataset(dir, 40, 4);
  SECTION("freeze = 1: the stem stays bit-identical") {
    Rig r(ds.root, dir.path().string(), {"train.epochs=1", "train.freeze=1"}, 32);
    auto before = r.params();
    r.trainer->fit();
    auto after = r.params();
    CHECK(torch::equal(before["conv.weight"], after["conv.weight"]));
    CHECK(torch::equal(before["conv.bias"], after["conv.bias"]));
    CHECK_FALSE(torch::equal(before["fc.weight"], after["fc.weight"]));
  }
  SECTION("unfreeze_every = 1: epoch 2 trains the stem") {
    struct Watch : kg::train::Callback {
      std::vector<bool> stem_trainable;
      std::string name() const override { return "watch"; }
      int order() const override { return 1; }
      void on_epoch_begin(kg::train::Trainer& t) override {
        for (auto& p : t.net().named_parameters())
          if (p.key() == "conv.weight") stem_trainable.push_back(p.value().requires_grad());
      }
    };
    auto w = std::make_unique<Watch>();
    auto* wp = w.get();
    std::vector<kg::train::CallbackPtr> extra;
    extra.push_back(std::move(w));
    Rig r(ds.root, dir.path().string(), {"train.epochs=2", "train.freeze=1", "train.unfreeze_every=1"}, 32,
          std::move(extra));
    r.trainer->fit();
    CHECK(wp->stem_trainable == std::vector<bool>{false, true});
  }
  SECTION("freeze on a one-group model, or leaving no group, is a ConfigError") {
    CHECK_THROWS_AS(Rig(ds.root, dir.path().string(), {"train.freeze=2"}, 32), kg::ConfigError);
  }
}

}  // namespace KG_UNITY_ID
}  // namespace
