#include "device/nvml.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

namespace kg::device {

// The few NVML entry points used, declared here (their C ABI is stable since NVML's v2 symbols).
struct NvmlMonitor::Api {
  struct Utilization {
    unsigned int gpu, memory;
  };
  struct Memory {
    unsigned long long total, free, used;
  };
  using Init = int (*)();
  using Shutdown = int (*)();
  using HandleByIndex = int (*)(unsigned int, void**);
  using GetUtilization = int (*)(void*, Utilization*);
  using GetMemory = int (*)(void*, Memory*);
  void* lib = nullptr;
  Shutdown shutdown = nullptr;
  GetUtilization utilization = nullptr;
  GetMemory memory = nullptr;
  void* device = nullptr;
  ~Api() {
    if (shutdown) shutdown();
    if (lib) dlclose(lib);
  }
};

NvmlMonitor::NvmlMonitor(int index, double interval_s, const std::string& library) {
  auto api = std::make_unique<Api>();
  api->lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api->lib) {
    why_ = "NVML not found (" + library + ")";
    return;
  }
  auto init = reinterpret_cast<Api::Init>(dlsym(api->lib, "nvmlInit_v2"));
  auto by_index = reinterpret_cast<Api::HandleByIndex>(dlsym(api->lib, "nvmlDeviceGetHandleByIndex_v2"));
  api->utilization = reinterpret_cast<Api::GetUtilization>(dlsym(api->lib, "nvmlDeviceGetUtilizationRates"));
  api->memory = reinterpret_cast<Api::GetMemory>(dlsym(api->lib, "nvmlDeviceGetMemoryInfo"));
  auto shutdown = reinterpret_cast<Api::Shutdown>(dlsym(api->lib, "nvmlShutdown"));
  if (!init || !by_index || !api->utilization || !api->memory || !shutdown) {
    why_ = library + " lacks the NVML functions kgtrain reads";
    return;
  }
  if (init() != 0) {
    why_ = "nvmlInit failed (no NVIDIA driver running?)";
    return;
  }
  api->shutdown = shutdown;
  // NVML numbers devices as the driver does; with CUDA_VISIBLE_DEVICES set, CUDA's index differs:
  // then the first visible device of the list is the one meant by cuda:0.
  unsigned int nvml_index = static_cast<unsigned int>(index);
  if (const char* vis = std::getenv("CUDA_VISIBLE_DEVICES"); vis && *vis) {
    std::string list(vis);
    size_t start = 0;
    for (int i = 0; i < index && start != std::string::npos; ++i) {
      start = list.find(',', start);
      if (start != std::string::npos) ++start;
    }
    if (start != std::string::npos) {
      try {
        nvml_index = static_cast<unsigned int>(std::stoul(list.substr(start)));
      } catch (const std::exception&) {
        // a UUID list: keep CUDA's index
      }
    }
  }
  if (by_index(nvml_index, &api->device) != 0) {
    why_ = "NVML has no device " + std::to_string(nvml_index);
    return;
  }
  api_ = std::move(api);
  thread_ = std::thread([this, interval_s] { loop(interval_s); });
}

NvmlMonitor::~NvmlMonitor() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

bool NvmlMonitor::sample_once(GpuSample& acc) {
  Api::Utilization u{};
  Api::Memory m{};
  if (api_->utilization(api_->device, &u) != 0 || api_->memory(api_->device, &m) != 0) return false;
  acc.util_mean = (acc.util_mean * acc.samples + u.gpu) / (acc.samples + 1);
  acc.util_max = std::max(acc.util_max, static_cast<double>(u.gpu));
  acc.memory_used_max = std::max(acc.memory_used_max, static_cast<int64_t>(m.used));
  acc.memory_total = static_cast<int64_t>(m.total);
  ++acc.samples;
  return true;
}

void NvmlMonitor::loop(double interval_s) {
  const auto step = std::chrono::milliseconds(std::max<int64_t>(10, static_cast<int64_t>(interval_s * 1000)));
  auto next = std::chrono::steady_clock::now();
  while (!stop_) {
    {
      std::lock_guard<std::mutex> g(mu_);
      sample_once(acc_);
    }
    next += step;
    // Short sleeps so the destructor never waits a whole interval.
    while (!stop_ && std::chrono::steady_clock::now() < next)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

GpuSample NvmlMonitor::take() {
  if (!api_) return {};
  std::lock_guard<std::mutex> g(mu_);
  if (acc_.samples == 0) sample_once(acc_);
  GpuSample out = acc_;
  acc_ = GpuSample{};
  return out;
}

}  // namespace kg::device
