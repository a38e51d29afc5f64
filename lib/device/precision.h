// Mixed precision: `device.precision` and the autocast scope the training step, evaluation and
// prediction run their forward passes in. fp32 is a no-op; bf16 autocasts matmuls and convolutions to
// bfloat16 (weights, gradients and optimizer state stay float32, no loss scaler needed).
#pragma once
#include <string>

#include <c10/core/DeviceType.h>

namespace kg::device {

enum class Precision { fp32, bf16 };

Precision parse_precision(const std::string& name);  // fp32 | bf16; ConfigError naming device.precision otherwise
// device.precision = "auto": bf16 on a CPU with native bf16 arithmetic (AVX512-BF16 or AMX), fp32 otherwise
// (emulated bf16 is slower than fp32); on CUDA fp32 until the device work chooses per compute capability.
Precision auto_precision(bool cuda);
bool cpu_has_native_bf16();
std::string precision_name(Precision p);

// RAII: autocast on `device_type` at `p` for the scope (restores the previous state, clears the cast
// cache on exit the way torch.autocast's __exit__ does). Outputs of autocast ops may be bfloat16: callers
// that need float32 (losses, metrics) convert with .to(at::kFloat).
class AutocastScope {
 public:
  AutocastScope(Precision p, c10::DeviceType device_type);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType type_;
  bool prev_enabled_ = false;
  int prev_dtype_ = 0;
};

}  // namespace kg::device
