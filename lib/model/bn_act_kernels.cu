// CUDA kernels of the fused BatchNorm + add + ReLU (model/bn_act_cuda.h): channels_last [M, C] rows. Per-channel
// sums run in blocks of 32 channels x 8 row lanes, each thread summing its rows in float about a per-channel shift
// (the channel's first element), the block's lanes added in double and then atomically into a double [2C] buffer;
// one thread per channel turns the sums into coefficients; the elementwise passes are grid-stride loops.
//
// This file is not compiled with the binary: CMake embeds it as a string (BUILD/generated/bn_act_kernels_src.h) and, on a
// GPU, NVRTC compiles it for that GPU at first use (device/cuda_rtc.h). So it includes no header (NVRTC has none of
// the toolkit's): bfloat16 and float16 are their bits, converted as cuda_bf16.h and cuda_fp16.h convert them
// (round to nearest even; a NaN becomes the canonical 0x7fff), and the kernels the host launches are extern "C",
// one per dtype (kg_<kernel>_<f32|bf16|f16>).
typedef long long kg_i64;  // no <cstdint> under NVRTC

struct bf16 {
  unsigned short bits;
};
struct f16 {
  unsigned short bits;
};


constexpr int kTileC = 32;  // channels per block (threadIdx.x); bn_act_cuda.cpp launches blocks of this shape
constexpr int kLanesR = 8;  // row lanes per block (threadIdx.y)

__device__ __forceinline__ float load(const float* p, kg_i64 i) { return p[i]; }
__device__ __forceinline__ float load(const bf16* p, kg_i64 i) {
  return __uint_as_float(static_cast<unsigned>(p[i].bits) << 16);
}
__device__ __forceinline__ float load(const f16* p, kg_i64 i) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(p[i].bits));
  return f;
}
__device__ __forceinline__ void store(float* p, kg_i64 i, float v) { p[i] = v; }
__device__ __forceinline__ void store(bf16* p, kg_i64 i, float v) {
  const unsigned u = __float_as_uint(v);
  p[i].bits = (u & 0x7fffffffu) > 0x7f800000u ? static_cast<unsigned short>(0x7fffu)
                                             : static_cast<unsigned short>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
__device__ __forceinline__ void store(f16* p, kg_i64 i, float v) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
  p[i].bits = h;
}

// The block's per-channel partial sums (threadIdx.y lanes) added in double into sums[ch] and sums[c + ch].
__device__ __forceinline__ void add_block_sums(float s1, float s2, kg_i64 ch, kg_i64 c, double* sums) {
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
__device__ __forceinline__ void stats_kernel(const T* x, kg_i64 m, kg_i64 c, double* sums) {
  const kg_i64 ch = static_cast<kg_i64>(blockIdx.x) * kTileC + threadIdx.x;
  float s1 = 0, s2 = 0;
  if (ch < c) {
    const float shift = load(x, ch);
    for (kg_i64 r = static_cast<kg_i64>(blockIdx.y) * kLanesR + threadIdx.y; r < m;
         r += static_cast<kg_i64>(gridDim.y) * kLanesR) {
      const float d = load(x, r * c + ch) - shift;
      s1 += d;
      s2 += d * d;
    }
  }
  add_block_sums(s1, s2, ch, c, sums);
}

template <class T>
__device__ __forceinline__ void finalize_kernel(const T* x, const double* sums, kg_i64 m, kg_i64 c, double eps, double momentum,
                                const float* weight, const float* bias, float* mean, float* invstd, float* a, float* b,
                                float* running_mean, float* running_var) {
  const kg_i64 ch = static_cast<kg_i64>(blockIdx.x) * blockDim.x + threadIdx.x;
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
__device__ __forceinline__ void forward_kernel(const T* x, const T* z, const float* a, const float* b, int relu, T* y, kg_i64 n,
                               kg_i64 c) {
  for (kg_i64 i = static_cast<kg_i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<kg_i64>(gridDim.x) * blockDim.x) {
    const kg_i64 ch = i % c;
    float v = load(x, i) * a[ch] + b[ch];
    if (z) v += load(z, i);
    store(y, i, relu ? fmaxf(v, 0.0f) : v);
  }
}

template <class T>
__device__ __forceinline__ float masked(const T* dy, const T* y, kg_i64 i, int relu) {
  return (!relu || load(y, i) > 0.0f) ? load(dy, i) : 0.0f;
}

template <class T>
__device__ __forceinline__ void backward_sums_kernel(const T* dy, const T* y, const T* x, const float* mean, int relu, kg_i64 m,
                                     kg_i64 c, double* sums) {
  const kg_i64 ch = static_cast<kg_i64>(blockIdx.x) * kTileC + threadIdx.x;
  float s1 = 0, s2 = 0;
  if (ch < c) {
    const float mu = mean[ch];
    for (kg_i64 r = static_cast<kg_i64>(blockIdx.y) * kLanesR + threadIdx.y; r < m;
         r += static_cast<kg_i64>(gridDim.y) * kLanesR) {
      const kg_i64 i = r * c + ch;
      const float g = masked(dy, y, i, relu);
      s1 += g;
      s2 += g * (load(x, i) - mu);
    }
  }
  add_block_sums(s1, s2, ch, c, sums);
}

__device__ __forceinline__ void coeffs_kernel(const double* sums, const float* weight, const float* invstd, kg_i64 m, kg_i64 c,
                              float* coeffs, float* dweight, float* dbias) {
  const kg_i64 ch = static_cast<kg_i64>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (ch >= c) return;
  const double is = invstd[ch], p = static_cast<double>(weight[ch]) * is, inv_m = 1.0 / static_cast<double>(m);
  coeffs[ch] = static_cast<float>(p);
  coeffs[c + ch] = static_cast<float>(-p * is * is * sums[c + ch] * inv_m);
  coeffs[2 * c + ch] = static_cast<float>(-p * sums[ch] * inv_m);
  dweight[ch] = static_cast<float>(sums[c + ch] * is);
  dbias[ch] = static_cast<float>(sums[ch]);
}

template <class T>
__device__ __forceinline__ void backward_kernel(const T* dy, const T* y, const T* x, const float* mean, const float* coeffs, int relu,
                                T* dx, T* dz, kg_i64 n, kg_i64 c) {
  for (kg_i64 i = static_cast<kg_i64>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<kg_i64>(gridDim.x) * blockDim.x) {
    const kg_i64 ch = i % c;
    const float g = masked(dy, y, i, relu);
    if (dz) store(dz, i, g);
    store(dx, i, coeffs[ch] * g + coeffs[c + ch] * (load(x, i) - mean[ch]) + coeffs[2 * c + ch]);
  }
}

// The kernels the host launches (model/bn_act_cuda.cpp), one set per activation dtype.
#define KG_BN_ACT_KERNELS(T, S)                                                                                       \
  extern "C" __global__ void kg_stats_##S(const T* x, kg_i64 m, kg_i64 c, double* sums) {                            \
    stats_kernel<T>(x, m, c, sums);                                                                                  \
  }                                                                                                                  \
  extern "C" __global__ void kg_finalize_##S(const T* x, const double* sums, kg_i64 m, kg_i64 c, double eps,         \
                                             double momentum, const float* weight, const float* bias, float* mean,    \
                                             float* invstd, float* a, float* b, float* running_mean,                 \
                                             float* running_var) {                                                   \
    finalize_kernel<T>(x, sums, m, c, eps, momentum, weight, bias, mean, invstd, a, b, running_mean, running_var);    \
  }                                                                                                                  \
  extern "C" __global__ void kg_forward_##S(const T* x, const T* z, const float* a, const float* b, int relu, T* y,   \
                                            kg_i64 n, kg_i64 c) {                                                  \
    forward_kernel<T>(x, z, a, b, relu, y, n, c);                                                                    \
  }                                                                                                                  \
  extern "C" __global__ void kg_backward_sums_##S(const T* dy, const T* y, const T* x, const float* mean, int relu,    \
                                                  kg_i64 m, kg_i64 c, double* sums) {                              \
    backward_sums_kernel<T>(dy, y, x, mean, relu, m, c, sums);                                                       \
  }                                                                                                                  \
  extern "C" __global__ void kg_backward_##S(const T* dy, const T* y, const T* x, const float* mean,                  \
                                             const float* coeffs, int relu, T* dx, T* dz, kg_i64 n, kg_i64 c) {     \
    backward_kernel<T>(dy, y, x, mean, coeffs, relu, dx, dz, n, c);                                                  \
  }

KG_BN_ACT_KERNELS(float, f32)
KG_BN_ACT_KERNELS(bf16, bf16)
KG_BN_ACT_KERNELS(f16, f16)

extern "C" __global__ void kg_coeffs(const double* sums, const float* weight, const float* invstd, kg_i64 m,
                                     kg_i64 c, float* coeffs, float* dweight, float* dbias) {
  coeffs_kernel(sums, weight, invstd, m, c, coeffs, dweight, dbias);
}
