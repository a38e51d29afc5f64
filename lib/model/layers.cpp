#include "model/layers.h"

#include <torch/torch.h>

#include "model/batchnorm.h"

namespace kg::model {

at::Tensor drop_path(const at::Tensor& x, double p, bool training) {
  if (p <= 0.0 || !training) return x;
  const double keep = 1.0 - p;
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[0] = x.size(0);
  at::Tensor mask = torch::empty(shape, x.options()).bernoulli_(keep);
  return x * mask.div_(keep);
}

double block_drop_path(double rate, int64_t index, int64_t blocks) {
  return blocks > 1 ? rate * static_cast<double>(index) / static_cast<double>(blocks - 1) : 0.0;
}

void init_cnn(torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  for (auto& mod : m.modules(/*include_self=*/false)) {  // constructors call this before make_shared
    if (auto* c = mod->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
      if (c->bias.defined()) c->bias.zero_();
    } else if (auto* b = mod->as<BatchNorm2d>()) {
      if (b->weight.defined()) b->weight.fill_(1.0);
      if (b->bias.defined()) b->bias.zero_();
    }
  }
}

MlpImpl::MlpImpl(int64_t c, int64_t hidden)
    : fc1(register_module("fc1", torch::nn::Linear(c, hidden))),
      fc2(register_module("fc2", torch::nn::Linear(hidden, c))) {}

at::Tensor apply_linear(const torch::nn::Linear& fc, const at::Tensor& x) {
  return torch::linear(x, fc->weight, fc->bias);
}

at::Tensor MlpImpl::forward(const at::Tensor& x) { return apply_linear(fc2, torch::gelu(apply_linear(fc1, x))); }

int64_t make_divisible(double v) {
  int64_t r = std::max<int64_t>(8, static_cast<int64_t>(v + 4.0) / 8 * 8);
  if (static_cast<double>(r) < 0.9 * v) r += 8;
  return r;
}

void trunc_normal_(at::Tensor& t, double std, double lo, double hi) { t.normal_(0.0, std).clamp_(lo, hi); }

at::Tensor norm_input(const at::Tensor& x, const at::Tensor& weight) {
  return x.scalar_type() == weight.scalar_type() ? x : x.to(weight.scalar_type());
}

at::Tensor run_norm(torch::nn::LayerNorm& n, const at::Tensor& x) { return n->forward(norm_input(x, n->weight)); }

}  // namespace kg::model
