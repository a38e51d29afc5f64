// DistilBERT (Sanh et al. 2019), transformers' DistilBertModel: BERT's layers under other names
// (transformer.layer.N.attention.q_lin, sa_layer_norm, ffn.lin1, output_layer_norm), no token types, LayerNorm eps
// fixed at 1e-12. Sinusoidal position embeddings (sinusoidal_pos_embds) are a stored weight like learnt ones.
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/torch.h>

#include "core/error.h"
#include "model/text/encoder.h"
#include "model/text/text_layers.h"

namespace kg::model::text {
namespace distilbert_impl {

constexpr double kDistilEps = 1e-12;

struct DistilConfig {
  int64_t vocab_size, dim, n_layers, n_heads, hidden_dim, max_position_embeddings, pad_token_id;
  HfActivation act;
  double dropout, attention_dropout;
  explicit DistilConfig(const HfConfig& c) {
    vocab_size = c.get_int("vocab_size", 30522);
    dim = c.get_int("dim", 768);
    n_layers = c.get_int("n_layers", 6);
    n_heads = c.get_int("n_heads", 12);
    if (n_heads <= 0 || dim % n_heads != 0)
      c.fail("n_heads", std::to_string(n_heads) + " does not divide dim " + std::to_string(dim));
    hidden_dim = c.get_int("hidden_dim", 4 * 768);
    max_position_embeddings = c.get_int("max_position_embeddings", 512);
    pad_token_id = c.get_int("pad_token_id", 0);
    act = read_activation(c, "activation", "gelu");
    dropout = c.get_double("dropout", 0.1);
    attention_dropout = c.get_double("attention_dropout", 0.1);
  }
};

struct DistilAttentionImpl : torch::nn::Module {
  explicit DistilAttentionImpl(const DistilConfig& c) : cfg(c) {
    q_lin = register_module("q_lin", hf_linear(c.dim, c.dim));
    k_lin = register_module("k_lin", hf_linear(c.dim, c.dim));
    v_lin = register_module("v_lin", hf_linear(c.dim, c.dim));
    out_lin = register_module("out_lin", hf_linear(c.dim, c.dim));
  }
  // x [T, dim]: the real tokens (TokenLayout); the scores on the padded [B, L] layout.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& additive_mask, const TokenLayout& layout) {
    const int64_t d = cfg.dim / cfg.n_heads;
    auto heads = [&](const at::Tensor& t) { return hf_split_heads(layout.unpack(t), d); };
    return out_lin(layout.pack(hf_eager_attention(heads(q_lin(x)), heads(k_lin(x)), heads(v_lin(x)), additive_mask,
                                                  cfg.attention_dropout, is_training())));
  }
  DistilConfig cfg;
  torch::nn::Linear q_lin{nullptr}, k_lin{nullptr}, v_lin{nullptr}, out_lin{nullptr};
};
TORCH_MODULE(DistilAttention);

struct DistilFfnImpl : torch::nn::Module {
  explicit DistilFfnImpl(const DistilConfig& c) : cfg(c) {
    lin1 = register_module("lin1", hf_linear(c.dim, c.hidden_dim));
    lin2 = register_module("lin2", hf_linear(c.hidden_dim, c.dim));
  }
  at::Tensor forward(const at::Tensor& x) {
    return hf_dropout(lin2(apply_activation(cfg.act, lin1(x))), cfg.dropout, is_training());
  }
  DistilConfig cfg;
  torch::nn::Linear lin1{nullptr}, lin2{nullptr};
};
TORCH_MODULE(DistilFfn);

struct DistilBlockImpl : torch::nn::Module {
  explicit DistilBlockImpl(const DistilConfig& c) {
    attention = register_module("attention", DistilAttention(c));
    sa_layer_norm = register_module("sa_layer_norm", hf_layer_norm(c.dim, kDistilEps));
    ffn = register_module("ffn", DistilFfn(c));
    output_layer_norm = register_module("output_layer_norm", hf_layer_norm(c.dim, kDistilEps));
  }
  at::Tensor forward(const at::Tensor& x, const at::Tensor& additive_mask, const TokenLayout& layout) {
    at::Tensor a = sa_layer_norm(attention(x, additive_mask, layout) + x);
    return output_layer_norm(ffn(a) + a);
  }
  DistilAttention attention{nullptr};
  torch::nn::LayerNorm sa_layer_norm{nullptr};
  DistilFfn ffn{nullptr};
  torch::nn::LayerNorm output_layer_norm{nullptr};
};
TORCH_MODULE(DistilBlock);

struct DistilEmbeddingsImpl : torch::nn::Module {
  explicit DistilEmbeddingsImpl(const DistilConfig& c) : cfg(c) {
    word_embeddings = register_module("word_embeddings", hf_embedding(c.vocab_size, c.dim, c.pad_token_id));
    position_embeddings = register_module("position_embeddings", hf_embedding(c.max_position_embeddings, c.dim));
    LayerNorm = register_module("LayerNorm", hf_layer_norm(c.dim, kDistilEps));
  }
  at::Tensor forward(const at::Tensor& ids) {
    at::Tensor e = word_embeddings(ids) + position_embeddings(at::arange(ids.size(1), ids.options()).unsqueeze(0));
    return hf_dropout(LayerNorm(e), cfg.dropout, is_training());
  }
  DistilConfig cfg;
  torch::nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
};
TORCH_MODULE(DistilEmbeddings);

class DistilBertEncoder final : public TextEncoder {
 public:
  explicit DistilBertEncoder(const DistilConfig& c)
      : TextEncoder({"distilbert", c.vocab_size, c.dim, c.n_layers, c.max_position_embeddings, 0, c.pad_token_id}) {
    embeddings_ = register_module("embeddings", DistilEmbeddings(c));
    auto transformer = register_module("transformer", std::make_shared<torch::nn::Module>());
    auto list = transformer->register_module("layer", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.n_layers; ++i) layers_.push_back(DistilBlock(c)), list->push_back(layers_.back());
    add_group("embeddings", {"embeddings"});
    for (int64_t i = 0; i < c.n_layers; ++i)
      add_group("layer." + std::to_string(i), {"transformer.layer." + std::to_string(i)});
  }

  std::vector<at::Tensor> forward(const at::Tensor& ids, const at::Tensor& attention_mask,
                                  const at::Tensor& types) override {
    check_inputs(ids, attention_mask, {});
    at::Tensor mask = attention_mask.defined() ? attention_mask.to(ids.device()) : at::Tensor();
    const TokenLayout layout(mask, ids.size(0), ids.size(1));
    at::Tensor e = embeddings_(ids);
    at::Tensor add_mask = mask.defined() ? hf_additive_mask(mask, e.scalar_type()) : at::Tensor();
    return run_packed_layers(layout, e, layers_.size(), [&](size_t i) -> PackedLayer {
      DistilBlock l = layers_[i];
      return {
          l.ptr(), [l, add_mask, layout](const at::Tensor& t) mutable { return l->forward(t, add_mask, layout); }, {}};
    });
  }

 private:
  DistilEmbeddings embeddings_{nullptr};
  std::vector<DistilBlock> layers_;
};

}  // namespace distilbert_impl

KG_REGISTER_TEXT_FAMILY(TextFamily{
    "distilbert", "DistilBERT (transformers' DistilBertModel)", [](const HfConfig& c) -> TextEncoderPtr {
      return std::make_shared<distilbert_impl::DistilBertEncoder>(distilbert_impl::DistilConfig(c));
    }});

}  // namespace kg::model::text
