#include "device/autocast_state.h"

#include <ATen/autocast_mode.h>

#include "device/compat.h"

namespace kg::device {

// LibTorch 2.4 replaced the per-device setters with ones taking the device type.
bool autocast_enabled(c10::DeviceType t) {
#if KG_TORCH_VERSION_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(t);
#else
  return t == c10::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}
void set_autocast(c10::DeviceType t, bool on) {
#if KG_TORCH_VERSION_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(t, on);
#else
  if (t == c10::kCUDA)
    at::autocast::set_enabled(on);
  else
    at::autocast::set_cpu_enabled(on);
#endif
}
at::ScalarType autocast_dtype(c10::DeviceType t) {
#if KG_TORCH_VERSION_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(t);
#else
  return t == c10::kCUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#endif
}
void set_autocast_dtype(c10::DeviceType t, at::ScalarType d) {
#if KG_TORCH_VERSION_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(t, d);
#else
  if (t == c10::kCUDA)
    at::autocast::set_autocast_gpu_dtype(d);
  else
    at::autocast::set_autocast_cpu_dtype(d);
#endif
}

AutocastState AutocastState::current() {
  AutocastState s;
  s.cpu_on = autocast_enabled(c10::kCPU);
  s.cuda_on = autocast_enabled(c10::kCUDA);
  s.cpu_dtype = autocast_dtype(c10::kCPU);
  s.cuda_dtype = autocast_dtype(c10::kCUDA);
  return s;
}

namespace {
void apply(const AutocastState& s) {
  set_autocast_dtype(c10::kCPU, s.cpu_dtype);
  set_autocast_dtype(c10::kCUDA, s.cuda_dtype);
  set_autocast(c10::kCPU, s.cpu_on);
  set_autocast(c10::kCUDA, s.cuda_on);
}
}  // namespace

AutocastReplay::AutocastReplay(const AutocastState& s) : prev_(AutocastState::current()) {
  apply(s);
  nested_ = s.cpu_on || s.cuda_on;
  if (nested_) at::autocast::increment_nesting();
}

AutocastReplay::~AutocastReplay() {
  if (nested_ && at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  apply(prev_);
}

}  // namespace kg::device
