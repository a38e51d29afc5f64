// Gradient checkpointing (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost"; PyTorch's
// torch.utils.checkpoint): a stage runs forward without keeping its activations and is recomputed
// during backward, through a custom autograd node.
#pragma once
#include <functional>
#include <memory>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

namespace kg::model {

// Returns fn(x), computed without saving intermediate activations. In backward, fn is re-run with
// the RNG state of the first run (dropout and drop-path masks repeat) and with the stage's buffers
// (BatchNorm running statistics) restored afterwards, so a step updates them once, as without
// checkpointing; gradients flow to x and to every parameter of `stage` that requires them, even when
// x itself does not require grad (a frozen stem).
at::Tensor checkpoint(const std::shared_ptr<torch::nn::Module>& stage,
                      const std::function<at::Tensor(const at::Tensor&)>& fn, const at::Tensor& x);

}  // namespace kg::model
