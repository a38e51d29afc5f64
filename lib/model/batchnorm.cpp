#include "model/batchnorm.h"

#include <mutex>
#include <utility>

#include <torch/torch.h>

#include "core/error.h"
#include "model/bn_act.h"

namespace kg::model {
namespace {
std::mutex sync_mu;
CrossProcessSum& sync_fn() {
  static CrossProcessSum fn;
  return fn;
}
CrossProcessSum current_sync() {
  std::lock_guard<std::mutex> lock(sync_mu);
  return sync_fn();
}
}  // namespace

void set_batchnorm_sync(CrossProcessSum sum) {
  std::lock_guard<std::mutex> lock(sync_mu);
  sync_fn() = std::move(sum);
}

void BatchNorm2dImpl::reset() {
  const int64_t c = options.num_features();
  if (options.affine()) {
    weight = register_parameter("weight", torch::empty({c}));
    bias = register_parameter("bias", torch::empty({c}));
  } else {
    weight = register_parameter("weight", at::Tensor(), /*requires_grad=*/false);
    bias = register_parameter("bias", at::Tensor(), /*requires_grad=*/false);
  }
  if (options.track_running_stats()) {
    running_mean = register_buffer("running_mean", torch::zeros({c}));
    running_var = register_buffer("running_var", torch::ones({c}));
    num_batches_tracked = register_buffer("num_batches_tracked", torch::tensor(0, torch::dtype(torch::kLong)));
  } else {
    running_mean = register_buffer("running_mean", at::Tensor());
    running_var = register_buffer("running_var", at::Tensor());
    num_batches_tracked = register_buffer("num_batches_tracked", at::Tensor());
  }
  reset_parameters();
}

void BatchNorm2dImpl::reset_running_stats() {
  if (!options.track_running_stats()) return;
  torch::NoGradGuard ng;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void BatchNorm2dImpl::reset_parameters() {
  reset_running_stats();
  if (!options.affine()) return;
  torch::NoGradGuard ng;
  weight.fill_(1);
  bias.zero_();
}

void BatchNorm2dImpl::pretty_print(std::ostream& stream) const {
  stream << "kg::model::BatchNorm2d(" << options.num_features() << ", eps=" << options.eps() << ", momentum=";
  if (options.momentum())
    stream << *options.momentum();
  else
    stream << "None";
  stream << ", affine=" << options.affine() << ", track_running_stats=" << options.track_running_stats() << ")";
}

at::Tensor BatchNorm2dImpl::forward(const at::Tensor& x) {
  CrossProcessSum sum;
  if (is_training()) sum = current_sync();
  if (sum) return forward_synced(x, sum);
  // LibTorch's BatchNormImplBase::forward.
  double factor = 0.0;
  if (is_training() && options.track_running_stats() && num_batches_tracked.defined()) {
    num_batches_tracked += 1;
    factor = options.momentum() ? *options.momentum() : 1.0 / num_batches_tracked.item<double>();
  }
  return torch::batch_norm(x, weight, bias, running_mean, running_var, is_training() || !options.track_running_stats(),
                           factor, options.eps(), at::globalContext().userEnabledCuDNN());
}

at::Tensor BatchNorm2dImpl::forward_act(const at::Tensor& x, const at::Tensor& z, bool relu) {
  if (fused && is_training() && !current_sync() && fused_bn_supported(*this, x, z))
    return fused_bn_act(*this, x, z, relu);
  at::Tensor y = forward(x);
  if (z.defined()) y = y + z;
  return relu ? y.relu_() : y;
}

at::Tensor BatchNorm2dImpl::forward_synced(const at::Tensor& x, const CrossProcessSum& sum) {
  KG_ASSERT(x.dim() == 4, "BatchNorm2d expects [N, C, H, W], got ", x.sizes());
  // The statistics in float32 whatever autocast gave the input (BatchNorm is float32 under autocast too).
  const at::Tensor xf = x.to(at::kFloat);
  const int64_t c = xf.size(1);
  const std::vector<int64_t> dims{0, 2, 3};
  const double local_n = static_cast<double>(xf.numel() / std::max<int64_t>(1, c));
  // One collective for [sum, sum of squares, count]: the sums over the global batch.
  at::Tensor packed = torch::cat({xf.sum(dims), xf.square().sum(dims), torch::full({1}, local_n, xf.options())});
  at::Tensor total = sum(packed);
  at::Tensor n = total.narrow(0, 2 * c, 1);
  at::Tensor mean = total.narrow(0, 0, c) / n;
  at::Tensor var = (total.narrow(0, c, c) / n - mean.square()).clamp_min(0.0);  // biased: what normalises
  const double count = total.narrow(0, 2 * c, 1).item<double>();
  {
    torch::NoGradGuard ng;
    if (options.track_running_stats() && running_mean.defined()) {
      num_batches_tracked += 1;
      const double m = options.momentum() ? *options.momentum() : 1.0 / num_batches_tracked.item<double>();
      const double unbias = count > 1 ? count / (count - 1) : 1.0;
      running_mean.mul_(1 - m).add_(mean.detach().to(running_mean.scalar_type()), m);
      running_var.mul_(1 - m).add_(var.detach().to(running_var.scalar_type()) * unbias, m);
    }
  }
  at::Tensor y = (xf - mean.view({1, c, 1, 1})) * (var + options.eps()).rsqrt().view({1, c, 1, 1});
  if (options.affine()) y = y * weight.view({1, c, 1, 1}) + bias.view({1, c, 1, 1});
  return y.to(x.scalar_type());
}

}  // namespace kg::model
