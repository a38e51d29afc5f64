// kgtrain's own CUDA kernels without a CUDA runtime of kgtrain's own: the NVIDIA driver (libcuda.so.1) and NVRTC,
// both opened with dlopen, so the binary links no CUDA-major-specific library (no libcudart.so.12 or .13) and one
// build runs with every CUDA build of its torch (cu126, cu128, cu130). NVRTC is the one that came with the installed
// torch: its major is the CUDA runtime's that torch loaded, so what it compiles runs on any driver torch itself runs
// on, and it compiles for the GPU at hand (SASS for the architectures it knows, PTX of its newest one for GPUs newer
// than it, which the driver compiles). No CUDA header and no LibTorch here (kgtrain_base).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kg::device::cuda_rtc {

// One GPU as the driver reports it; the ordinal is the CUDA runtime's device index (both honour
// CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER alike).
struct GpuInfo {
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int64_t total_memory = 0;
  int sm() const { return cc_major * 10 + cc_minor; }
};

// The driver's CUDA version (12080 for 12.8), or 0 with the reason in *why when there is no driver.
int driver_version(std::string* why = nullptr);
// Throws DeviceError when the driver cannot describe the GPU.
GpuInfo gpu_info(int ordinal);

// A program compiled by NVRTC: a cubin (SASS for one architecture) or PTX (for the driver to compile).
struct Program {
  std::string image;
  std::string target;  // "sm_75" (cubin) or "compute_90" (PTX)
  bool sass = false;
};

class Nvrtc {
 public:
  // The NVRTC library at a path or soname; throws DeviceError naming it and dlopen's reason.
  static std::shared_ptr<const Nvrtc> open(const std::string& path_or_soname);
  // The process's NVRTC: $KG_NVRTC when set, one already loaded, else the one beside the CUDA runtime LibTorch
  // loaded (libnvrtc.so.<its major> by soname, then in the runtime's folder or its nvidia/ sibling, then
  // /usr/local/cuda). nullptr with the places tried in *why.
  static std::shared_ptr<const Nvrtc> find(std::string* why);

  const std::string& path() const { return path_; }
  int version() const;             // 12080 for 12.8
  std::vector<int> archs() const;  // the SM numbers it compiles SASS for (75, 80, ...)
  // Compiles `source` for a GPU of SM number `sm`: SASS when this NVRTC knows the architecture, else PTX of the
  // newest architecture it knows below it (a GPU newer than the NVRTC). Throws DeviceError with NVRTC's log when it
  // fails, or when `sm` is older than every architecture this NVRTC supports.
  Program compile(const std::string& source, const std::string& name, int sm) const;

  struct Api;
  ~Nvrtc();

 private:
  Nvrtc() = default;
  void* handle_ = nullptr;
  std::string path_;
  std::unique_ptr<Api> api_;
};

// A compiled program loaded into a GPU's primary context (the one LibTorch uses), and launches of its kernels.
class Module {
 public:
  // Throws DeviceError (with the driver's error name) when the image cannot be loaded, e.g. a cubin for another
  // architecture or PTX newer than the driver.
  Module(int ordinal, const Program& program);
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The kernel `name` (an extern "C" __global__ function); throws DeviceError when the module lacks it.
  void* function(const char* name) const;
  // Queues the kernel on `stream` (a cudaStream_t / CUstream); every launch's status is checked, and a failure
  // throws DeviceError naming the kernel, the grid and the driver's error.
  void launch(void* fn, const char* name, unsigned grid_x, unsigned grid_y, unsigned block_x, unsigned block_y,
              void* stream, void** args) const;
  // Zeroes `bytes` bytes of device memory at `ptr`, queued on `stream`.
  void zero_async(void* ptr, size_t bytes, void* stream) const;

 private:
  int ordinal_ = 0;
  void* module_ = nullptr;
};

}  // namespace kg::device::cuda_rtc
