// GPU utilization and memory from NVML (nvidia-smi's library), loaded at run time with dlopen so a
// build never needs the CUDA toolkit's headers and a machine without a driver simply has no monitor.
// A background thread samples every `interval_s`; `take()` returns the means/peaks since the last take.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace kg::device {

struct GpuSample {
  int samples = 0;
  double util_mean = 0;  // % of time a kernel ran, averaged over the samples
  double util_max = 0;
  int64_t memory_used_max = 0;  // bytes in use on the device (all processes), the highest sample
  int64_t memory_total = 0;
};

class NvmlMonitor {
 public:
  // Opens `library` (default: the driver's libnvidia-ml.so.1) for device `index`; available() is false
  // when the library, its symbols or the device are missing (why() says which).
  explicit NvmlMonitor(int index, double interval_s = 0.5, const std::string& library = "libnvidia-ml.so.1");
  ~NvmlMonitor();
  NvmlMonitor(const NvmlMonitor&) = delete;
  NvmlMonitor& operator=(const NvmlMonitor&) = delete;

  bool available() const { return api_ != nullptr; }
  const std::string& why() const { return why_; }
  // What the samples since the previous take() (or the start) say; zero samples when none was taken yet:
  // then one sample is read on the spot.
  GpuSample take();

 private:
  struct Api;
  bool sample_once(GpuSample& acc);
  void loop(double interval_s);

  std::unique_ptr<Api> api_;
  std::string why_;
  std::mutex mu_;
  GpuSample acc_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace kg::device
