#include "model/bn_act.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/torch.h>

#include "core/error.h"
#include "model/batchnorm.h"

#if KG_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "model/bn_act_cuda.h"
#endif

namespace kg::model {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A float32 [N, C, H, W] tensor as runs of contiguous elements: NCHW holds N * C runs of S = H * W elements of one
// channel; channels_last holds N * S runs of C elements, one of each channel. A tensor that is both (S == 1 or
// C == 1) is read as NCHW; either way its element order is the same.
struct Layout {
  int64_t n = 0, c = 0, s = 0;
  bool nhwc = false;
  int64_t m() const { return n * s; }  // elements per channel
  at::MemoryFormat format() const { return nhwc ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous; }
};

Layout layout_of(const at::Tensor& x) {
  Layout l;
  l.n = x.size(0);
  l.c = x.size(1);
  l.s = x.size(2) * x.size(3);
  l.nhwc = !x.is_contiguous();  // fused_bn_supported: then it is channels_last-contiguous
  return l;
}

// t in the layout's element order (a copy only when its strides differ).
at::Tensor in_layout(const at::Tensor& t, const Layout& l) {
  return t.is_contiguous(l.format()) ? t : t.contiguous(l.format());
}

// What apply gets for an absent residual: autograd's custom functions take no undefined tensor (LibTorch 1.13).
at::Tensor or_placeholder(const at::Tensor& z, const at::Tensor& x) {
  return z.defined() ? z : at::empty({0}, x.options());
}

// What both nodes keep for backward: x, y (the ReLU's mask), weight, mean, invstd, and the two flags.
void save(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& y, const at::Tensor& weight,
          const at::Tensor& mean, const at::Tensor& invstd, bool relu, bool has_z) {
  ctx->save_for_backward({x, y, weight, mean, invstd});
  ctx->saved_data["relu"] = relu;
  ctx->saved_data["has_z"] = has_z;
}
struct Saved {
  at::Tensor x, y, weight, mean, invstd;
  bool relu = true, has_z = false;
  explicit Saved(AutogradContext* ctx) {
    const auto v = ctx->get_saved_variables();
    x = v[0], y = v[1], weight = v[2], mean = v[3], invstd = v[4];
    relu = ctx->saved_data["relu"].toBool();
    has_z = ctx->saved_data["has_z"].toBool();
  }
};

constexpr int64_t kLanes = 8;         // independent accumulators (NCHW): the compiler vectorises across them
constexpr int64_t kMinPartRows = 64;  // channels_last: rows a thread's part holds at least

// Per-channel sums r1[c], r2[c] of two terms that term(i, c, t1, t2) adds for element i of channel c, in double
// throughout: statistics a rounding apart move ReLU masks and max-pool choices, and so gradients, by more than the
// rounding (tests/model/test_bn_act.cpp holds them against float64's).
template <class Term>
void channel_sums(const Layout& l, double* r1, double* r2, const Term& term) {
  if (!l.nhwc) {
    at::parallel_for(0, l.c, 1, [&](int64_t c0, int64_t c1) {
      for (int64_t c = c0; c < c1; ++c) {
        double d1 = 0, d2 = 0;
        for (int64_t n = 0; n < l.n; ++n) {
          const int64_t base = (n * l.c + c) * l.s;
          double a1[kLanes] = {}, a2[kLanes] = {};
          int64_t i = 0;
          for (; i + kLanes <= l.s; i += kLanes)
            for (int64_t k = 0; k < kLanes; ++k) term(base + i + k, c, a1[k], a2[k]);
          for (; i < l.s; ++i) term(base + i, c, a1[0], a2[0]);
          for (int64_t k = 0; k < kLanes; ++k) d1 += a1[k], d2 += a2[k];
        }
        r1[c] = d1;
        r2[c] = d2;
      }
    });
    return;
  }
  // channels_last: each part of the rows sums into its own per-channel accumulators, added up at the end.
  const int64_t rows = l.m();
  const int64_t parts = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), rows / kMinPartRows));
  std::vector<double> acc(static_cast<size_t>(parts * 2 * l.c), 0.0);
  at::parallel_for(0, parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      double* d1 = acc.data() + p * 2 * l.c;
      double* d2 = d1 + l.c;
      for (int64_t q = rows * p / parts; q < rows * (p + 1) / parts; ++q)
        for (int64_t c = 0; c < l.c; ++c) term(q * l.c + c, c, d1[c], d2[c]);
    }
  });
  for (int64_t c = 0; c < l.c; ++c) {
    double d1 = 0, d2 = 0;
    for (int64_t p = 0; p < parts; ++p) d1 += acc[p * 2 * l.c + c], d2 += acc[p * 2 * l.c + l.c + c];
    r1[c] = d1;
    r2[c] = d2;
  }
}

// body(i, c) for every element, in parallel over channel runs (NCHW) or rows (channels_last).
template <class Body>
void for_each_element(const Layout& l, const Body& body) {
  const int64_t runs = l.nhwc ? l.m() : l.n * l.c;
  const int64_t len = l.nhwc ? l.c : l.s;
  at::parallel_for(0, runs, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, len)), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t base = r * len;
      if (l.nhwc) {
        for (int64_t c = 0; c < len; ++c) body(base + c, c);
      } else {
        const int64_t c = r % l.c;
        for (int64_t i = 0; i < len; ++i) body(base + i, c);
      }
    }
  });
}

// Saved: x, y, weight, mean, invstd (float [C]); relu and whether z was given in saved_data.
struct BnActFunction : torch::autograd::Function<BnActFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& z, const at::Tensor& weight,
                            const at::Tensor& bias, const at::Tensor& mean, const at::Tensor& invstd, bool relu) {
    const Layout l = layout_of(x);
    const bool has_z = z.numel() > 0;  // an empty placeholder when there is no add (apply takes no undefined tensor)
    const at::Tensor xl = in_layout(x, l), zl = has_z ? in_layout(z, l) : at::Tensor();
    at::Tensor a = (weight.to(at::kFloat) * invstd).contiguous();
    at::Tensor b = (bias.to(at::kFloat) - mean * a).contiguous();
    at::Tensor y = at::empty(x.sizes(), x.options().memory_format(l.format()));
    const float *px = xl.data_ptr<float>(), *pz = has_z ? zl.data_ptr<float>() : nullptr;
    const float *pa = a.data_ptr<float>(), *pb = b.data_ptr<float>();
    float* py = y.data_ptr<float>();
    const auto act = [relu](float v) { return relu ? std::max(v, 0.0f) : v; };
    if (pz)
      for_each_element(l, [&](int64_t i, int64_t c) { py[i] = act(px[i] * pa[c] + pb[c] + pz[i]); });
    else
      for_each_element(l, [&](int64_t i, int64_t c) { py[i] = act(px[i] * pa[c] + pb[c]); });
    save(ctx, xl, y, weight, mean, invstd, relu, has_z);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const Saved sv(ctx);
    const at::Tensor &x = sv.x, &y = sv.y, &weight = sv.weight, &mean = sv.mean, &invstd = sv.invstd;
    const bool relu = sv.relu, has_z = sv.has_z;
    variable_list out(7);
    if (!grads[0].defined()) return out;
    const Layout l = layout_of(x);
    const at::Tensor gy = in_layout(grads[0].to(at::kFloat), l);
    const float *px = x.data_ptr<float>(), *py = y.data_ptr<float>(), *pg = gy.data_ptr<float>();
    const float* pm = mean.data_ptr<float>();
    // g = dy where the ReLU passed (y > 0), as threshold_backward: a select of two loaded values, never a branch
    // (half the elements are masked, at random); sums of g and g * (x - mean) per channel.
    const auto masked = [=](int64_t i) {
      const float gv = pg[i], yv = py[i];
      return (!relu || yv > 0.0f) ? gv : 0.0f;
    };
    // With a residual, dz = g is written by this pass and read back by the next, which then reads 2 tensors
    // instead of 3 (dy, y, x).
    at::Tensor dz = has_z ? at::empty(x.sizes(), x.options().memory_format(l.format())) : at::Tensor();
    float* pdz = has_z ? dz.data_ptr<float>() : nullptr;
    std::vector<double> sg(static_cast<size_t>(l.c)), sgx(static_cast<size_t>(l.c));
    const auto sum_terms = [&](int64_t i, int64_t c, float g, double& t1, double& t2) {
      t1 += g;
      t2 += static_cast<double>(g) * (static_cast<double>(px[i]) - pm[c]);
    };
    if (pdz)
      channel_sums(l, sg.data(), sgx.data(), [&](int64_t i, int64_t c, double& t1, double& t2) {
        const float g = masked(i);
        pdz[i] = g;
        sum_terms(i, c, g, t1, t2);
      });
    else
      channel_sums(l, sg.data(), sgx.data(),
                   [&](int64_t i, int64_t c, double& t1, double& t2) { sum_terms(i, c, masked(i), t1, t2); });
    // dx = p * g + r * (x - mean) + q per channel: p = w * invstd, r = -p * invstd^2 * sum(g (x - mean)) / M,
    // q = -p * sum(g) / M.
    const at::Tensor w = weight.to(at::kFloat).contiguous();
    const float *pw = w.data_ptr<float>(), *pi = invstd.data_ptr<float>();
    std::vector<float> cp(static_cast<size_t>(l.c)), cr(cp.size()), cq(cp.size());
    at::Tensor dweight = at::empty({l.c}, x.options()), dbias = at::empty({l.c}, x.options());
    const double inv_m = 1.0 / static_cast<double>(std::max<int64_t>(1, l.m()));
    for (int64_t c = 0; c < l.c; ++c) {
      const double p = static_cast<double>(pw[c]) * pi[c];
      const double r = -p * static_cast<double>(pi[c]) * pi[c] * sgx[c] * inv_m;
      cp[c] = static_cast<float>(p);
      cr[c] = static_cast<float>(r);
      cq[c] = static_cast<float>(-p * sg[c] * inv_m);
      dweight.data_ptr<float>()[c] = static_cast<float>(sgx[c] * pi[c]);
      dbias.data_ptr<float>()[c] = static_cast<float>(sg[c]);
    }
    at::Tensor dx = at::empty(x.sizes(), x.options().memory_format(l.format()));
    float* pdx = dx.data_ptr<float>();
    const auto dx_of = [&](int64_t i, int64_t c, float g) { return cp[c] * g + cr[c] * (px[i] - pm[c]) + cq[c]; };
    if (pdz)
      for_each_element(l, [&](int64_t i, int64_t c) { pdx[i] = dx_of(i, c, pdz[i]); });
    else
      for_each_element(l, [&](int64_t i, int64_t c) { pdx[i] = dx_of(i, c, masked(i)); });
    out[0] = dx;
    out[1] = dz;
    out[2] = dweight.to(weight.scalar_type());
    out[3] = dbias.to(weight.scalar_type());
    return out;
  }
};

#if KG_WITH_CUDA
cuda::Dtype cuda_dtype(const at::Tensor& t) {
  return t.scalar_type() == at::kBFloat16 ? cuda::Dtype::bf16
                                          : (t.scalar_type() == at::kHalf ? cuda::Dtype::f16 : cuda::Dtype::f32);
}
cuda::Shape cuda_shape(const at::Tensor& x) { return {x.size(0) * x.size(2) * x.size(3), x.size(1)}; }
void* current_stream() { return at::cuda::getCurrentCUDAStream().stream(); }
int cuda_index_of(const at::Tensor& t) { return static_cast<int>(t.get_device()); }

// The start-up probe: the first fused BatchNorm on a GPU compiles and loads the kernels there; when they cannot run
// (model/bn_act_cuda.h: kernels_ready), one line says why and every BatchNorm on that GPU runs the eager ops.
bool cuda_kernels_usable(int device) {
  std::string why;
  if (cuda::kernels_ready(device, &why)) return true;
  static std::mutex mu;
  static std::set<int> told;
  std::lock_guard<std::mutex> lock(mu);
  if (told.insert(device).second)
    std::cerr << "kgtrain: model.fused_bn: kgtrain's CUDA kernels cannot run on cuda:" << device << " (" << why
              << "); BatchNorm + add + ReLU run as separate PyTorch ops there\n";
  return false;
}

// The CUDA kernels' node (model/bn_act_kernels.cu, launched by model/bn_act_cuda.cpp): channels_last x, z and y in one dtype, float32 weights.
struct CudaBnActFunction : torch::autograd::Function<CudaBnActFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& z, const at::Tensor& weight,
                            const at::Tensor& bias, const at::Tensor& mean, const at::Tensor& invstd,
                            const at::Tensor& a, const at::Tensor& b, bool relu) {
    at::Tensor y = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::ChannelsLast));
    const bool has_z = z.numel() > 0;  // an empty placeholder when there is no add
    cuda::bn_act_forward(cuda_dtype(x), x.data_ptr(), has_z ? z.data_ptr() : nullptr, a.data_ptr<float>(),
                         b.data_ptr<float>(), relu, y.data_ptr(), cuda_shape(x), cuda_index_of(x), current_stream());
    save(ctx, x, y, weight, mean, invstd, relu, has_z);
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const Saved sv(ctx);
    const at::Tensor &x = sv.x, &y = sv.y, &weight = sv.weight, &mean = sv.mean, &invstd = sv.invstd;
    const bool relu = sv.relu, has_z = sv.has_z;
    variable_list out(9);
    if (!grads[0].defined()) return out;
    const at::Tensor gy = grads[0].to(x.scalar_type()).contiguous(at::MemoryFormat::ChannelsLast);
    const cuda::Shape s = cuda_shape(x);
    const auto f32 = x.options().dtype(at::kFloat);
    at::Tensor sums = at::empty({2 * s.c}, x.options().dtype(at::kDouble)), coeffs = at::empty({3 * s.c}, f32);
    at::Tensor dweight = at::empty({s.c}, f32), dbias = at::empty({s.c}, f32);
    at::Tensor dx = at::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::ChannelsLast));
    at::Tensor dz = has_z ? at::empty_like(dx) : at::Tensor();
    cuda::bn_act_backward(cuda_dtype(x), gy.data_ptr(), y.data_ptr(), x.data_ptr(), weight.data_ptr<float>(),
                          mean.data_ptr<float>(), invstd.data_ptr<float>(), relu, s, sums.data_ptr<double>(),
                          coeffs.data_ptr<float>(), dweight.data_ptr<float>(), dbias.data_ptr<float>(), dx.data_ptr(),
                          has_z ? dz.data_ptr() : nullptr, cuda_index_of(x), current_stream());
    out[0] = dx;
    out[1] = dz;
    out[2] = dweight;
    out[3] = dbias;
    return out;
  }
};

at::Tensor fused_bn_act_cuda(BatchNorm2dImpl& bn, const at::Tensor& x0, const at::Tensor& z0, bool relu) {
  const at::Tensor x = x0.contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor z = z0.defined() ? z0.contiguous(at::MemoryFormat::ChannelsLast) : z0;
  const cuda::Shape s = cuda_shape(x);
  const auto f32 = x.options().dtype(at::kFloat);
  at::Tensor sums = at::empty({2 * s.c}, x.options().dtype(at::kDouble));
  at::Tensor mean = at::empty({s.c}, f32), invstd = at::empty({s.c}, f32), a = at::empty({s.c}, f32),
             b = at::empty({s.c}, f32);
  const bool track = bn.options.track_running_stats() && bn.running_mean.defined();
  if (track) bn.num_batches_tracked.add_(1);
  cuda::bn_stats(cuda_dtype(x), x.data_ptr(), s, bn.options.eps(), bn.options.momentum().value_or(0.0),
                 bn.weight.data_ptr<float>(), bn.bias.data_ptr<float>(), sums.data_ptr<double>(),
                 mean.data_ptr<float>(), invstd.data_ptr<float>(), a.data_ptr<float>(), b.data_ptr<float>(),
                 track ? bn.running_mean.data_ptr<float>() : nullptr,
                 track ? bn.running_var.data_ptr<float>() : nullptr, cuda_index_of(x), current_stream());
  return CudaBnActFunction::apply(x, or_placeholder(z, x), bn.weight, bn.bias, mean, invstd, a, b, relu);
}
#endif

}  // namespace

bool fused_bn_supported(const BatchNorm2dImpl& bn, const at::Tensor& x, const at::Tensor& z) {
  if (!bn.options.affine() || !bn.weight.defined() || bn.weight.scalar_type() != at::kFloat) return false;
  if (x.defined() && x.is_cuda()) {
#if KG_WITH_CUDA
    // The kernels: channels_last activations of one dtype, float32 parameters and statistics on x's device, and
    // a momentum (a cumulative average would read num_batches_tracked on the host).
    const auto t = x.scalar_type();
    if (x.dim() != 4 || x.numel() == 0 || !(t == at::kFloat || t == at::kBFloat16 || t == at::kHalf)) return false;
    if (!x.is_contiguous(at::MemoryFormat::ChannelsLast) || !bn.options.momentum()) return false;
    if (bn.weight.device() != x.device() || !bn.bias.is_contiguous() || !bn.weight.is_contiguous()) return false;
    if (bn.running_mean.defined() && bn.running_mean.scalar_type() != at::kFloat) return false;
    if (z.defined() && (z.sizes() != x.sizes() || z.scalar_type() != t || z.device() != x.device())) return false;
    return cuda_kernels_usable(cuda_index_of(x));
#else
    return false;
#endif
  }
  return fused_bn_supported(x, z);
}

bool fused_bn_supported(const at::Tensor& x, const at::Tensor& z) {
  if (!x.defined() || x.dim() != 4 || !x.device().is_cpu() || x.scalar_type() != at::kFloat || x.numel() == 0)
    return false;
  if (!x.is_contiguous() && !x.is_contiguous(at::MemoryFormat::ChannelsLast)) return false;
  return !z.defined() || (z.sizes() == x.sizes() && z.scalar_type() == x.scalar_type() && z.device() == x.device());
}

at::Tensor fused_bn_act(BatchNorm2dImpl& bn, const at::Tensor& x, const at::Tensor& z, bool relu) {
  KG_ASSERT(fused_bn_supported(bn, x, z), "fused_bn_act: unsupported input ", x.sizes(), " ", x.scalar_type());
#if KG_WITH_CUDA
  if (x.is_cuda()) return fused_bn_act_cuda(bn, x, z, relu);
#endif
  const Layout l = layout_of(x);
  const at::Tensor xl = in_layout(x, l);
  at::Tensor mean = at::empty({l.c}, x.options()), invstd = at::empty({l.c}, x.options());
  double count = static_cast<double>(l.m());
  {
    // Moments about each channel's first element (the shifted data's cancellation is small), in double.
    const float* px = xl.data_ptr<float>();
    std::vector<float> shift(static_cast<size_t>(l.c));
    for (int64_t c = 0; c < l.c; ++c) shift[c] = l.nhwc ? px[c] : px[c * l.s];
    std::vector<double> s1(shift.size()), s2(shift.size());
    channel_sums(l, s1.data(), s2.data(), [&](int64_t i, int64_t c, double& t1, double& t2) {
      const double d = static_cast<double>(px[i]) - shift[c];
      t1 += d;
      t2 += d * d;
    });
    const double eps = bn.options.eps();
    float *pm = mean.data_ptr<float>(), *pi = invstd.data_ptr<float>();
    std::vector<double> var(shift.size());
    for (int64_t c = 0; c < l.c; ++c) {
      const double dm = s1[c] / count;
      var[c] = std::max(0.0, s2[c] / count - dm * dm);
      pm[c] = static_cast<float>(shift[c] + dm);
      pi[c] = static_cast<float>(1.0 / std::sqrt(var[c] + eps));
    }
    // Running statistics as BatchNorm2d::forward moves them (at::batch_norm's unbiased variance).
    torch::NoGradGuard no_grad;
    if (bn.options.track_running_stats() && bn.running_mean.defined()) {
      bn.num_batches_tracked += 1;
      const double m = bn.options.momentum() ? *bn.options.momentum() : 1.0 / bn.num_batches_tracked.item<double>();
      const double unbias = count > 1 ? count / (count - 1) : 1.0;
      at::Tensor v = at::from_blob(var.data(), {l.c}, at::kDouble).to(bn.running_var.scalar_type());
      bn.running_mean.mul_(1 - m).add_(mean.to(bn.running_mean.scalar_type()), m);
      bn.running_var.mul_(1 - m).add_(v * unbias, m);
    }
  }
  return BnActFunction::apply(xl, or_placeholder(z, xl), bn.weight, bn.bias, mean, invstd, relu);
}

}  // namespace kg::model
