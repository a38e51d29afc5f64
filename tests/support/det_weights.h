// The C++ half of scripts/golden/det_weights.py: deterministic weights from each tensor's name and
// shape (no RNG), so a natively built model and the Python reference give comparable outputs.
#pragma once
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

namespace kg::test {

at::Tensor det_tensor(const std::string& name, const std::vector<int64_t>& shape);
// Fills every floating parameter and buffer by its state_dict name.
void det_fill(torch::nn::Module& m);
// det_fill, but every parameter takes det_tensor's values read at flat index (k * 7919) % numel (buffers as
// det_fill): the plain values make rank-2 matrices that flatten a deep net's output (scripts/golden/gen_convnext.py).
// Throws when a parameter's numel is a multiple of 7919 (then the scramble is no permutation).
void det_fill_scrambled(torch::nn::Module& m);
at::Tensor det_input(const std::vector<int64_t>& shape);

}  // namespace kg::test
