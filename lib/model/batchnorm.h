// BatchNorm2d with an optional cross-process mode (SyncBatchNorm, train.sync_batchnorm): every
// backbone builds its 2-D BatchNorms from this class. Without a sync function it is LibTorch's
// BatchNorm2d (same parameters, buffers and names: timm/torchvision weights load unchanged).
#pragma once
#include <cstdint>
#include <functional>

#include <ATen/core/Tensor.h>
#include <ostream>

#include <torch/nn/cloneable.h>
#include <torch/nn/options/batchnorm.h>

namespace kg::model {

// Sums a tensor over every process of the job, differentiably (device::ProcessGroup::differentiable_sum).
using CrossProcessSum = std::function<at::Tensor(const at::Tensor&)>;

// Process-wide: while set, BatchNorm2d layers in training mode normalise with the statistics of the
// whole global batch (the sum over processes) and update their running statistics with them, as
// torch.nn.SyncBatchNorm does. An empty function turns it off.
void set_batchnorm_sync(CrossProcessSum sum);

// LibTorch's BatchNorm2d re-implemented (not derived: Debian's LibTorch hides BatchNormImplBase's
// pretty_print, which a subclass's vtable needs): the same options, parameters, buffers, names and
// numerics (at::batch_norm), plus the cross-process mode.
class BatchNorm2dImpl : public torch::nn::Cloneable<BatchNorm2dImpl> {
 public:
  explicit BatchNorm2dImpl(int64_t num_features) : BatchNorm2dImpl(torch::nn::BatchNormOptions(num_features)) {}
  explicit BatchNorm2dImpl(const torch::nn::BatchNormOptions& o) : options(o) { reset(); }

  void reset() override;
  void reset_running_stats();
  void reset_parameters();
  at::Tensor forward(const at::Tensor& x);
  // relu(forward(x) + z) (no add when z is undefined, no ReLU when relu is false): in training mode one fused
  // autograd node when `fused` is set and model/bn_act.h takes the tensors (model.fused_bn), else those three ops.
  at::Tensor forward_act(const at::Tensor& x, const at::Tensor& z, bool relu);
  void pretty_print(std::ostream& stream) const override;

  torch::nn::BatchNormOptions options;
  at::Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  bool fused = false;  // forward_act's fused path (Network::finish sets it from model.fused_bn)

 private:
  at::Tensor forward_synced(const at::Tensor& x, const CrossProcessSum& sum);
};
TORCH_MODULE(BatchNorm2d);

}  // namespace kg::model
