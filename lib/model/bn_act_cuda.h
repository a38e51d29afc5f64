// The CUDA kernels of model/bn_act.h's fused BatchNorm + add + ReLU, for channels_last tensors seen as [M, C] rows
// (M = N * H * W), float32, bfloat16 or float16 activations with float32 weights and statistics (autocast's mix).
// No LibTorch or CUDA header here: bn_act.cpp passes the device index, device pointers and the current stream (a
// cudaStream_t). Each call queues its kernels on that stream and returns; nothing waits for the device. The kernels
// (model/bn_act_kernels.cu) are compiled for the device's GPU by NVRTC at first use (device/cuda_rtc.h).
#pragma once
#include <cstdint>
#include <string>

namespace kg::model::cuda {

enum class Dtype { f32, bf16, f16 };

struct Shape {
  int64_t m = 0, c = 0;
};

// Compiles and loads the kernels for GPU `device` once (later calls return the first answer). False, with the
// reason in *why, when they cannot run there (no NVRTC, an architecture neither NVRTC nor the driver can target, a
// driver that refuses the image): the caller then runs the eager ops.
bool kernels_ready(int device, std::string* why);

// Forward, first pass: per-channel sums of (x - x[0, c]) and its square into sums[0..2c) (double; zeroed here),
// then mean, invstd = 1 / sqrt(var + eps), a = weight * invstd, b = bias - mean * a (float [C] each), and the
// running statistics moved by momentum with the unbiased variance, as BatchNorm2d does.
void bn_stats(Dtype dt, const void* x, Shape s, double eps, double momentum, const float* weight, const float* bias,
              double* sums, float* mean, float* invstd, float* a, float* b, float* running_mean, float* running_var,
              int device, void* stream);

// Forward, second pass: y = relu(x * a + b + z) (z may be null; relu false: no ReLU).
void bn_act_forward(Dtype dt, const void* x, const void* z, const float* a, const float* b, bool relu, void* y, Shape s,
                    int device, void* stream);

// Backward: g = dy where y > 0 (all of dy without the ReLU); sums of g and g * (x - mean) per channel, then
// dweight, dbias (float [C]) and dx = p * g + r * (x - mean) + q, dz = g (dz may be null), with p = weight * invstd,
// r = -p * invstd^2 * sum(g (x - mean)) / M, q = -p * sum(g) / M. coeffs: scratch of 3C floats.
void bn_act_backward(Dtype dt, const void* dy, const void* y, const void* x, const float* weight, const float* mean,
                     const float* invstd, bool relu, Shape s, double* sums, float* coeffs, float* dweight, float* dbias,
                     void* dx, void* dz, int device, void* stream);

}  // namespace kg::model::cuda
