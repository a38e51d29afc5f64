// train.oom_backoff: a CUDA out-of-memory error inside an update retries the update with half the
// micro-batch and twice the accumulation (the same effective batch, lr and schedule), down to one image
// (two with BatchNorm). The halvings and every back-off are in TrainState, so a resume keeps them.
#pragma once
#include <cstdint>
#include <string>

#include "train/trainer_state.h"

namespace kg::train {

class OomBackoff {
 public:
  // `on`: train.oom_backoff on CUDA (or under the fake-OOM test hook). `accum_steps`: train.accum_steps.
  OomBackoff(bool on, bool has_batch_norm, int64_t accum_steps, std::string device_name);

  bool on() const { return on_; }
  // Images per micro-batch after `halvings` back-offs of loader batches of `full` images.
  static int64_t micro_size(int64_t full, int64_t halvings);
  // Micro-batches of `micro` images in `rows` rows.
  static int64_t chunks_of(int64_t rows, int64_t micro) { return (rows + micro - 1) / micro; }

  // The micro-batch can shrink after an out-of-memory error at `s.oom_halvings` halvings of `full_batch`.
  bool can_shrink(const TrainState& s, int64_t full_batch) const;
  // The DeviceError for an out-of-memory error at the smallest micro-batch (`what`: LibTorch's message).
  std::string exhausted_message(const TrainState& s, int64_t full_batch, const std::string& what) const;
  // One more halving, recorded in `s` (oom_halvings, oom_events); returns the line to log.
  std::string shrink(TrainState& s, int64_t epoch, int64_t full_batch) const;

 private:
  bool on_;
  bool has_batch_norm_;
  int64_t accum_steps_;
  std::string device_name_;
};

}  // namespace kg::train
