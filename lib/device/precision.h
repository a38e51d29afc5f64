// Mixed precision: `device.precision` and the autocast scope the training step, evaluation and
// prediction run their forward passes in. fp32 is a no-op; bf16 and fp16 autocast matmuls and
// convolutions to 16 bits (weights, gradients and optimizer state stay float32). fp16 needs the
// dynamic loss scaler (device/loss_scaler.h); bf16 has float32's range and needs none.
#pragma once
#include <string>

#include <c10/core/DeviceType.h>

namespace kg::device {

enum class Precision { fp32, fp16, bf16 };

struct DeviceDescription;

Precision parse_precision(
    const std::string& name);  // fp32 | fp16 | bf16; ConfigError naming device.precision otherwise
std::string precision_name(Precision p);
bool cpu_has_native_bf16();

// The precision `requested` ("auto" or a name) resolves to on `d`, or a ConfigError saying why the
// device cannot run it. auto (Lightning's "16-mixed"/"bf16-mixed" choice, made for the user):
//   CPU: bf16 with native bf16 arithmetic (AVX512-BF16 or AMX), else fp32 (emulated bf16 is slower);
//   CUDA: bf16 on compute capability >= 8.0 (Ampere and newer), fp16 on 6.0-7.x (P100, V100, T4),
//   fp32 below.
// Explicit requests: bf16 on CUDA below 8.0 and fp16 on the CPU are refused (LibTorch's CPU autocast
// has no fp16 before 2.x, and CUDA bf16 before Ampere is emulated).
Precision choose_precision(const std::string& requested, const DeviceDescription& d);

// RAII: autocast on `device_type` at `p` for the scope (restores the previous state, clears the cast
// cache on exit the way torch.autocast's __exit__ does). Outputs of autocast ops may be 16-bit: callers
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
