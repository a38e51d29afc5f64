// The CUDA backend. Built against a CUDA LibTorch (KG_WITH_CUDA, set by CMakeLists.txt when Torch
// brings its CUDA libraries) it reads device properties and the caching allocator's statistics;
// against Debian's CPU-only LibTorch it is registered but never available. It also captures and replays
// CUDA graphs (device.cuda_graphs, device/graph.h).
#include <torch/cuda.h>

#include "core/error.h"
#include "device/backend.h"
#include "device/compat.h"
#include "device/graph.h"
#include "device/math_libs.h"

#ifdef KG_WITH_CUDA
#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/core/Event.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StreamGuard.h>
#include <dlfcn.h>

#include "device/cuda_rtc.h"
#endif

namespace kg::device {
namespace {

#ifdef KG_WITH_CUDA
// kgtrain calls no CUDA runtime function itself: libcudart's symbols carry its major as their version
// (cudaGetLastError@@libcudart.so.13), so one reference would tie the binary to one CUDA build of torch. Hence the
// device-generic guards and events (c10::DeviceGuard, c10::StreamGuard, c10::Event: c10_cuda's implementation
// behind a virtual interface) rather than c10::cuda's header-inline ones, whose CUDAGuardImpl calls cudaEvent*
// from kgtrain's own code; and the runtime LibTorch loaded, found by name, for what c10 does not offer.
// scripts/wheel/make_wheel.py refuses a binary with such a reference.
void clear_cuda_error() {
  using Fn = int (*)();
  static const auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "cudaGetLastError"));
  if (fn) (void)fn();
}

// Autocast caches the casts of weights for its outermost scope; under capture they would be graph
// memory handed to work outside it (torch.cuda.make_graphed_callables requires cache_enabled=False).
struct AutocastCacheOff {
  bool prev = at::autocast::is_autocast_cache_enabled();
  AutocastCacheOff() { at::autocast::set_autocast_cache_enabled(false); }
  ~AutocastCacheOff() { at::autocast::set_autocast_cache_enabled(prev); }
};

class CudaStepGraph : public StepGraph {
 public:
  CudaStepGraph(int index) : index_(static_cast<c10::DeviceIndex>(index)) {}
  void replay() override {
    c10::DeviceGuard guard(c10::Device(c10::kCUDA, index_));
    graph_.replay();
  }
  void set(std::vector<at::Tensor> outputs, std::vector<at::Tensor> grads) {
    outputs_ = std::move(outputs);
    grads_ = std::move(grads);
  }
  at::cuda::CUDAGraph& graph() { return graph_; }

 private:
  c10::DeviceIndex index_;
  at::cuda::CUDAGraph graph_;
};

// Warm-up and capture on a side stream (a capture cannot use the default stream; torch.cuda.graph does
// the same), ordered after the work queued so far and before the work queued next. Thread-local capture
// mode: the loader's threads may keep allocating pinned memory and copying while the step is captured.
// The graphs share one memory pool.
class CudaCapturer : public GraphCapturer {
 public:
  explicit CudaCapturer(int index)
      : index_(static_cast<c10::DeviceIndex>(index)),
        pool_(at::cuda::graph_pool_handle()),
        side_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index_)) {}

  std::unique_ptr<StepGraph> capture(const GraphWork& work, const std::vector<at::Tensor>& params,
                                     int warmup) override {
    c10::DeviceGuard guard(c10::Device(c10::kCUDA, index_));
    const auto main = c10::cuda::getCurrentCUDAStream(index_);
    auto g = std::make_unique<CudaStepGraph>(index_);
    const auto before = take_grads(params);
    try {
      c10::Event ready(c10::DeviceType::CUDA);
      ready.record(main.unwrap());
      ready.block(side_.unwrap());
      std::vector<at::Tensor> outputs, grads;
      {
        c10::StreamGuard on_side(side_.unwrap());
        AutocastCacheOff cache_off;
        for (int i = 0; i < warmup; ++i) {
          (void)work();
          (void)take_grads(params);
        }
#if KG_TORCH_VERSION_AT_LEAST(2, 1)
        g->graph().capture_begin(pool_, cudaStreamCaptureModeThreadLocal);
#else
        g->graph().capture_begin(pool_);
#endif
        try {
          outputs = work();
        } catch (...) {
          try {
            g->graph().capture_end();
          } catch (...) {
          }
          clear_cuda_error();  // the invalidated capture's error is not the caller's
          throw;
        }
        g->graph().capture_end();
        grads = take_grads(params);
      }
      c10::Event done(c10::DeviceType::CUDA);
      done.record(side_.unwrap());
      done.block(main.unwrap());
      g->set(std::move(outputs), std::move(grads));
    } catch (...) {
      put_grads(params, before);
      throw;
    }
    put_grads(params, before);
    return g;
  }

 private:
  c10::DeviceIndex index_;
  decltype(at::cuda::graph_pool_handle()) pool_;
  c10::cuda::CUDAStream side_;
};
#endif

#ifdef KG_WITH_CUDA
// One small op on the GPU: LibTorch without kernels for the GPU's architecture fails it with "no kernel image".
bool torch_runs_on(int index, std::string* why) {
  try {
    const auto t = at::ones({8}, at::TensorOptions().device(c10::kCUDA, static_cast<c10::DeviceIndex>(index)));
    (void)t.mul(2).sum().item<float>();
    return true;
  } catch (const c10::Error& e) {
    const std::string m = e.what_without_backtrace();
    if (m.find("no kernel image") == std::string::npos && m.find("not compatible") == std::string::npos) throw;
    *why = m.substr(0, m.find('\n'));
    return false;
  }
}
#endif

class CudaBackend : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  int priority() const override { return 10; }
  bool available() const override { return torch::cuda::is_available(); }
  int count() const override { return static_cast<int>(torch::cuda::device_count()); }

#ifdef KG_WITH_CUDA
  // From the driver (device/cuda_rtc.h), not cudaDeviceProp, whose layout differs between CUDA 12 and 13. Then the
  // installed torch must have kernels for this GPU (a P100 under a cu128 torch has none): exit 2 naming both.
  DeviceDescription describe(int index) const override {
    const auto g = cuda_rtc::gpu_info(index);
    DeviceDescription d;
    d.type = c10::kCUDA;
    d.index = index;
    d.name = g.name;
    d.cc_major = g.cc_major;
    d.cc_minor = g.cc_minor;
    d.total_memory = g.total_memory;
    d.native_bf16 = g.cc_major >= 8;
    d.tf32 = g.cc_major >= 8;
    std::string why;
    if (!torch_runs_on(index, &why))
      throw UsageError(
          "cuda:" + std::to_string(index) + " is " + g.name + " (compute capability " + std::to_string(g.cc_major) +
          "." + std::to_string(g.cc_minor) + ", sm_" + std::to_string(g.sm()) + "), and the installed LibTorch " +
          torch_build_name() + " has no GPU kernels for it (" + why +
          "). Train on the CPU (device.name=cpu), or install a torch built for sm_" + std::to_string(g.sm()) +
          " (its torch.cuda.get_arch_list() names it) and the kgtrain wheel for that torch (docs/install.md)");
    return d;
  }
  void synchronize(int index) const override {
    c10::DeviceGuard guard(c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index)));
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
  std::unique_ptr<GraphCapturer> graph_capturer(int index, std::string*) const override {
    return std::make_unique<CudaCapturer>(index);
  }
#else
  [[noreturn]] static void not_built() {
    throw DeviceError(
        "this kgtrain was built against a CPU-only LibTorch: CUDA devices cannot be used (build with "
        "scripts/build_cuda.sh against a CUDA PyTorch)");
  }
  DeviceDescription describe(int) const override { not_built(); }
  void synchronize(int) const override {}
  MemoryStats memory(int) const override { return {}; }
  void reset_peak_memory(int) const override {}
  void empty_cache() const override {}
  std::unique_ptr<GraphCapturer> graph_capturer(int, std::string* why) const override {
    if (why) *why = "this kgtrain was built against a CPU-only LibTorch";
    return nullptr;
  }
#endif
};

KG_REGISTER_BACKEND(CudaBackend);

}  // namespace
}  // namespace kg::device
