// BatchNorm in training mode, an optional residual add and an optional ReLU as one autograd node (model.fused_bn),
// the fusion MLPerf's ResNet-50 submissions take from cuDNN (CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION): eager runs
// relu_(batch_norm(x) + z) as three kernels, which read x twice, write BatchNorm's output, read it and z, write the
// sum, and read and write it again for the ReLU. Here the forward reads x once for the statistics (sum and sum of
// squares in double) and once with z to write y = relu(x * a + b + z), where a = weight / sqrt(var + eps) and
// b = bias - mean * a per channel. The backward takes the ReLU's mask from y, as PyTorch's threshold_backward does:
// one pass reduces sum(g) and sum(g * (x - mean)) per channel (g = dy where y > 0), a second writes dz = g and
// dx = a * (g - sum(g) / M - (x - mean) / (var + eps) * sum(g * (x - mean)) / M), M = N * H * W: BatchNorm's
// training-mode gradient, with dweight = sum(g * (x - mean)) / sqrt(var + eps) and dbias = sum(g). The running
// statistics move as BatchNorm2d's do (momentum, unbiased variance). Both are written for NCHW and channels_last
// float32 tensors on the CPU, and in a CUDA build for channels_last float32/bfloat16/float16 ones on the GPU (model/
// bn_act_kernels.cu); anything else (another dtype under autocast on the CPU, a sync-BatchNorm job, evaluation, double
// backward) takes the eager path, which tests/model/test_bn_act.cpp holds every fused result against.
#pragma once
#include <ATen/core/Tensor.h>

namespace kg::model {

class BatchNorm2dImpl;

// Whether the fused kernels take x and z (z may be undefined): 4-D float32 on the CPU, NCHW- or
// channels_last-contiguous, z of x's shape and dtype.
bool fused_bn_supported(const at::Tensor& x, const at::Tensor& z);
// Whether fused_bn_act takes bn with x and z: an affine float32 BatchNorm, and on the CPU the tensors above; in a
// CUDA build, on the GPU: channels_last float32, bfloat16 or float16 activations of one dtype (autocast's), float32
// parameters and statistics, a set momentum (model/bn_act_kernels.cu).
bool fused_bn_supported(const BatchNorm2dImpl& bn, const at::Tensor& x, const at::Tensor& z);

// relu(bn(x) + z) (no add when z is undefined, no ReLU when relu is false) with the batch's statistics, updating
// bn's running statistics and num_batches_tracked as bn.forward(x) does in training mode. Needs fused_bn_supported.
at::Tensor fused_bn_act(BatchNorm2dImpl& bn, const at::Tensor& x, const at::Tensor& z, bool relu);

}  // namespace kg::model
