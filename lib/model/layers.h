// Building blocks shared by the backbone families.
#pragma once
#include <cstdint>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

namespace kg::model {

// Stochastic depth (Huang et al. 2016; timm drop_path): drops the residual branch for whole samples
// with probability p while training and rescales the kept ones by 1 / (1 - p).
at::Tensor drop_path(const at::Tensor& x, double p, bool training);

// Block i of n gets drop_path_rate * i / (n - 1) (timm's linear rule; the first block gets 0).
double block_drop_path(double rate, int64_t index, int64_t blocks);

// timm/torchvision CNN init: convs kaiming-normal (fan_out, ReLU gain), norm weights 1 and biases 0,
// linear layers PyTorch's default. Applied to the submodules of `m` (not `m` itself: safe in a constructor).
void init_cnn(torch::nn::Module& m);

}  // namespace kg::model
