#include "device/precision.h"

#include <ATen/autocast_mode.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "device/compat.h"

namespace kg::device {

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "bf16") return Precision::bf16;
  throw ConfigError(detail::cat("device.precision = \"", name, "\": expected fp32 or bf16"));
}

std::string precision_name(Precision p) { return p == Precision::bf16 ? "bf16" : "fp32"; }

bool cpu_has_native_bf16() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string w;
    while (words >> w)
      if (w == "avx512_bf16" || w == "amx_bf16") return true;
    return false;  // the first CPU's flags speak for all
  }
  return false;
}

Precision auto_precision(bool cuda) { return !cuda && cpu_has_native_bf16() ? Precision::bf16 : Precision::fp32; }

namespace {
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
  if (t == c10::kCUDA) at::autocast::set_enabled(on);
  else at::autocast::set_cpu_enabled(on);
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
  if (t == c10::kCUDA) at::autocast::set_autocast_gpu_dtype(d);
  else at::autocast::set_autocast_cpu_dtype(d);
#endif
}
}  // namespace

AutocastScope::AutocastScope(Precision p, c10::DeviceType device_type) : type_(device_type) {
  if (p == Precision::fp32) return;
  KG_CHECK(type_ == c10::kCPU || type_ == c10::kCUDA, ConfigError, "device.precision = \"", precision_name(p),
           "\" needs a CPU or CUDA device");
  active_ = true;
  prev_enabled_ = autocast_enabled(type_);
  prev_dtype_ = static_cast<int>(autocast_dtype(type_));
  set_autocast_dtype(type_, at::kBFloat16);
  set_autocast(type_, true);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  // Like torch.autocast.__exit__: the cached casts of weights go when the outermost scope ends.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  set_autocast(type_, prev_enabled_);
  set_autocast_dtype(type_, static_cast<at::ScalarType>(prev_dtype_));
}

}  // namespace kg::device
