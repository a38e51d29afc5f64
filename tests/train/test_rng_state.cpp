// RNG capture/restore: a resumed run draws the same dropout masks and init values as an uninterrupted one.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "core/error.h"
#include "train/checkpoint.h"
#include "train/rng_state.h"
#include "support/temp_dir.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

TEST_CASE("rng: capture, draw, restore, draw again gives identical numbers", "[unit][rng]") {
  torch::manual_seed(1234);
  torch::rand({3});  // move off the seed's start
  auto saved = kg::train::capture_rng();
  REQUIRE(saved.count("rng.cpu") == 1);
  CHECK(saved.at("rng.cpu").scalar_type() == torch::kByte);
  CHECK(saved.at("rng.cpu").dim() == 1);
  // randn caches a second normal sample inside the generator: draw an odd count so that cache is live.
  auto a1 = torch::rand({7});
  auto a2 = torch::randn({5});
  auto a3 = torch::dropout(torch::ones({64}), 0.5, true);
  kg::train::restore_rng(saved);
  auto b1 = torch::rand({7});
  auto b2 = torch::randn({5});
  auto b3 = torch::dropout(torch::ones({64}), 0.5, true);
  CHECK(torch::equal(a1, b1));
  CHECK(torch::equal(a2, b2));
  CHECK(torch::equal(a3, b3));
  // And the capture itself does not disturb the stream.
  kg::train::restore_rng(saved);
  auto again = kg::train::capture_rng();
  CHECK(torch::equal(again.at("rng.cpu"), saved.at("rng.cpu")));
  CHECK(torch::equal(torch::rand({7}), a1));
  // Without a restore the stream moves on.
  CHECK_FALSE(torch::equal(torch::rand({7}), a1));
}

TEST_CASE("rng: survives a checkpoint round trip", "[unit][rng][checkpoint]") {
  kg::test::TempDir d;
  torch::manual_seed(7);
  kg::train::CheckpointFiles f;
  f.model["w"] = torch::zeros({2});
  f.state_tensors = kg::train::capture_rng();
  f.state = {{"step", 1}};
  kg::train::save_checkpoint(d / "last", f);
  auto expect = torch::randn({9});
  torch::manual_seed(99);
  kg::train::restore_rng(kg::train::load_checkpoint(d / "last").state_tensors);
  CHECK(torch::equal(torch::randn({9}), expect));
}

TEST_CASE("rng: absent or malformed states are CheckpointErrors", "[unit][rng]") {
  kg::model::TensorMap none;
  none["optim.step"] = torch::zeros({1});
  CHECK_THROWS_AS(kg::train::restore_rng(none), kg::CheckpointError);
  try {
    kg::train::restore_rng(none);
  } catch (const kg::CheckpointError& e) {
    CHECK(std::string(e.what()).find("rng.cpu") != std::string::npos);
  }
  auto good = kg::train::capture_rng();
  kg::model::TensorMap bad = good;
  bad["rng.cpu"] = good.at("rng.cpu").to(torch::kFloat);
  CHECK_THROWS_AS(kg::train::restore_rng(bad), kg::CheckpointError);
  bad["rng.cpu"] = good.at("rng.cpu").narrow(0, 0, 100).clone();  // truncated state
  CHECK_THROWS_AS(kg::train::restore_rng(bad), kg::CheckpointError);
  bad = good;
  bad["rng.cuda.x"] = good.at("rng.cpu");
  CHECK_THROWS_AS(kg::train::restore_rng(bad), kg::CheckpointError);
  // A CUDA state for a device this machine lacks is skipped, not an error.
  kg::model::TensorMap moved = good;
  moved["rng.cuda.7"] = torch::zeros({16}, torch::kByte);
  if (torch::cuda::device_count() <= 7) CHECK_NOTHROW(kg::train::restore_rng(moved));
}

}  // namespace KG_UNITY_ID
}  // namespace
