// Device selection and process-wide LibTorch settings. Nothing outside device/ touches CUDA APIs.
#pragma once
#include <string>

#include <c10/core/Device.h>

#include "config/tree.h"
#include "device/backend.h"
#include "device/loss_scaler.h"
#include "device/precision.h"

namespace kg::device {

// Recipe section [device]; each field's doc is in device_fields() (device/device.cpp) and docs/reference.md.
struct DeviceOptions {
  static DeviceOptions load(const config::Tree& recipe);  // recipe.get<DeviceOptions>() decodes it once
  std::string name = "auto";
  int64_t threads = 0;
  bool channels_last = false;
  bool deterministic = false;
  std::string precision = "fp32";
  bool tf32 = true;
  bool cudnn_benchmark = true;
  bool cuda_graphs = false;
  double loss_scale_init = 65536.0;
  int64_t loss_scale_growth_interval = 2000;
  double loss_scale_growth_factor = 2.0;
  double loss_scale_backoff_factor = 0.5;
  int64_t dist_timeout_s = 600;
  double dist_bucket_mb = 25;
  bool dist_overlap = true;
  bool sync_batchnorm = false;
};

// The options of rank `local_rank` of a multi-process job on one machine of `local_world` ranks: its
// own GPU (auto/cuda -> cuda:local_rank) and its share of the cores (threads = 0 -> cores / local_world).
DeviceOptions for_local_rank(DeviceOptions opts, int local_rank, int local_world);

struct DeviceInfo {
  c10::Device device{c10::kCPU};
  DeviceDescription hardware;  // what the choices below were made for
  bool channels_last = false;
  int threads = 1;
  bool deterministic = false;
  bool tf32 = false;             // in effect (false on the CPU and before Ampere)
  bool cudnn_benchmark = false;  // in effect (false on the CPU and with deterministic)
  Precision precision = Precision::fp32;
  LossScalerOptions scaler;  // used when precision is fp16
  std::string description;   // "cpu (2 threads, bf16)" / "cuda:0 NVIDIA H100 80GB HBM3 (compute capability 9.0, 79.1
                             // GiB; bf16, tf32)"

  // A fresh loss scaler: enabled for fp16, a pass-through otherwise.
  LossScaler make_scaler() const { return LossScaler(scaler, precision == Precision::fp16); }
};

// Chooses the device and applies the process-wide settings. DeviceError for an unavailable device,
// ConfigError for a precision the device cannot run.
DeviceInfo setup(const DeviceOptions& opts);
// What setup() decides for `hw`, without touching LibTorch (unit tests use fake hardware).
DeviceInfo plan(const DeviceOptions& opts, const DeviceDescription& hw);
// Applies `info`'s threads, deterministic algorithms (and CUBLAS_WORKSPACE_CONFIG), TF32 and cuDNN
// benchmark flags to LibTorch's global context.
void apply(const DeviceInfo& info);

// Cores this process may run on (sched affinity), at least 1.
int available_cores();
bool cuda_available();
// "CUDA 12.1, cuDNN 8902" or "" for CPU-only builds.
std::string cuda_build_info();

}  // namespace kg::device
