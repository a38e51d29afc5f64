#include "device/device.h"

#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include <ATen/Parallel.h>
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/cuda.h>

#include "config/sections.h"
#include "core/error.h"
#include "core/strings.h"
#include "device/cuda_rtc.h"
#include "device/math_libs.h"

namespace kg::device {
namespace {
config::Fields<DeviceOptions> device_fields() {
  config::Fields<DeviceOptions> f;
  f.field("name", &DeviceOptions::name, "auto | cpu | cuda | cuda:N (auto: CUDA when available)")
      .check([](const config::json& v) -> std::string {
        auto s = v.get<std::string>();
        if (s == "auto" || s == "cpu" || s == "cuda") return "";
        // N: a device index, at most 4 digits (CUDA numbers its devices from 0; an int must hold it)
        if (starts_with(s, "cuda:") && s.size() > 5 && s.size() <= 9 &&
            s.find_first_not_of("0123456789", 5) == std::string::npos)
          return "";
        return "expected auto, cpu, cuda or cuda:N (N a device index, 0 to 9999), got \"" + s + "\"";
      });
  f.field("threads", &DeviceOptions::threads, "intra-op CPU threads; 0 = all cores available to the process")
      .range(0, 1024);
  f.field("channels_last", &DeviceOptions::channels_last,
          "NHWC (channels_last) memory layout for the model's weights and inputs; helps convolutions on GPUs "
          "with tensor cores (CPU figures: docs/performance.md)");
  f.field("deterministic", &DeviceOptions::deterministic,
          "use deterministic algorithms only (LibTorch raises for an op without one); with it a killed and resumed "
          "run ends with the same weights as an uninterrupted one");
  f.field("precision", &DeviceOptions::precision,
          "fp32, fp16, bf16 or auto: forward passes (training, evaluation, prediction) under autocast; weights, "
          "gradients, optimizer state and the loss stay float32. fp16 (CUDA only) adds the dynamic loss scaler; bf16 "
          "needs Ampere or newer on CUDA, and is fast on CPUs with AVX512-BF16/AMX. auto: bf16 on Ampere+ and on "
          "such CPUs, fp16 on P100/V100/T4 (compute capability 6.x-7.x), else fp32")
      .choices({"fp32", "fp16", "bf16", "auto"});
  f.field("tf32", &DeviceOptions::tf32,
          "TF32 tensor cores for float32 matmuls and convolutions (CUDA, Ampere and newer; ignored elsewhere): ~10 "
          "bits of mantissa instead of 23, several times faster");
  f.field("cudnn_benchmark", &DeviceOptions::cudnn_benchmark,
          "cuDNN times its convolution algorithms once per input shape and keeps the fastest (CUDA; off with "
          "device.deterministic)");
  f.field("cuda_graphs", &DeviceOptions::cuda_graphs,
          "CUDA: capture each training micro-batch's forward, loss and backward in a CUDA graph (one per input shape) "
          "and replay it: one launch instead of hundreds of kernels, for small models whose steps are bound by "
          "launch overhead (Keras' steps_per_execution). The optimizer step stays eager; results equal eager ones. "
          "Ignored on the CPU (logged); not with model.grad_checkpointing or device.sync_batchnorm; multi-process "
          "runs then sum gradients after backward");
  f.field("loss_scale_init", &DeviceOptions::loss_scale_init, "fp16: the first loss scale (GradScaler's init_scale)")
      .positive();
  f.field("loss_scale_growth_interval", &DeviceOptions::loss_scale_growth_interval,
          "fp16: clean updates in a row before the loss scale grows")
      .min(1);
  f.field("loss_scale_growth_factor", &DeviceOptions::loss_scale_growth_factor, "fp16: loss scale growth factor")
      .min(1, true);
  f.field("loss_scale_backoff_factor", &DeviceOptions::loss_scale_backoff_factor,
          "fp16: loss scale factor after an update with inf/NaN gradients (the update is skipped)")
      .range(0, 1)
      .min(0, true);
  f.field("dist_timeout_s", &DeviceOptions::dist_timeout_s,
          "multi-process runs (torchrun, fit --nproc): seconds the rendezvous and each collective wait for the other "
          "ranks; a rank that died or hangs then ends the job with exit 4 instead of a hang")
      .min(1);
  f.field("dist_bucket_mb", &DeviceOptions::dist_bucket_mb,
          "multi-process runs: gradients are all-reduced in buckets of at most this many MB (DDP's bucket_cap_mb)")
      .positive();
  f.field("dist_overlap", &DeviceOptions::dist_overlap,
          "multi-process runs: a bucket is all-reduced as soon as backward has its gradients, while the layers "
          "below are still computed (DDP); false = all buckets after backward (then an out-of-memory error in "
          "backward can still be retried at a smaller micro-batch)");
  f.field("sync_batchnorm", &DeviceOptions::sync_batchnorm,
          "multi-process runs: BatchNorm layers normalise with the statistics of the global batch, summed over the "
          "ranks (torch.nn.SyncBatchNorm): small per-GPU batches then train like one large batch");
  return f;
}
KG_REGISTER_SECTION("device", "where the model runs", device_fields().schema(), "");
}  // namespace

DeviceOptions DeviceOptions::load(const config::Tree& recipe) {
  return device_fields().load(config::Options(&recipe, "device"));
}

int available_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return 1;
}

bool cuda_available() { return torch::cuda::is_available(); }

std::string cuda_build_info() {
#if KG_WITH_CUDA
  // The CUDA hooks are registered whenever LibTorch's CUDA library is linked in, GPU or not; at::hasCUDA() is
  // false without a driver or a GPU, which is a run-time fact, not the build's.
  std::string s = "CUDA";
  try {
    const auto& hooks = at::detail::getCUDAHooks();
    long rt = hooks.versionCUDART();  // e.g. 12040 for 12.4
    if (rt > 0) s += " " + std::to_string(rt / 1000) + "." + std::to_string(rt % 1000 / 10);
    long dnn = hooks.versionCuDNN();
    if (dnn > 0) s += ", cuDNN " + std::to_string(dnn);
  } catch (const std::exception&) {
    s += " (version unknown)";
  }
  const bool gpus = at::hasCUDA();
  if (!gpus) return s + "; no GPU visible (no NVIDIA driver or device): runs on the CPU";
  const int n = static_cast<int>(torch::cuda::device_count());
  s += "; " + std::to_string(n) + " GPU(s) visible";
  // Each GPU as the driver names it, with the compute capability that decides which kernels run on it.
  for (int i = 0; i < n; ++i) {
    try {
      const auto g = cuda_rtc::gpu_info(i);
      char mem[32];
      std::snprintf(mem, sizeof(mem), "%.1f GiB", static_cast<double>(g.total_memory) / (1 << 30));
      s += "\nGPU " + std::to_string(i) + ": " + g.name + ", compute capability " + std::to_string(g.cc_major) + "." +
           std::to_string(g.cc_minor) + " (sm_" + std::to_string(g.sm()) + "), " + mem;
    } catch (const Error& e) {
      s += "\nGPU " + std::to_string(i) + ": " + e.what();
    }
  }
  return s;
#else
  return "";
#endif
}

DeviceInfo plan(const DeviceOptions& opts, const DeviceDescription& hw) {
  DeviceInfo info;
  info.hardware = hw;
  info.device = c10::Device(hw.type, static_cast<c10::DeviceIndex>(hw.is_cuda() ? hw.index : -1));
  // Debian's LibTorch starts with one intra-op thread; kgtrain sets it explicitly.
  info.threads = opts.threads > 0 ? static_cast<int>(opts.threads) : available_cores();
  info.channels_last = opts.channels_last;
  info.deterministic = opts.deterministic;
  info.precision = choose_precision(opts.precision, hw);
  info.tf32 = opts.tf32 && hw.tf32 && !opts.deterministic;
  info.cudnn_benchmark = opts.cudnn_benchmark && hw.is_cuda() && !opts.deterministic;
  info.scaler = {opts.loss_scale_init, opts.loss_scale_growth_factor, opts.loss_scale_backoff_factor,
                 opts.loss_scale_growth_interval};
  std::vector<std::string> notes;
  if (!hw.is_cuda()) notes.push_back(std::to_string(info.threads) + " threads");
  if (info.precision != Precision::fp32)
    notes.push_back(precision_name(info.precision) + (info.precision == Precision::fp16 ? " + loss scaler" : ""));
  if (info.tf32) notes.push_back("tf32");
  if (info.cudnn_benchmark) notes.push_back("cudnn benchmark");
  if (info.deterministic) notes.push_back("deterministic");
  if (hw.is_cuda()) {
    info.description = "cuda:" + std::to_string(hw.index) + " " + hw.str();
    if (!notes.empty()) info.description += "; " + join(notes, ", ");
  } else {
    info.description = "cpu (" + join(notes, ", ") + ")";
  }
  return info;
}

void apply(const DeviceInfo& info) {
  at::set_num_threads(info.threads);
  auto& ctx = at::globalContext();
  if (info.deterministic) {
    // cuBLAS is deterministic only with a fixed workspace; it reads the variable when it starts, which
    // is after this (no CUDA work has run yet). A value the user set is kept.
    ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  }
  ctx.setDeterministicAlgorithms(info.deterministic, /*warn_only=*/false);
  ctx.setDeterministicCuDNN(info.deterministic);
  ctx.setBenchmarkCuDNN(info.cudnn_benchmark);
  ctx.setAllowTF32CuBLAS(info.tf32);
  ctx.setAllowTF32CuDNN(info.tf32);
}

DeviceOptions for_local_rank(DeviceOptions opts, int local_rank, int local_world) {
  if (opts.name == "cuda" || (opts.name == "auto" && cuda_available()))
    opts.name = "cuda:" + std::to_string(local_rank);
  if (opts.threads == 0) opts.threads = std::max(1, available_cores() / std::max(1, local_world));
  return opts;
}

DeviceInfo setup(const DeviceOptions& opts) {
  const Backend* backend = nullptr;
  int index = 0;
  if (opts.name == "auto") {
    for (const auto* b : backends())
      if (b->available()) {
        backend = b;
        break;
      }
    KG_ASSERT(backend != nullptr, "no device backend is available (the CPU one always is)");
  } else {
    const std::string kind = opts.name.substr(0, opts.name.find(':'));
    backend = find_backend(kind);
    KG_CHECK(backend != nullptr, ConfigError, "device.name = \"", opts.name, "\": no backend \"", kind, "\"");
    if (kind != opts.name) index = std::stoi(opts.name.substr(kind.size() + 1));
    KG_CHECK(backend->available(), DeviceError, "device.name = \"", opts.name,
             "\" but CUDA is not available (this kgtrain was built against a CPU-only LibTorch, or no GPU is visible); "
             "use device.name=cpu or device.name=auto");
    const int count = backend->count();
    KG_CHECK(index < count, DeviceError, "device.name = \"", opts.name, "\" but only ", count, " ", kind,
             " device(s) are visible");
  }
  DeviceInfo info = plan(opts, backend->describe(index));
  if (!info.hardware.is_cuda()) {
    // "cpu (2 threads, bf16)" -> "cpu (2 threads, bf16; BLAS OpenBLAS 0.3.21 (openmp), oneDNN 2.7.3)": the math
    // libraries decide CPU speed as much as the threads do, so every report that names the device names them.
    info.description.insert(info.description.size() - 1, "; " + math_libs_brief());
    static bool warned = false;  // once per process (fit and its lr finder both set up the device)
    if (!warned && !reference_blas_warning().empty()) std::cerr << "kgtrain: " << reference_blas_warning() << "\n";
    warned = true;
  }
  apply(info);
  return info;
}

}  // namespace kg::device
