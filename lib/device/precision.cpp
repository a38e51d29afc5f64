#include "device/precision.h"

#include <ATen/autocast_mode.h>

#include <fstream>
#include <sstream>

#include "core/error.h"
#include "device/backend.h"
#include "device/autocast_state.h"

namespace kg::device {

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "fp16") return Precision::fp16;
  if (name == "bf16") return Precision::bf16;
  throw ConfigError(detail::cat("device.precision = \"", name, "\": expected fp32, fp16, bf16 or auto"));
}

std::string precision_name(Precision p) {
  switch (p) {
    case Precision::fp16:
      return "fp16";
    case Precision::bf16:
      return "bf16";
    default:
      return "fp32";
  }
}

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

Precision choose_precision(const std::string& requested, const DeviceDescription& d) {
  if (requested == "auto") {
    if (!d.is_cuda()) return d.native_bf16 ? Precision::bf16 : Precision::fp32;
    if (d.cc_major >= 8) return Precision::bf16;
    if (d.cc_major >= 6) return Precision::fp16;
    return Precision::fp32;
  }
  const Precision p = parse_precision(requested);
  if (p == Precision::bf16 && d.is_cuda() && d.cc_major < 8)
    throw ConfigError(detail::cat("device.precision = \"bf16\" but ", d.str(),
                                  " has no bf16 tensor cores (they start with "
                                  "Ampere, compute capability 8.0): use device.precision = \"fp16\" (with the loss "
                                  "scaler) or \"auto\""));
  if (p == Precision::fp16 && !d.is_cuda())
    throw ConfigError(
        "device.precision = \"fp16\" needs a CUDA device (LibTorch's CPU autocast computes in bf16 only): "
        "use \"bf16\" (fast on CPUs with AVX512-BF16 or AMX), \"fp32\" or \"auto\"");
  return p;
}

AutocastScope::AutocastScope(Precision p, c10::DeviceType device_type) : type_(device_type) {
  if (p == Precision::fp32) return;
  KG_CHECK(type_ == c10::kCPU || type_ == c10::kCUDA, ConfigError, "device.precision = \"", precision_name(p),
           "\" needs a CPU or CUDA device");
  active_ = true;
  prev_enabled_ = autocast_enabled(type_);
  prev_dtype_ = static_cast<int>(autocast_dtype(type_));
  set_autocast_dtype(type_, p == Precision::fp16 ? at::kHalf : at::kBFloat16);
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
