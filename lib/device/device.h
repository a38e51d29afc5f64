// Device selection and process-wide LibTorch settings. Nothing outside device/ touches CUDA APIs.
#pragma once
#include <string>

#include <c10/core/Device.h>

#include "config/tree.h"
#include "device/backend.h"
#include "device/loss_scaler.h"
#include "device/precision.h"

namespace kg::device {

struct DeviceOptions {
  std::string name = "auto";   ///< auto | cpu | cuda | cuda:N
  int64_t threads = 0;         ///< intra-op CPU threads; 0 = every core this process may use
  bool channels_last = false;  ///< NHWC memory layout for convolution models (faster with cuDNN on tensor cores)
  bool deterministic =
      false;  ///< deterministic algorithms only (an op without one is an error); resume is then bit-exact
  std::string precision = "fp32";  ///< fp32 | fp16 | bf16 | auto (autocast)
  bool tf32 = true;                ///< TF32 tensor cores for float32 matmuls and convolutions (CUDA, Ampere and newer)
  bool cudnn_benchmark = true;  ///< cuDNN tries the convolution algorithms once per input shape and keeps the fastest
  bool cuda_graphs = false;     ///< training micro-batches replayed from CUDA graphs (one launch per step)
  double loss_scale_init = 65536.0;           ///< fp16: first loss scale
  int64_t loss_scale_growth_interval = 2000;  ///< fp16: clean updates before the scale doubles
  double loss_scale_growth_factor = 2.0;      ///< fp16: scale growth
  double loss_scale_backoff_factor = 0.5;     ///< fp16: scale backoff after an inf/NaN update (which is skipped)
  int64_t dist_timeout_s = 600;  ///< multi-process: seconds a collective waits for the other ranks before the job fails
  double dist_bucket_mb =
      25;                    ///< multi-process: gradients all-reduced in buckets of this many MB (DDP's bucket_cap_mb)
  bool dist_overlap = true;  ///< multi-process: buckets all-reduced while backward runs (DDP's overlap)
  bool sync_batchnorm = false;  ///< multi-process: BatchNorm statistics over the global batch (SyncBatchNorm)
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
DeviceOptions load_options(const config::Tree& recipe);
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
