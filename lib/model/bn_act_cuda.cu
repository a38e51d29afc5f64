// CUDA kernels of the fused BatchNorm + add + ReLU (model/bn_act_cuda.h): channels_last [M, C] rows. Per-channel
// sums run in blocks of 32 channels x 8 row lanes, each thread summing its rows in float about a per-channel shift
// (the channel's first element), the block's lanes added in double and then atomically into a double [2C] buffer;
// one thread per channel turns the sums into coefficients; the elementwise passes are grid-stride loops.
#include "model/bn_act_cuda.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace kg::model::cuda {
namespace {

constexpr int kTileC = 32;  // channels per block (threadIdx.x)
constexpr int kLanesR = 8;  // row lanes per block (threadIdx.y)
constexpr int kRowsPerThread = 64;
constexpr int kThreads = 256;

__device__ __forceinline__ float load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ float load(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ void store(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16(v); }
__device__ __forceinline__ void store(__half* p, int64_t i, float v) { p[i] = __float2half(v); }

// The block's per-channel partial sums (threadIdx.y lanes) added in double into sums[ch] and sums[c + ch].
__device__ __forceinline__ void add_block_sums(float s1, float s2, int64_t ch, int64_t c, double* sums) {
  __shared__ float sh1[kLanesR][kTileC + 1], sh2[kLanesR][kTileC + 1];
  sh1[threadIdx.y][threadIdx.x] = s1;
  sh2[threadIdx.y][threadIdx.x] = s2;
  __syncthreads();
  if (threadIdx.y == 0 && ch < c) {
    double t1 = 0, t2 = 0;
    for (int k = 0; k < kLanesR; ++k) t1 += sh1[k][threadIdx.x], t2 += sh2[k][threadIdx.x];
    atomicAdd(&sums[ch], t1);
    atomicAdd(&sums[c + ch], t2);
  }
}

template <class T>
__global__ void stats_kernel(const T* x, int64_t m, int64_t c, double* sums) {
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * kTileC + threadIdx.x;
  float s1 = 0, s2 = 0;
  if (ch < c) {
    const float shift = load(x, ch);
    for (int64_t r = static_cast<int64_t>(blockIdx.y) * kLanesR + threadIdx.y; r < m;
         r += static_cast<int64_t>(gridDim.y) * kLanesR) {
      const float d = load(x, r * c + ch) - shift;
      s1 += d;
      s2 += d * d;
    }
  }
  add_block_sums(s1, s2, ch, c, sums);
}

template <class T>
__global__ void finalize_kernel(const T* x, const double* sums, int64_t m, int64_t c, double eps, double momentum,
                                const float* weight, const float* bias, float* mean, float* invstd, float* a, float* b,
                                float* running_mean, float* running_var) {
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  const double dm = sums[ch] / static_cast<double>(m);
  const double var = fmax(0.0, sums[c + ch] / static_cast<double>(m) - dm * dm);
  const double mu = static_cast<double>(load(x, ch)) + dm;
  const double is = 1.0 / sqrt(var + eps);
  mean[ch] = static_cast<float>(mu);
  invstd[ch] = static_cast<float>(is);
  const float ac = weight[ch] * static_cast<float>(is);
  a[ch] = ac;
  b[ch] = bias[ch] - static_cast<float>(mu) * ac;
  if (running_mean) {
    const double unbias = m > 1 ? static_cast<double>(m) / static_cast<double>(m - 1) : 1.0;
    running_mean[ch] = static_cast<float>((1 - momentum) * running_mean[ch] + momentum * mu);
    running_var[ch] = static_cast<float>((1 - momentum) * running_var[ch] + momentum * var * unbias);
  }
}

template <class T>
__global__ void forward_kernel(const T* x, const T* z, const float* a, const float* b, bool relu, T* y, int64_t n,
                               int64_t c) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ch = i % c;
    float v = load(x, i) * a[ch] + b[ch];
    if (z) v += load(z, i);
    store(y, i, relu ? fmaxf(v, 0.0f) : v);
  }
}

template <class T>
__device__ __forceinline__ float masked(const T* dy, const T* y, int64_t i, bool relu) {
  return (!relu || load(y, i) > 0.0f) ? load(dy, i) : 0.0f;
}

template <class T>
__global__ void backward_sums_kernel(const T* dy, const T* y, const T* x, const float* mean, bool relu, int64_t m,
                                     int64_t c, double* sums) {
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * kTileC + threadIdx.x;
  float s1 = 0, s2 = 0;
  if (ch < c) {
    const float mu = mean[ch];
    for (int64_t r = static_cast<int64_t>(blockIdx.y) * kLanesR + threadIdx.y; r < m;
         r += static_cast<int64_t>(gridDim.y) * kLanesR) {
      const int64_t i = r * c + ch;
      const float g = masked(dy, y, i, relu);
      s1 += g;
      s2 += g * (load(x, i) - mu);
    }
  }
  add_block_sums(s1, s2, ch, c, sums);
}

__global__ void coeffs_kernel(const double* sums, const float* weight, const float* invstd, int64_t m, int64_t c,
                              float* coeffs, float* dweight, float* dbias) {
  const int64_t ch = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  const double is = invstd[ch], p = static_cast<double>(weight[ch]) * is, inv_m = 1.0 / static_cast<double>(m);
  coeffs[ch] = static_cast<float>(p);
  coeffs[c + ch] = static_cast<float>(-p * is * is * sums[c + ch] * inv_m);
  coeffs[2 * c + ch] = static_cast<float>(-p * sums[ch] * inv_m);
  dweight[ch] = static_cast<float>(sums[c + ch] * is);
  dbias[ch] = static_cast<float>(sums[ch]);
}

template <class T>
__global__ void backward_kernel(const T* dy, const T* y, const T* x, const float* mean, const float* coeffs, bool relu,
                                T* dx, T* dz, int64_t n, int64_t c) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t ch = i % c;
    const float g = masked(dy, y, i, relu);
    if (dz) store(dz, i, g);
    store(dx, i, coeffs[ch] * g + coeffs[c + ch] * (load(x, i) - mean[ch]) + coeffs[2 * c + ch]);
  }
}

dim3 sums_grid(Shape s) {
  const int64_t tiles = (s.c + kTileC - 1) / kTileC;
  const int64_t lanes = (s.m + kLanesR * kRowsPerThread - 1) / (kLanesR * kRowsPerThread);
  return dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(lanes < 1 ? 1 : (lanes > 4096 ? 4096 : lanes)));
}
unsigned elementwise_blocks(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}
unsigned channel_blocks(int64_t c) { return static_cast<unsigned>((c + kThreads - 1) / kThreads); }

template <class T>
void stats(const void* x, Shape s, double eps, double momentum, const float* weight, const float* bias, double* sums,
           float* mean, float* invstd, float* a, float* b, float* rm, float* rv, cudaStream_t st) {
  cudaMemsetAsync(sums, 0, sizeof(double) * 2 * s.c, st);
  const T* xt = static_cast<const T*>(x);
  stats_kernel<T><<<sums_grid(s), dim3(kTileC, kLanesR), 0, st>>>(xt, s.m, s.c, sums);
  finalize_kernel<T><<<channel_blocks(s.c), kThreads, 0, st>>>(xt, sums, s.m, s.c, eps, momentum, weight, bias, mean,
                                                               invstd, a, b, rm, rv);
}

template <class T>
void forward(const void* x, const void* z, const float* a, const float* b, bool relu, void* y, Shape s,
             cudaStream_t st) {
  const int64_t n = s.m * s.c;
  forward_kernel<T><<<elementwise_blocks(n), kThreads, 0, st>>>(static_cast<const T*>(x), static_cast<const T*>(z), a,
                                                                b, relu, static_cast<T*>(y), n, s.c);
}

template <class T>
void backward(const void* dy, const void* y, const void* x, const float* weight, const float* mean, const float* invstd,
              bool relu, Shape s, double* sums, float* coeffs, float* dweight, float* dbias, void* dx, void* dz,
              cudaStream_t st) {
  const T *dyt = static_cast<const T*>(dy), *yt = static_cast<const T*>(y), *xt = static_cast<const T*>(x);
  cudaMemsetAsync(sums, 0, sizeof(double) * 2 * s.c, st);
  backward_sums_kernel<T><<<sums_grid(s), dim3(kTileC, kLanesR), 0, st>>>(dyt, yt, xt, mean, relu, s.m, s.c, sums);
  coeffs_kernel<<<channel_blocks(s.c), kThreads, 0, st>>>(sums, weight, invstd, s.m, s.c, coeffs, dweight, dbias);
  const int64_t n = s.m * s.c;
  backward_kernel<T><<<elementwise_blocks(n), kThreads, 0, st>>>(dyt, yt, xt, mean, coeffs, relu, static_cast<T*>(dx),
                                                                 static_cast<T*>(dz), n, s.c);
}

}  // namespace

#define KG_BN_ACT_DISPATCH(dt, fn, ...) \
  switch (dt) {                         \
    case Dtype::f32:                    \
      fn<float>(__VA_ARGS__);           \
      break;                            \
    case Dtype::bf16:                   \
      fn<__nv_bfloat16>(__VA_ARGS__);   \
      break;                            \
    case Dtype::f16:                    \
      fn<__half>(__VA_ARGS__);          \
      break;                            \
  }

void bn_stats(Dtype dt, const void* x, Shape s, double eps, double momentum, const float* weight, const float* bias,
              double* sums, float* mean, float* invstd, float* a, float* b, float* running_mean, float* running_var,
              void* stream) {
  KG_BN_ACT_DISPATCH(dt, stats, x, s, eps, momentum, weight, bias, sums, mean, invstd, a, b, running_mean, running_var,
                     static_cast<cudaStream_t>(stream));
}

void bn_act_forward(Dtype dt, const void* x, const void* z, const float* a, const float* b, bool relu, void* y, Shape s,
                    void* stream) {
  KG_BN_ACT_DISPATCH(dt, forward, x, z, a, b, relu, y, s, static_cast<cudaStream_t>(stream));
}

void bn_act_backward(Dtype dt, const void* dy, const void* y, const void* x, const float* weight, const float* mean,
                     const float* invstd, bool relu, Shape s, double* sums, float* coeffs, float* dweight, float* dbias,
                     void* dx, void* dz, void* stream) {
  KG_BN_ACT_DISPATCH(dt, backward, dy, y, x, weight, mean, invstd, relu, s, sums, coeffs, dweight, dbias, dx, dz,
                     static_cast<cudaStream_t>(stream));
}

}  // namespace kg::model::cuda
