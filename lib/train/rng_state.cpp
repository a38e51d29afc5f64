#include "train/rng_state.h"

#include <mutex>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include "core/error.h"

namespace kg::train {
namespace {

constexpr const char* kCpuKey = "rng.cpu";
const std::string kCudaPrefix = "rng.cuda.";

// The CUDA seam. Only the device-generic Generator API is used (get_state/set_state through ATen's CUDA
// hooks), so this compiles and runs in CPU-only builds, where the device count is 0. A build that must
// not go through the hooks can return 0 here.
int64_t cuda_device_count() {
  if (!at::globalContext().hasCUDA()) return 0;
  return at::detail::getCUDAHooks().getNumGPUs();
}

at::Generator cuda_generator(int64_t i) {
  return at::globalContext().defaultGenerator(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(i)));
}

at::Tensor get_state(at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state().clone();
}

void set_state(at::Generator gen, const at::Tensor& state, const std::string& key) {
  KG_CHECK(state.defined() && state.scalar_type() == at::kByte && state.dim() == 1, CheckpointError,
           "checkpoint RNG state ", key, " is malformed: expected a 1-D uint8 tensor, got ",
           state.defined() ? std::string(c10::toString(state.scalar_type())) + " of shape " + c10::str(state.sizes())
                           : "nothing");
  try {
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(state.contiguous());
  } catch (const c10::Error& e) {
    throw CheckpointError("checkpoint RNG state " + key + " (" + std::to_string(state.numel()) +
                          " bytes) was rejected by the generator: " + e.what_without_backtrace() +
                          " (saved by a different LibTorch version?)");
  }
}

}  // namespace

model::TensorMap capture_rng() {
  model::TensorMap t;
  t[kCpuKey] = get_state(at::detail::getDefaultCPUGenerator());
  for (int64_t i = 0, n = cuda_device_count(); i < n; ++i)
    t[kCudaPrefix + std::to_string(i)] = get_state(cuda_generator(i));
  return t;
}

void restore_rng(const model::TensorMap& t) {
  auto it = t.find(kCpuKey);
  KG_CHECK(it != t.end(), CheckpointError, "checkpoint has no RNG state (", kCpuKey,
           " is missing from state.safetensors): it was not saved for exact resume");
  set_state(at::detail::getDefaultCPUGenerator(), it->second, kCpuKey);
  const int64_t n = cuda_device_count();
  for (const auto& [key, state] : t) {
    if (key.rfind(kCudaPrefix, 0) != 0) continue;
    int64_t i = -1;
    try {
      size_t used = 0;
      i = std::stoll(key.substr(kCudaPrefix.size()), &used);
      if (used != key.size() - kCudaPrefix.size()) i = -1;
    } catch (const std::exception&) {
    }
    KG_CHECK(i >= 0, CheckpointError, "checkpoint RNG state ", key, " is malformed: expected rng.cuda.<device index>");
    if (i < n) set_state(cuda_generator(i), state, key);
  }
}

}  // namespace kg::train
