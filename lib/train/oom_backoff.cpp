#include "train/oom_backoff.h"

#include <algorithm>

namespace kg::train {

OomBackoff::OomBackoff(bool on, bool has_batch_norm, int64_t accum_steps, std::string device_name)
    : on_(on), has_batch_norm_(has_batch_norm), accum_steps_(accum_steps), device_name_(std::move(device_name)) {}

int64_t OomBackoff::micro_size(int64_t full, int64_t halvings) {
  int64_t m = full;
  for (int64_t i = 0; i < halvings; ++i) m = (m + 1) / 2;
  return std::max<int64_t>(1, m);
}

bool OomBackoff::can_shrink(const TrainState& s, int64_t full_batch) const {
  // BatchNorm cannot normalise a single image in training mode: its networks stop at two.
  const int64_t smallest = has_batch_norm_ ? 2 : 1;
  return micro_size(full_batch, s.oom_halvings + 1) >= smallest && micro_size(full_batch, s.oom_halvings) > smallest;
}

std::string OomBackoff::exhausted_message(const TrainState& s, int64_t full_batch, const std::string& what) const {
  const int64_t from = micro_size(full_batch, s.oom_halvings);
  return "out of memory at the smallest micro-batch (" + std::to_string(from) + " image" + (from > 1 ? "s" : "") +
         (has_batch_norm_ ? "; BatchNorm needs two" : "") + ", train.batch_size " + std::to_string(full_batch) +
         ", halved " + std::to_string(s.oom_halvings) + " time(s)) on " + device_name_ + ": " + what +
         ". The model does not fit: lower data.image_size, set model.grad_checkpointing = true or "
         "device.precision = \"auto\", or pick a smaller model; checkpoints/last is saved";
}

std::string OomBackoff::shrink(TrainState& s, int64_t epoch, int64_t full_batch) const {
  const int64_t from = micro_size(full_batch, s.oom_halvings);
  ++s.oom_halvings;
  const int64_t to = micro_size(full_batch, s.oom_halvings);
  const int64_t accum = accum_steps_ * chunks_of(full_batch, to);
  s.oom_events.push_back(
      {{"epoch", epoch + 1}, {"update", s.step + 1}, {"from", from}, {"to", to}, {"accum_steps", accum}});
  return "  out of memory at update " + std::to_string(s.step + 1) + " (micro-batch " + std::to_string(from) +
         "): now " + std::to_string(to) + " x " + std::to_string(accum) + " accumulated per update (effective batch " +
         std::to_string(full_batch * accum_steps_) + ", lr and schedule unchanged); retrying the update";
}

}  // namespace kg::train
