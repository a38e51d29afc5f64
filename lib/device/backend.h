// Device backends, registered by name in their own files (device/backends/cpu.cpp, cuda.cpp):
// what a device is (DeviceDescription), whether it is there, how to wait for it and what memory it
// holds. `device.name = "auto"` takes the first available backend in priority order (cuda, then cpu).
// Only files under device/ include CUDA headers; the CUDA backend compiles to "not available" in a
// build against a CPU-only LibTorch (KG_WITH_CUDA unset).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <c10/core/Device.h>

#include "core/macros.h"

namespace kg::device {

class GraphCapturer;

// What precision and speed choices depend on. Tests build fake ones (a T4, an A100) to check choices.
struct DeviceDescription {
  c10::DeviceType type = c10::kCPU;
  int index = 0;
  std::string name;                // "cpu", "NVIDIA H100 80GB HBM3", "Tesla T4"
  int cc_major = 0, cc_minor = 0;  // CUDA compute capability (0.0 on the CPU)
  int64_t total_memory = 0;        // bytes (device memory; host RAM for the CPU)
  bool native_bf16 = false;        // bf16 arithmetic in hardware (CPU: AVX512-BF16/AMX; CUDA: cc >= 8.0)
  bool tf32 = false;               // TF32 tensor cores (CUDA cc >= 8.0)

  bool is_cuda() const { return type == c10::kCUDA; }
  // "Tesla T4 (compute capability 7.5, 15.0 GiB)"
  std::string str() const;
};

struct MemoryStats {
  bool available = false;                         // false: this backend cannot say
  int64_t allocated = 0, reserved = 0;            // bytes now
  int64_t peak_allocated = 0, peak_reserved = 0;  // since the last reset
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;  // "cpu", "cuda"
  virtual int priority() const = 0;      // device.name = "auto" takes the available backend with the highest
  virtual bool available() const = 0;
  virtual int count() const = 0;  // devices of this kind
  virtual DeviceDescription describe(int index) const = 0;
  virtual void synchronize(int index) const = 0;  // waits for queued work (timings)
  virtual MemoryStats memory(int index) const = 0;
  virtual void reset_peak_memory(int index) const = 0;
  virtual void empty_cache() const = 0;  // hands cached blocks back (after an out-of-memory error)
  // Records and replays device work (device/graph.h); nullptr with `why` set where this backend cannot.
  virtual std::unique_ptr<GraphCapturer> graph_capturer(int index, std::string* why) const;
};

// Registered backends, highest priority first.
std::vector<const Backend*> backends();
const Backend* find_backend(const std::string& name);  // nullptr when none has that name
// The backend of `type` (cpu or cuda); InternalError when none is registered.
const Backend& backend_for(c10::DeviceType type);
bool register_backend(std::unique_ptr<Backend> b);

}  // namespace kg::device

#define KG_REGISTER_BACKEND(Type) \
  static const bool KG_CONCAT(kg_backend_, __COUNTER__) = ::kg::device::register_backend(std::make_unique<Type>())
