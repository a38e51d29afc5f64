// The trainer's counters in a checkpoint (lib/train/trainer_state.h): a round trip, and checkpoints written before
// text training, whose per-epoch counter was "epoch_images", still resume.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "train/trainer_state.h"

namespace {
namespace KG_UNITY_ID {  // each test file's own names in a unity batch (CMakeLists.txt)

TEST_CASE("trainer state: epoch_samples round-trips, and an old epoch_images counter is read", "[unit][train]") {
  kg::train::TrainState s;
  s.epoch = 2;
  s.batch = 7;
  s.epoch_samples = 224;
  auto j = s.to_json();
  CHECK(j.contains("epoch_samples"));
  CHECK_FALSE(j.contains("epoch_images"));
  CHECK(kg::train::TrainState::from_json(j).epoch_samples == 224);
  j["epoch_images"] = j["epoch_samples"];
  j.erase("epoch_samples");
  auto old = kg::train::TrainState::from_json(j);
  CHECK(old.epoch_samples == 224);
  CHECK(old.batch == 7);
}

}  // namespace KG_UNITY_ID
}  // namespace
