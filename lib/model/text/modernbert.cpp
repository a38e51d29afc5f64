// ModernBERT (Warner et al. 2024, "Smarter, Better, Faster, Longer"), transformers' ModernBertModel with its eager
// (padded) attention: pre-norm layers without biases (norm_bias, attention_bias, mlp_bias), rotary position
// embeddings with one base per layer type (rope_parameters, or the older global/local_rope_theta), GeGLU MLP
// (Wi -> act(input) * gate -> Wo), and layers alternating global attention with a local window of
// local_attention / 2 tokens each side (layer_types, or every global_attn_every_n_layers-th layer global). The last
// hidden state is after final_norm, as transformers' last_hidden_state and hidden_states[-1] are. Like the other
// families, the layers run on the real tokens (TokenLayout): only the rotary embeddings and the scores see [B, L].
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/torch.h>

#include "core/error.h"
#include "model/text/encoder.h"
#include "model/text/text_layers.h"

namespace kg::model::text {
namespace modernbert_impl {

struct ModernConfig {
  int64_t vocab_size, hidden_size, num_layers, num_heads, intermediate_size, pad_token_id, local_attention;
  HfActivation act;
  double norm_eps, embedding_dropout, attention_dropout, mlp_dropout;
  bool norm_bias, attention_bias, mlp_bias;
  std::vector<bool> global;  // per layer: full attention (else the local window)
  double global_theta, local_theta;

  explicit ModernConfig(const HfConfig& c) {
    vocab_size = c.get_int("vocab_size", 50368);
    hidden_size = c.get_int("hidden_size", 768);
    num_layers = c.get_int("num_hidden_layers", 22);
    num_heads = c.get_int("num_attention_heads", 12);
    if (num_heads <= 0 || hidden_size % num_heads != 0)
      c.fail("num_attention_heads",
             std::to_string(num_heads) + " does not divide hidden_size " + std::to_string(hidden_size));
    intermediate_size = c.get_int("intermediate_size", 1152);
    pad_token_id = c.get_int("pad_token_id", 50283);
    local_attention = c.get_int("local_attention", 128);
    act = read_activation(c, "hidden_activation", "gelu");
    norm_eps = c.get_double("norm_eps", 1e-5);
    embedding_dropout = c.get_double("embedding_dropout", 0.0);
    attention_dropout = c.get_double("attention_dropout", 0.0);
    mlp_dropout = c.get_double("mlp_dropout", 0.0);
    norm_bias = c.get_bool("norm_bias", false);
    attention_bias = c.get_bool("attention_bias", false);
    mlp_bias = c.get_bool("mlp_bias", false);
    auto types = c.get_strings("layer_types");
    if (types.empty()) {
      const int64_t every = c.get_int("global_attn_every_n_layers", 3);
      if (every <= 0) c.fail("global_attn_every_n_layers", "must be positive");
      for (int64_t i = 0; i < num_layers; ++i) global.push_back(i % every == 0);
    } else {
      if (static_cast<int64_t>(types.size()) != num_layers)
        c.fail("layer_types", "has " + std::to_string(types.size()) + " entries for " + std::to_string(num_layers) +
                                  " layers (num_hidden_layers)");
      for (const auto& t : types) {
        if (t != "full_attention" && t != "sliding_attention")
          c.fail("layer_types", "entry \"" + t + "\" is not implemented (known: full_attention, sliding_attention)");
        global.push_back(t == "full_attention");
      }
    }
    for (const char* type : {"full_attention", "sliding_attention"}) {
      auto rope = c.get_nested_string({"rope_parameters", type, "rope_type"});
      if (rope && *rope != "default")
        c.fail(std::string("rope_parameters.") + type + ".rope_type",
               "\"" + *rope + "\" is not implemented (known: default)");
    }
    global_theta = c.get_nested_double({"rope_parameters", "full_attention", "rope_theta"})
                       .value_or(c.get_double("global_rope_theta", 160000.0));
    local_theta = c.get_nested_double({"rope_parameters", "sliding_attention", "rope_theta"})
                      .value_or(c.get_double("local_rope_theta", 10000.0));
  }
};

// nn.LayerNorm(bias=norm_bias): LibTorch's LayerNorm always has a bias, ModernBERT's usually none.
struct ModernNormImpl : torch::nn::Module {
  ModernNormImpl(int64_t n, double eps, bool bias) : n(n), eps(eps) {
    weight = register_parameter("weight", torch::ones({n}));
    if (bias) this->bias = register_parameter("bias", torch::zeros({n}));
  }
  at::Tensor forward(const at::Tensor& x) { return at::layer_norm(x, {n}, weight, bias, eps); }
  int64_t n;
  double eps;
  at::Tensor weight, bias;
};
TORCH_MODULE(ModernNorm);

at::Tensor rotate_half(const at::Tensor& x) {
  const int64_t h = x.size(-1) / 2;
  return at::cat({-x.slice(-1, h), x.slice(-1, 0, h)}, -1);
}

// cos and sin [1, L, head_dim] for a rotary base (ModernBertRotaryEmbedding, default rope).
std::pair<at::Tensor, at::Tensor> rotary(int64_t length, int64_t dim, double base, const at::Device& device) {
  at::Tensor inv_freq =
      1.0 / at::pow(base, at::arange(0, dim, 2, at::TensorOptions().dtype(at::kLong)).to(at::kFloat) / dim);
  at::Tensor pos = at::arange(length, at::TensorOptions().dtype(at::kLong).device(device)).unsqueeze(0);
  at::Tensor freqs = pos.unsqueeze(-1).to(at::kFloat) * inv_freq.to(device);
  at::Tensor emb = at::cat({freqs, freqs}, -1);
  return {emb.cos(), emb.sin()};
}

struct ModernAttentionImpl : torch::nn::Module {
  explicit ModernAttentionImpl(const ModernConfig& c) : cfg(c) {
    Wqkv = register_module("Wqkv", hf_linear(c.hidden_size, 3 * c.hidden_size, c.attention_bias));
    Wo = register_module("Wo", hf_linear(c.hidden_size, c.hidden_size, c.attention_bias));
  }
  // x [T, hidden]: the real tokens (TokenLayout); the rotary embeddings and the scores on the padded [B, L] layout.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, const at::Tensor& mask,
                     const TokenLayout& layout) {
    const int64_t d = cfg.hidden_size / cfg.num_heads;
    at::Tensor all = layout.unpack(Wqkv(x));
    auto qkv = all.view({all.size(0), all.size(1), 3, -1, d}).unbind(-3);
    at::Tensor q = qkv[0].transpose(1, 2), k = qkv[1].transpose(1, 2), v = qkv[2].transpose(1, 2);
    // apply_rotary_pos_emb: in float32, back to the projections' dtype.
    at::Tensor c = cos.to(x.scalar_type()).unsqueeze(1), s = sin.to(x.scalar_type()).unsqueeze(1);
    const auto dtype = q.scalar_type();
    at::Tensor qf = q.to(at::kFloat), kf = k.to(at::kFloat);
    q = (qf * c + rotate_half(qf) * s).to(dtype);
    k = (kf * c + rotate_half(kf) * s).to(dtype);
    at::Tensor out = layout.pack(hf_eager_attention(q, k, v, mask, cfg.attention_dropout, is_training(), true));
    return hf_dropout(Wo(out), cfg.attention_dropout, is_training());
  }
  ModernConfig cfg;
  torch::nn::Linear Wqkv{nullptr}, Wo{nullptr};
};
TORCH_MODULE(ModernAttention);

struct ModernMlpImpl : torch::nn::Module {
  explicit ModernMlpImpl(const ModernConfig& c) : cfg(c) {
    Wi = register_module("Wi", hf_linear(c.hidden_size, 2 * c.intermediate_size, c.mlp_bias));
    Wo = register_module("Wo", hf_linear(c.intermediate_size, c.hidden_size, c.mlp_bias));
  }
  at::Tensor forward(const at::Tensor& x) {
    auto parts = Wi(x).chunk(2, -1);
    return Wo(hf_dropout(apply_activation(cfg.act, parts[0]) * parts[1], cfg.mlp_dropout, is_training()));
  }
  ModernConfig cfg;
  torch::nn::Linear Wi{nullptr}, Wo{nullptr};
};
TORCH_MODULE(ModernMlp);

struct ModernLayerImpl : torch::nn::Module {
  ModernLayerImpl(const ModernConfig& c, int64_t index) {
    if (index > 0) attn_norm = register_module("attn_norm", ModernNorm(c.hidden_size, c.norm_eps, c.norm_bias));
    attn = register_module("attn", ModernAttention(c));
    mlp_norm = register_module("mlp_norm", ModernNorm(c.hidden_size, c.norm_eps, c.norm_bias));
    mlp = register_module("mlp", ModernMlp(c));
  }
  at::Tensor forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, const at::Tensor& mask,
                     const TokenLayout& layout) {
    at::Tensor h = x + attn(attn_norm ? attn_norm(x) : x, cos, sin, mask, layout);
    return h + mlp(mlp_norm(h));
  }
  ModernNorm attn_norm{nullptr}, mlp_norm{nullptr};
  ModernAttention attn{nullptr};
  ModernMlp mlp{nullptr};
};
TORCH_MODULE(ModernLayer);

struct ModernEmbeddingsImpl : torch::nn::Module {
  explicit ModernEmbeddingsImpl(const ModernConfig& c) : cfg(c) {
    tok_embeddings = register_module("tok_embeddings", hf_embedding(c.vocab_size, c.hidden_size, c.pad_token_id));
    norm = register_module("norm", ModernNorm(c.hidden_size, c.norm_eps, c.norm_bias));
  }
  at::Tensor forward(const at::Tensor& ids) {
    return hf_dropout(norm(tok_embeddings(ids)), cfg.embedding_dropout, is_training());
  }
  ModernConfig cfg;
  torch::nn::Embedding tok_embeddings{nullptr};
  ModernNorm norm{nullptr};
};
TORCH_MODULE(ModernEmbeddings);

class ModernBertEncoder final : public TextEncoder {
 public:
  explicit ModernBertEncoder(const ModernConfig& c)
      : TextEncoder({"modernbert", c.vocab_size, c.hidden_size, c.num_layers, 0, 0, c.pad_token_id}), cfg_(c) {
    embeddings_ = register_module("embeddings", ModernEmbeddings(c));
    auto list = register_module("layers", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.num_layers; ++i) layers_.push_back(ModernLayer(c, i)), list->push_back(layers_.back());
    final_norm_ = register_module("final_norm", ModernNorm(c.hidden_size, c.norm_eps, c.norm_bias));
    add_group("embeddings", {"embeddings"});
    for (int64_t i = 0; i < c.num_layers; ++i) {
      std::vector<std::string> prefixes{"layers." + std::to_string(i)};
      if (i == c.num_layers - 1) prefixes.push_back("final_norm");
      add_group("layer." + std::to_string(i), prefixes);
    }
  }

  std::string word_embeddings_name() const override { return "embeddings.tok_embeddings.weight"; }

  std::vector<at::Tensor> forward(const at::Tensor& ids, const at::Tensor& attention_mask,
                                  const at::Tensor& types) override {
    check_inputs(ids, attention_mask, {});
    const int64_t L = ids.size(1), d = cfg_.hidden_size / cfg_.num_heads;
    at::Tensor padding = attention_mask.defined() ? attention_mask.to(ids.device()) : at::Tensor();
    const TokenLayout layout(padding, ids.size(0), L);
    at::Tensor e = embeddings_(ids);
    const auto dtype = e.scalar_type();
    // Which keys each query sees, as one boolean mask made additive once (transformers' create_bidirectional_mask
    // and its sliding-window form): padding keys never; in local layers only |q - k| <= local_attention / 2.
    at::Tensor keys = padding.defined() ? padding.to(at::kBool).unsqueeze(1).unsqueeze(2)
                                        : at::ones({ids.size(0), 1, 1, L}, ids.options().dtype(at::kBool));
    at::Tensor pos = at::arange(L, ids.options());
    at::Tensor window = (pos.unsqueeze(1) - pos.unsqueeze(0)).abs() <= cfg_.local_attention / 2;
    auto additive = [&](const at::Tensor& keep) {
      return at::where(keep, at::scalar_tensor(0.0, e.options()), at::scalar_tensor(hf_lowest(dtype), e.options()))
          .to(dtype);
    };
    at::Tensor global_mask = padding.defined() ? additive(keys) : at::Tensor();
    at::Tensor local_mask = additive(keys & window.unsqueeze(0).unsqueeze(0));
    const auto global_rope = rotary(L, d, cfg_.global_theta, ids.device());
    const auto local_rope = rotary(L, d, cfg_.local_theta, ids.device());
    return run_packed_layers(
        layout, e, layers_.size(),
        [&](size_t i) -> PackedLayer {
          ModernLayer l = layers_[i];
          const bool g = cfg_.global[i];
          const auto& rope = g ? global_rope : local_rope;
          at::Tensor cos = rope.first, sin = rope.second, mask = g ? global_mask : local_mask;
          return {l.ptr(),
                  [l, cos, sin, mask, layout](const at::Tensor& x) mutable {
                    return l->forward(x, cos, sin, mask, layout);
                  },
                  {}};
        },
        [this](const at::Tensor& x) { return final_norm_(x); });
  }

 private:
  ModernConfig cfg_;
  ModernEmbeddings embeddings_{nullptr};
  std::vector<ModernLayer> layers_;
  ModernNorm final_norm_{nullptr};
};

}  // namespace modernbert_impl

KG_REGISTER_TEXT_FAMILY(TextFamily{"modernbert", "ModernBERT (transformers' ModernBertModel, eager attention)",
                                   [](const HfConfig& c) -> TextEncoderPtr {
                                     return std::make_shared<modernbert_impl::ModernBertEncoder>(
                                         modernbert_impl::ModernConfig(c));
                                   }});

}  // namespace kg::model::text
