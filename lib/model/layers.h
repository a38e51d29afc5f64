// Building blocks shared by the backbone families.
#pragma once
#include <cstdint>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

namespace kg::model {

// Stochastic depth (Huang et al. 2016; timm drop_path): drops the residual branch for whole samples
// with probability p while training and rescales the kept ones by 1 / (1 - p).
at::Tensor drop_path(const at::Tensor& x, double p, bool training);

// Block i of n gets drop_path_rate * i / (n - 1) (timm's linear rule; the first block gets 0).
double block_drop_path(double rate, int64_t index, int64_t blocks);

// timm/torchvision CNN init: convs kaiming-normal (fan_out, ReLU gain), norm weights 1 and biases 0,
// linear layers PyTorch's default. Applied to the submodules of `m` (not `m` itself: safe in a constructor).
void init_cnn(torch::nn::Module& m);

// timm's make_divisible(v, 8): the nearest multiple of 8, at least 8, never more than 10% below v (EfficientNet's
// and NFNet's channel rounding).
int64_t make_divisible(double v);

// timm's trunc_normal_(std) cuts at the absolute bounds [-2, 2], 100 standard deviations out for std .02: no
// sample ever reaches them, so a clamped normal draws the same distribution (and ~10x faster than PyTorch's
// inverse-CDF method, whose erfinv costs seconds on convnext's 28M weights).
void trunc_normal_(at::Tensor& t, double std, double lo = -2.0, double hi = 2.0);

// LayerNorm's input in its weights' dtype, as CUDA autocast runs layer_norm (fp32 policy): under bf16 autocast the
// input arrives in bf16, and LibTorch 1.13's CPU kernel refuses a bf16 input with float weights ("expected scalar
// type BFloat16 but found Float"); 2.x accepts the mix. A no-op without autocast.
at::Tensor norm_input(const at::Tensor& x, const at::Tensor& weight);
// A LayerNorm applied to its input in its weights' dtype (norm_input).
at::Tensor run_norm(torch::nn::LayerNorm& n, const at::Tensor& x);

// x W^T + b through at::linear, as PyTorch's nn.Linear: a contiguous input of any rank is one GEMM with the bias
// folded in (addmm). torch::nn::Linear::forward (the C++ frontend's F::linear) does that for 2-D input only: tokens
// [B, N, C] go through matmul and a separate in-place bias add, one more pass over the output forward and backward.
at::Tensor apply_linear(const torch::nn::Linear& fc, const at::Tensor& x);

// timm's Mlp: fc1 -> exact (erf) GELU -> fc2 (ConvNeXt's block, ViT's block).
struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t c, int64_t hidden);
  at::Tensor forward(const at::Tensor& x);
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(Mlp);

}  // namespace kg::model
