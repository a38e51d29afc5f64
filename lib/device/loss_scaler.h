// Dynamic loss scaling for fp16 training (torch.cuda.amp.GradScaler's rules): the loss is multiplied
// by `scale` before backward so small fp16 gradients do not flush to zero; gradients are divided by it
// before clipping and the optimizer step. An update whose gradients hold an inf/NaN is skipped and the
// scale multiplied by `backoff_factor`; after `growth_interval` clean updates in a row it is multiplied by
// `growth_factor`. The state (scale, clean-update count) is part of every checkpoint.
#pragma once
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace kg::device {

// Not recipe keys: filled from device.loss_scale_* (device/device.cpp).
struct LossScalerOptions {
  double init_scale = 65536.0;     // first scale (2^16)
  double growth_factor = 2.0;      // scale x this after growth_interval clean updates
  double backoff_factor = 0.5;     // scale x this after an update with inf/NaN gradients (which is skipped)
  int64_t growth_interval = 2000;  // clean updates in a row before the scale grows
};

class LossScaler {
 public:
  LossScaler() = default;
  explicit LossScaler(const LossScalerOptions& o, bool enabled = true);

  bool enabled() const { return enabled_; }
  double scale() const { return enabled_ ? scale_ : 1.0; }
  // Divides every gradient by the scale in place and says whether all of them are finite. One
  // device-to-host sync. With the scaler disabled: checks only (no division).
  bool unscale_and_check(const std::vector<at::Tensor>& grads) const;
  // After each update: `finite` false backs the scale off (the caller skipped the step), true counts
  // towards growth.
  void update(bool finite);

  int64_t growth_tracker() const { return tracker_; }
  int64_t overflow_skips() const { return skips_; }
  nlohmann::json state() const;              // {"scale", "growth_tracker", "overflow_skips"}
  void load_state(const nlohmann::json& j);  // CheckpointError when malformed

 private:
  LossScalerOptions o_;
  bool enabled_ = false;
  double scale_ = 1.0;
  int64_t tracker_ = 0;
  int64_t skips_ = 0;
};

}  // namespace kg::device
