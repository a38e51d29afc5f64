// Device selection and process-wide LibTorch settings. Nothing outside device/ touches CUDA APIs.
#pragma once
#include <string>

#include <c10/core/Device.h>

#include "config/tree.h"
#include "device/precision.h"

namespace kg::device {

struct DeviceOptions {
  std::string name = "auto";  ///< auto | cpu | cuda | cuda:N
  int64_t threads = 0;        ///< intra-op CPU threads; 0 = every core this process may use
  bool channels_last = false; ///< NHWC memory layout for convolution models (faster with cuDNN on tensor cores)
  bool deterministic = false; ///< deterministic algorithms only (an op without one is an error); resume is then bit-exact
  std::string precision = "fp32";  ///< fp32 | bf16 (autocast)
};

struct DeviceInfo {
  c10::Device device{c10::kCPU};
  bool channels_last = false;
  int threads = 1;
  bool deterministic = false;
  Precision precision = Precision::fp32;
  std::string description;  // "cpu (2 threads)" / "cuda:0 (NVIDIA H100, 80 GB)"
};

// Chooses the device and applies thread settings. Throws DeviceError for an unavailable device.
DeviceInfo setup(const DeviceOptions& opts);
DeviceOptions load_options(const config::Tree& recipe);

// Cores this process may run on (sched affinity), at least 1.
int available_cores();
bool cuda_available();
// "CUDA 12.1, cuDNN 8902" or "" for CPU-only builds.
std::string cuda_build_info();

}  // namespace kg::device
