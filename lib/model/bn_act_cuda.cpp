// The host side of model/bn_act_cuda.h: the kernels of model/bn_act_kernels.cu, compiled for each GPU by NVRTC at
// first use and launched through the driver (device/cuda_rtc.h), with the launch shapes they were written for.
#include "model/bn_act_cuda.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "device/cuda_rtc.h"
#include "bn_act_kernels_src.h"

namespace kg::model::cuda {
namespace {

using device::cuda_rtc::Module;

constexpr int kBnTileC = 32;  // channels per block of the sums kernels (bn_act_kernels.cu's kTileC)
constexpr int kBnLanesR = 8;  // row lanes per block (its kLanesR)
constexpr int kBnRowsPerThread = 64;
constexpr unsigned kBnThreads = 256;

const char* const kBnSuffix[] = {"f32", "bf16", "f16"};
enum BnKernel { kBnStats, kBnFinalize, kBnForward, kBnBackwardSums, kBnBackward, kBnKernels };
const char* const kBnNames[] = {"kg_stats_", "kg_finalize_", "kg_forward_", "kg_backward_sums_", "kg_backward_"};

// One GPU's module and its kernels; `why` when they cannot run there.
struct BnKernels {
  std::unique_ptr<Module> module;
  void* fn[3][kBnKernels] = {};
  void* coeffs = nullptr;
  std::string names[3][kBnKernels];
  std::string why;
};

// Asked on every fused BatchNorm (each layer, each step): the answer, once made, is read without the lock.
constexpr int kBnFastDevices = 64;
std::atomic<BnKernels*> bn_made[kBnFastDevices];

BnKernels& bn_kernels_on(int device) {
  const bool fast = device >= 0 && device < kBnFastDevices;
  if (fast)
    if (BnKernels* made = bn_made[device].load(std::memory_order_acquire)) return *made;
  static std::mutex mu;
  static std::map<int, std::unique_ptr<BnKernels>> by_device;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = by_device[device];
  if (slot) return *slot;
  slot = std::make_unique<BnKernels>();
  BnKernels& l = *slot;
  struct Publish {  // whichever way the compile ends, its answer is the device's for good
    BnKernels* l;
    bool fast;
    int device;
    ~Publish() {
      if (fast) bn_made[device].store(l, std::memory_order_release);
    }
  } publish{&l, fast, device};
  try {
    const auto gpu = device::cuda_rtc::gpu_info(device);
    std::string why;
    const auto nvrtc = device::cuda_rtc::Nvrtc::find(&why);
    KG_CHECK(nvrtc != nullptr, DeviceError, why);
    const auto program = nvrtc->compile(kBnActKernelsSource, "bn_act_kernels.cu", gpu.sm());
    l.module = std::make_unique<Module>(device, program);
    for (int d = 0; d < 3; ++d)
      for (int k = 0; k < kBnKernels; ++k) {
        l.names[d][k] = std::string(kBnNames[k]) + kBnSuffix[d];
        l.fn[d][k] = l.module->function(l.names[d][k].c_str());
      }
    l.coeffs = l.module->function("kg_coeffs");
  } catch (const Error& e) {
    l.module.reset();
    l.why = e.what();
  }
  return l;
}

const BnKernels& bn_ready_on(int device) {
  const BnKernels& l = bn_kernels_on(device);
  KG_CHECK(l.module != nullptr, DeviceError, "kgtrain's fused BatchNorm kernels cannot run on cuda:", device, ": ",
           l.why);
  return l;
}

struct BnGrid {
  unsigned x = 1, y = 1, bx = 1, by = 1;
};
BnGrid bn_sums_grid(Shape s) {
  const int64_t tiles = (s.c + kBnTileC - 1) / kBnTileC;
  const int64_t lanes = (s.m + kBnLanesR * kBnRowsPerThread - 1) / (kBnLanesR * kBnRowsPerThread);
  return {static_cast<unsigned>(tiles), static_cast<unsigned>(lanes < 1 ? 1 : (lanes > 4096 ? 4096 : lanes)), kBnTileC,
          kBnLanesR};
}
BnGrid bn_elementwise_grid(int64_t n) {
  const int64_t b = (n + kBnThreads - 1) / kBnThreads;
  return {static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b)), 1, kBnThreads, 1};
}
BnGrid bn_channel_grid(int64_t c) {
  return {static_cast<unsigned>((c + kBnThreads - 1) / kBnThreads), 1, kBnThreads, 1};
}

// Launches kernel k of dtype dt (or fn when given) with these arguments, each passed by address as the driver wants.
template <class... A>
void bn_launch(const BnKernels& l, Dtype dt, BnKernel k, BnGrid g, void* stream, A... args) {
  void* params[] = {static_cast<void*>(&args)...};
  const int d = static_cast<int>(dt);
  l.module->launch(l.fn[d][k], l.names[d][k].c_str(), g.x, g.y, g.bx, g.by, stream, params);
}

}  // namespace

bool kernels_ready(int device, std::string* why) {
  const BnKernels& l = bn_kernels_on(device);
  if (!l.module && why) *why = l.why;
  return l.module != nullptr;
}

void bn_stats(Dtype dt, const void* x, Shape s, double eps, double momentum, const float* weight, const float* bias,
              double* sums, float* mean, float* invstd, float* a, float* b, float* running_mean, float* running_var,
              int device, void* stream) {
  const BnKernels& l = bn_ready_on(device);
  l.module->zero_async(sums, sizeof(double) * 2 * static_cast<size_t>(s.c), stream);
  bn_launch(l, dt, kBnStats, bn_sums_grid(s), stream, x, s.m, s.c, sums);
  bn_launch(l, dt, kBnFinalize, bn_channel_grid(s.c), stream, x, static_cast<const double*>(sums), s.m, s.c, eps,
            momentum, weight, bias, mean, invstd, a, b, running_mean, running_var);
}

void bn_act_forward(Dtype dt, const void* x, const void* z, const float* a, const float* b, bool relu, void* y, Shape s,
                    int device, void* stream) {
  const BnKernels& l = bn_ready_on(device);
  const int64_t n = s.m * s.c;
  bn_launch(l, dt, kBnForward, bn_elementwise_grid(n), stream, x, z, a, b, static_cast<int>(relu), y, n, s.c);
}

void bn_act_backward(Dtype dt, const void* dy, const void* y, const void* x, const float* weight, const float* mean,
                     const float* invstd, bool relu, Shape s, double* sums, float* coeffs, float* dweight, float* dbias,
                     void* dx, void* dz, int device, void* stream) {
  const BnKernels& l = bn_ready_on(device);
  const int r = static_cast<int>(relu);
  l.module->zero_async(sums, sizeof(double) * 2 * static_cast<size_t>(s.c), stream);
  bn_launch(l, dt, kBnBackwardSums, bn_sums_grid(s), stream, dy, y, x, mean, r, s.m, s.c, sums);
  const BnGrid cg = bn_channel_grid(s.c);
  void* params[] = {&sums, &weight, &invstd, &s.m, &s.c, &coeffs, &dweight, &dbias};
  l.module->launch(l.coeffs, "kg_coeffs", cg.x, cg.y, cg.bx, cg.by, stream, params);
  const int64_t n = s.m * s.c;
  bn_launch(l, dt, kBnBackward, bn_elementwise_grid(n), stream, dy, y, x, mean, static_cast<const float*>(coeffs), r,
            dx, dz, n, s.c);
}

}  // namespace kg::model::cuda
