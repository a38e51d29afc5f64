// Where the training loop stands (TrainState), saved in every checkpoint's state.json "trainer".
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kg::train {

// Where the loop stands; saved in every checkpoint (state.json "trainer").
struct TrainState {
  int64_t epoch = 0;            // epochs completed
  int64_t batch = 0;            // micro-batches consumed in the current epoch
  int64_t step = 0;             // optimizer updates so far (skipped ones included: the schedule's index)
  int64_t skipped_updates = 0;  // non-finite updates skipped so far
  int64_t nan_streak = 0;       // consecutive skipped updates
  double epoch_loss_sum = 0;    // training loss summed over the epoch's micro-batches so far
  int64_t epoch_loss_count = 0;
  int64_t epoch_samples = 0;
  double epoch_seconds = 0;  // training time of the epoch so far (resumed epochs add up)
  int64_t train_images = 0;  // whole run
  double train_seconds = 0;
  double elapsed_seconds = 0;  // wall time of completed epochs (validation included), across resumes
  std::optional<double> best;  // monitored value of checkpoints/best
  int64_t best_epoch = 0;
  std::string best_from;                             // "model" or a variant ("ema", "swa")
  nlohmann::json history = nlohmann::json::array();  // one object per completed epoch (metrics.jsonl)
  std::string stop_reason;                           // set when a callback ends the run early
  int64_t oom_halvings = 0;  // out-of-memory back-offs: micro-batches are loader batches / 2^this
  nlohmann::json oom_events = nlohmann::json::array();  // one object per back-off (epoch, update, from, to)
  int64_t world_size = 1;  // processes that trained (batch counts global batches of batch_size * world_size)

  nlohmann::json to_json() const;
  static TrainState from_json(const nlohmann::json& j);
};

}  // namespace kg::train
