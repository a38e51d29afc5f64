#include "model/text/text_layers.h"

#include <cmath>
#include <limits>
#include <vector>

#include <ATen/ATen.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <torch/torch.h>

namespace kg::model::text {

torch::nn::Linear hf_linear(int64_t in, int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

torch::nn::LayerNorm hf_layer_norm(int64_t n, double eps) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({n}).eps(eps));
}

torch::nn::Embedding hf_embedding(int64_t n, int64_t dim, std::optional<int64_t> padding_idx) {
  auto o = torch::nn::EmbeddingOptions(n, dim);
  // nn.Embedding's padding_idx: that row gets no gradient (transformers sets it on the word embeddings).
  if (padding_idx && *padding_idx >= 0 && *padding_idx < n) o.padding_idx(*padding_idx);
  return torch::nn::Embedding(o);
}

at::Tensor hf_dropout(const at::Tensor& x, double p, bool training) {
  if (!training || p <= 0.0) return x;
  return at::dropout(x, p, true);
}

HfDenseNormImpl::HfDenseNormImpl(int64_t in, int64_t out, double eps, double dropout) : dropout_p(dropout) {
  dense = register_module("dense", hf_linear(in, out));
  LayerNorm = register_module("LayerNorm", hf_layer_norm(out, eps));
}

at::Tensor HfDenseNormImpl::forward(const at::Tensor& x, const at::Tensor& residual) {
  return LayerNorm(hf_dropout(dense(x), dropout_p, is_training()) + residual);
}

HfIntermediateImpl::HfIntermediateImpl(int64_t in, int64_t out, HfActivation a) : act(a) {
  dense = register_module("dense", hf_linear(in, out));
}

at::Tensor HfIntermediateImpl::forward(const at::Tensor& x) { return apply_activation(act, dense(x)); }

at::Tensor hf_eager_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const at::Tensor& additive_mask, double dropout_p, bool training, bool softmax_in_float) {
  const double scaling = std::pow(static_cast<double>(q.size(-1)), -0.5);
  at::Tensor w = at::matmul(q, k.transpose(2, 3)) * scaling;
  if (additive_mask.defined()) w = w + additive_mask;
  w = softmax_in_float ? at::softmax(w, -1, at::kFloat).to(q.scalar_type()) : at::softmax(w, -1);
  w = hf_dropout(w, dropout_p, training);
  at::Tensor out = at::matmul(w, v).transpose(1, 2).contiguous();
  return out.reshape({out.size(0), out.size(1), -1});
}

double hf_lowest(at::ScalarType dtype) {
  switch (dtype) {
    case at::kHalf:
      return static_cast<double>(std::numeric_limits<c10::Half>::lowest());
    case at::kBFloat16:
      return static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest());
    case at::kDouble:
      return std::numeric_limits<double>::lowest();
    default:
      return std::numeric_limits<float>::lowest();
  }
}

at::Tensor hf_additive_mask(const at::Tensor& mask, at::ScalarType dtype) {
  at::Tensor keep = mask.to(at::kBool).unsqueeze(1).unsqueeze(2);
  return at::where(keep, at::scalar_tensor(0.0, mask.options().dtype(dtype)),
                   at::scalar_tensor(hf_lowest(dtype), mask.options().dtype(dtype)));
}

at::Tensor hf_split_heads(const at::Tensor& x, int64_t head_size) {
  return x.view({x.size(0), x.size(1), -1, head_size}).transpose(1, 2);
}

TokenLayout::TokenLayout(const at::Tensor& mask, int64_t batch, int64_t length) : batch_(batch), length_(length) {
  if (!mask.defined()) return;
  // nonzero's size is the only host sync on a GPU (as transformers' unpadding makes): all B * L positions, no padding.
  at::Tensor index = at::nonzero(mask.reshape({-1}).to(at::kBool)).squeeze(1);
  if (index.size(0) < batch * length) index_ = index;
}

namespace {
std::vector<int64_t> with_rows(const at::Tensor& x, int64_t skip, std::vector<int64_t> rows) {
  for (int64_t d = skip; d < x.dim(); ++d) rows.push_back(x.size(d));
  return rows;
}
}  // namespace

at::Tensor TokenLayout::pack(const at::Tensor& x) const {
  at::Tensor flat = x.reshape(with_rows(x, 2, {batch_ * length_}));
  return padded() ? flat.index_select(0, index_) : flat;
}

at::Tensor TokenLayout::unpack(const at::Tensor& x) const {
  if (!padded()) return x.view(with_rows(x, 1, {batch_, length_}));
  at::Tensor full = at::zeros(with_rows(x, 1, {batch_ * length_}), x.options()).index_copy(0, index_, x);
  return full.view(with_rows(x, 1, {batch_, length_}));
}

at::Tensor mask_or_ones(const at::Tensor& ids, const at::Tensor& mask) {
  if (!mask.defined()) return at::ones(ids.sizes(), ids.options().dtype(at::kFloat));
  return mask.to(ids.device(), at::kFloat);
}

}  // namespace kg::model::text
