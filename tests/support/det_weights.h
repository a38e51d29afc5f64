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
at::Tensor det_input(const std::vector<int64_t>& shape);

}  // namespace kg::test
