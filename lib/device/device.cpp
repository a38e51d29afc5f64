#include "device/device.h"

#include <sched.h>

#include <ATen/Parallel.h>
#include <ATen/Context.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/cuda.h>

#include "config/sections.h"
#include "core/error.h"
#include "core/strings.h"

namespace kg::device {
namespace {
config::Fields<DeviceOptions> fields() {
  config::Fields<DeviceOptions> f;
  f.field("name", &DeviceOptions::name, "auto | cpu | cuda | cuda:N (auto: CUDA when available)")
      .check([](const config::json& v) -> std::string {
        auto s = v.get<std::string>();
        if (s == "auto" || s == "cpu" || s == "cuda") return "";
        if (starts_with(s, "cuda:") && s.size() > 5 && s.find_first_not_of("0123456789", 5) == std::string::npos) return "";
        return "expected auto, cpu, cuda or cuda:N, got \"" + s + "\"";
      });
  f.field("threads", &DeviceOptions::threads, "intra-op CPU threads; 0 = all cores available to the process").min(0);
  f.field("channels_last", &DeviceOptions::channels_last,
          "NHWC (channels_last) memory layout for the model's weights and inputs; helps convolutions on GPUs "
          "with tensor cores (see README Performance for CPU figures)");
  f.field("deterministic", &DeviceOptions::deterministic,
          "use deterministic algorithms only (LibTorch raises for an op without one); with it a killed and resumed "
          "run ends with the same weights as an uninterrupted one");
  f.field("precision", &DeviceOptions::precision,
          "fp32, bf16, or auto (bf16 on a CPU with native bf16 — AVX512-BF16 or AMX — else fp32; fp32 on CUDA for now). bf16: forward passes (training, evaluation, prediction) under autocast to bfloat16 — convolutions "
          "and matmuls in bf16, weights, gradients, optimizer state and the loss in float32, no loss scaler. About 2x "
          "faster on CPUs with AVX512-BF16 (see README Performance), slower on CPUs without it; on CUDA needs Ampere or newer")
      .choices({"fp32", "bf16", "auto"});
  return f;
}
KG_REGISTER_SECTION("device", "where the model runs", fields().schema(), "");
}  // namespace

DeviceOptions load_options(const config::Tree& recipe) { return fields().load(config::Options(&recipe, "device")); }

int available_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return 1;
}

bool cuda_available() { return torch::cuda::is_available(); }

std::string cuda_build_info() {
  if (!at::hasCUDA()) return "";
  std::string s = "CUDA";
  try {
    long rt = at::detail::getCUDAHooks().versionCUDART();  // e.g. 12040 for 12.4
    s += " " + std::to_string(rt / 1000) + "." + std::to_string(rt % 1000 / 10);
    long dnn = at::detail::getCUDAHooks().versionCuDNN();
    if (dnn > 0) s += ", cuDNN " + std::to_string(dnn);
  } catch (const std::exception&) {
    s += " (version unknown)";
  }
  return s;
}

DeviceInfo setup(const DeviceOptions& opts) {
  DeviceInfo info;
  // Debian's LibTorch starts with one intra-op thread; kgtrain sets it explicitly.
  info.threads = opts.threads > 0 ? static_cast<int>(opts.threads) : available_cores();
  info.channels_last = opts.channels_last;
  at::set_num_threads(info.threads);
  info.deterministic = opts.deterministic;
  std::string name = opts.name;
  if (name == "auto") name = cuda_available() ? "cuda" : "cpu";
  info.precision = opts.precision == "auto" ? auto_precision(name != "cpu") : parse_precision(opts.precision);
  at::globalContext().setDeterministicAlgorithms(opts.deterministic, /*warn_only=*/false);
  if (name == "cpu") {
    info.device = c10::Device(c10::kCPU);
    info.description = "cpu (" + std::to_string(info.threads) + " threads" + (info.deterministic ? ", deterministic" : "") +
                       (info.precision != Precision::fp32 ? ", " + precision_name(info.precision) : "") + ")";
    return info;
  }
  KG_CHECK(cuda_available(), DeviceError, "device.name = \"", opts.name,
           "\" but CUDA is not available (this kgtrain was built against a CPU-only LibTorch, or no GPU is visible); "
           "use device.name=cpu or device.name=auto");
  int index = name == "cuda" ? 0 : std::stoi(name.substr(5));
  int count = static_cast<int>(torch::cuda::device_count());
  KG_CHECK(index < count, DeviceError, "device.name = \"", opts.name, "\" but only ", count, " CUDA device(s) are visible");
  info.device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
  info.description = "cuda:" + std::to_string(index) +
                     (info.precision != Precision::fp32 ? " (" + precision_name(info.precision) + ")" : "");
  return info;
}

}  // namespace kg::device
