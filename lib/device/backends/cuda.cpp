// The CUDA backend. Built against a CUDA LibTorch (KG_WITH_CUDA, set by CMakeLists.txt when Torch
// brings its CUDA libraries) it reads device properties and the caching allocator's statistics;
// against Debian's CPU-only LibTorch it is registered but never available.
#include <torch/cuda.h>

#include "core/error.h"
#include "device/backend.h"

#ifdef KG_WITH_CUDA
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#endif

namespace kg::device {
namespace {

class CudaBackend : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  int priority() const override { return 10; }
  bool available() const override { return torch::cuda::is_available(); }
  int count() const override { return static_cast<int>(torch::cuda::device_count()); }

#ifdef KG_WITH_CUDA
  DeviceDescription describe(int index) const override {
    const auto* p = at::cuda::getDeviceProperties(index);
    DeviceDescription d;
    d.type = c10::kCUDA;
    d.index = index;
    d.name = p->name;
    d.cc_major = p->major;
    d.cc_minor = p->minor;
    d.total_memory = static_cast<int64_t>(p->totalGlobalMem);
    d.native_bf16 = p->major >= 8;
    d.tf32 = p->major >= 8;
    return d;
  }
  void synchronize(int index) const override {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(index));
    c10::cuda::device_synchronize();
  }
  // LibTorch 2.x's caching allocator sizes its per-device tables on the first CUDA allocation and
  // rejects every query before ("Invalid device argument"): one tiny allocation starts it.
  static void start_allocator(int index) {
    (void)at::empty({1}, at::TensorOptions().dtype(at::kByte).device(c10::kCUDA, static_cast<c10::DeviceIndex>(index)));
  }
  MemoryStats memory(int index) const override {
    start_allocator(index);
    // Stat arrays are indexed by StatType; 0 is AGGREGATE in every LibTorch version.
    const auto s = c10::cuda::CUDACachingAllocator::getDeviceStats(index);
    MemoryStats m;
    m.available = true;
    m.allocated = s.allocated_bytes[0].current;
    m.reserved = s.reserved_bytes[0].current;
    m.peak_allocated = s.allocated_bytes[0].peak;
    m.peak_reserved = s.reserved_bytes[0].peak;
    return m;
  }
  void reset_peak_memory(int index) const override {
    start_allocator(index);
    c10::cuda::CUDACachingAllocator::resetPeakStats(index);
  }
  void empty_cache() const override { c10::cuda::CUDACachingAllocator::emptyCache(); }
#else
  [[noreturn]] static void not_built() {
    throw DeviceError("this kgtrain was built against a CPU-only LibTorch: CUDA devices cannot be used (build with "
                      "scripts/build_cuda.sh against a CUDA PyTorch)");
  }
  DeviceDescription describe(int) const override { not_built(); }
  void synchronize(int) const override {}
  MemoryStats memory(int) const override { return {}; }
  void reset_peak_memory(int) const override {}
  void empty_cache() const override {}
#endif
};

KG_REGISTER_BACKEND(CudaBackend);

}  // namespace
}  // namespace kg::device
