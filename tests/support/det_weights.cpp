#include "support/det_weights.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

namespace kg::test {

namespace {
double phase(const std::string& name) {
  int64_t sum = 0;
  for (size_t j = 0; j < name.size(); ++j) sum += static_cast<int64_t>(j + 1) * static_cast<unsigned char>(name[j]);
  return static_cast<double>(sum % 9973) * 0.001;
}
bool ends_with(const std::string& s, const std::string& t) {
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}
}  // namespace

at::Tensor det_tensor(const std::string& name, const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  auto s = torch::sin(torch::arange(n, torch::kDouble) * 0.7 + phase(name));
  at::Tensor v;
  if (shape.size() >= 2)
    v = s / std::sqrt(static_cast<double>(n) / static_cast<double>(shape[0]));
  else if (ends_with(name, "running_var"))
    v = 1 + 0.5 * s.abs();
  else if (ends_with(name, "weight") || ends_with(name, "gamma"))
    v = 1 + 0.1 * s;
  else
    v = 0.1 * s;
  return v.reshape(shape).to(torch::kFloat);
}

void det_fill(torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  for (auto& p : m.named_parameters(true)) p.value().copy_(det_tensor(p.key(), p.value().sizes().vec()));
  for (auto& b : m.named_buffers(true))
    if (b.value().is_floating_point()) b.value().copy_(det_tensor(b.key(), b.value().sizes().vec()));
}

void det_fill_scrambled(torch::nn::Module& m) {
  constexpr int64_t kScramble = 7919;
  det_fill(m);
  torch::NoGradGuard no_grad;
  for (auto& p : m.named_parameters(true)) {
    const int64_t n = p.value().numel();
    if (n % kScramble == 0)
      throw std::runtime_error(p.key() + ": numel " + std::to_string(n) +
                               " is a multiple of 7919, so the scramble is no permutation");
    auto index = torch::arange(n, torch::kLong).mul_(kScramble).remainder_(n);
    p.value().copy_(
        det_tensor(p.key(), p.value().sizes().vec()).flatten().index_select(0, index).reshape(p.value().sizes()));
  }
}

at::Tensor det_input(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return torch::sin(torch::arange(n, torch::kDouble) * 0.37).reshape(shape).to(torch::kFloat);
}

}  // namespace kg::test
