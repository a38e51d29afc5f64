#include "device/loss_scaler.h"

#include <ATen/ATen.h>

#include <cmath>

#include "core/error.h"

namespace kg::device {

LossScaler::LossScaler(const LossScalerOptions& o, bool enabled) : o_(o), enabled_(enabled), scale_(o.init_scale) {}

bool LossScaler::unscale_and_check(const std::vector<at::Tensor>& grads) const {
  if (grads.empty()) return true;
  at::NoGradGuard ng;
  const auto& dev = grads.front().device();
  auto found_inf = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(dev));
  auto inv = at::full({1}, enabled_ ? 1.0 / scale_ : 1.0, at::TensorOptions().dtype(at::kFloat).device(dev));
  if (dev.is_cuda()) {
    // The fused kernel GradScaler uses: one launch per tensor list, found_inf set on the device.
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv);
  } else {
    // LibTorch 1.13 has no CPU kernel for it: the same arithmetic, tensor by tensor.
    for (const auto& g : grads) {
      if (enabled_) g.mul_(inv.to(g.scalar_type()));
      found_inf.add_(g.isfinite().logical_not().any().to(at::kFloat));
    }
  }
  return found_inf.item<float>() == 0.0f;
}

void LossScaler::update(bool finite) {
  if (!enabled_) return;
  if (!finite) {
    scale_ *= o_.backoff_factor;
    tracker_ = 0;
    ++skips_;
    return;
  }
  if (++tracker_ >= o_.growth_interval) {
    scale_ *= o_.growth_factor;
    tracker_ = 0;
  }
}

nlohmann::json LossScaler::state() const {
  return {{"enabled", enabled_}, {"scale", scale_}, {"growth_tracker", tracker_}, {"overflow_skips", skips_}};
}

void LossScaler::load_state(const nlohmann::json& j) {
  if (j.is_null() || j.empty()) return;  // a checkpoint written without a scaler (fp32/bf16 run): keep the fresh state
  try {
    if (!j.value("enabled", true)) return;  // resumed from a run without a scaler: start at init_scale
    scale_ = j.at("scale").get<double>();
    tracker_ = j.at("growth_tracker").get<int64_t>();
    skips_ = j.value("overflow_skips", int64_t{0});
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(std::string("checkpoint state.json \"scaler\" is malformed: ") + e.what());
  }
  KG_CHECK(scale_ > 0 && std::isfinite(scale_), CheckpointError, "checkpoint state.json \"scaler\": scale ", scale_,
           " is not a positive finite number");
}

}  // namespace kg::device
