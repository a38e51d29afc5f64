// Pieces the BERT-like encoders share, with transformers' module names: a Linear + dropout + residual LayerNorm
// ("attention.output", "output": BertSelfOutput/BertOutput, DebertaV2SelfOutput/DebertaV2Output) and the
// intermediate projection with its activation ("intermediate": BertIntermediate).
#pragma once
#include <cstdint>
#include <optional>

#include <torch/nn/module.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "model/text/hf_config.h"

namespace kg::model::text {

torch::nn::Linear hf_linear(int64_t in, int64_t out, bool bias = true);
torch::nn::LayerNorm hf_layer_norm(int64_t n, double eps);
torch::nn::Embedding hf_embedding(int64_t n, int64_t dim, std::optional<int64_t> padding_idx = std::nullopt);
at::Tensor hf_dropout(const at::Tensor& x, double p, bool training);

// LayerNorm(dropout(dense(x)) + residual).
struct HfDenseNormImpl : torch::nn::Module {
  HfDenseNormImpl(int64_t in, int64_t out, double eps, double dropout);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& residual);
  torch::nn::Linear dense{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
  double dropout_p;
};
TORCH_MODULE(HfDenseNorm);

// act(dense(x)).
struct HfIntermediateImpl : torch::nn::Module {
  HfIntermediateImpl(int64_t in, int64_t out, HfActivation act);
  at::Tensor forward(const at::Tensor& x);
  torch::nn::Linear dense{nullptr};
  HfActivation act;
};
TORCH_MODULE(HfIntermediate);

// transformers' eager_attention_forward: q, k, v [B, H, L, d]; additive_mask [B, 1, 1, L] (0 or the float minimum) or
// undefined -> [B, L, H * d]. softmax_in_float: the softmax in float32, back to q's dtype (ModernBERT's).
at::Tensor hf_eager_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                              const at::Tensor& additive_mask, double dropout_p, bool training,
                              bool softmax_in_float = false);
// torch.finfo(dtype).min: what transformers fills masked scores with (float's would overflow half and bfloat16).
double hf_lowest(at::ScalarType dtype);
// A [B, L] 0/1 mask -> [B, 1, 1, L]: 0 where attended, the float minimum where masked.
at::Tensor hf_additive_mask(const at::Tensor& mask, at::ScalarType dtype);
// [B, L, H * d] -> [B, H, L, d].
at::Tensor hf_split_heads(const at::Tensor& x, int64_t head_size);

// The real tokens of a padded batch. The dense parts of a layer (projections, LayerNorms, the feed-forward: most of an
// encoder's work) run on the T real tokens as [T, hidden]; only attention sees the padded [B, L] layout. transformers
// computes the padding positions too, and nothing reads them (attention masks them out as keys, pooling masks them):
// with dynamic padding on unsorted batches they are a third or more of the work. Without padding both are views.
class TokenLayout {
 public:
  // mask [B, L], 1 token, 0 padding (any dtype, any device); undefined: no padding.
  TokenLayout(const at::Tensor& mask, int64_t batch, int64_t length);
  bool padded() const { return index_.defined(); }
  at::Tensor pack(const at::Tensor& x) const;    // [B, L, ...] -> [T, ...]
  at::Tensor unpack(const at::Tensor& x) const;  // [T, ...] -> [B, L, ...], zeros at the padding positions

 private:
  at::Tensor index_;  // [T] int64 positions in [B * L]; undefined: all of them
  int64_t batch_, length_;
};

// [B, L] ids, a [B, L] mask (undefined: ones) -> the mask as float [B, L] on the ids' device.
at::Tensor mask_or_ones(const at::Tensor& ids, const at::Tensor& mask);

}  // namespace kg::model::text
