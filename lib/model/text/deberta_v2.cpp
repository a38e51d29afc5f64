#include "model/text/deberta_v2.h"

#include <limits>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/torch.h>

#include "core/error.h"
#include "model/text/encoder.h"
#include "model/text/text_layers.h"

namespace kg::model::text {

at::Tensor deberta_relative_positions(int64_t q_len, int64_t k_len, int64_t bucket_size, int64_t max_position,
                                      const at::Device& device) {
  auto opts = at::TensorOptions().dtype(at::kLong).device(device);
  at::Tensor rel = at::arange(q_len, opts).unsqueeze(1) - at::arange(k_len, opts).unsqueeze(0);
  if (bucket_size > 0 && max_position > 0) {
    // make_log_bucket_position, op for op: |r| < mid stays linear, beyond it log-spaced up to max_position.
    const int64_t mid = bucket_size / 2;
    at::Tensor sign = at::sign(rel);
    at::Tensor abs_pos = at::where((rel < mid) & (rel > -mid), at::scalar_tensor(mid - 1, opts), at::abs(rel));
    at::Tensor denom = at::log(at::scalar_tensor(static_cast<double>(max_position - 1) / mid, at::kFloat));
    at::Tensor log_pos = at::ceil(at::log(abs_pos / mid) / denom.to(device) * (mid - 1)) + mid;
    rel = at::where(abs_pos <= mid, rel.to(log_pos.scalar_type()), log_pos * sign);
  }
  return rel.to(at::kLong).unsqueeze(0);
}

namespace deberta_impl {

struct DebertaConfig {
  int64_t vocab_size, hidden_size, num_layers, num_heads, head_size, intermediate_size, embedding_size;
  int64_t max_position_embeddings, type_vocab_size, pad_token_id;
  HfActivation act;
  double hidden_dropout, attention_dropout, eps;
  bool relative_attention, position_biased_input, share_att_key, c2p, p2c, norm_rel_ebd;
  int64_t max_relative_positions, position_buckets, pos_ebd_size;
  int64_t conv_kernel_size, conv_groups;
  HfActivation conv_act;

  explicit DebertaConfig(const HfConfig& c) {
    vocab_size = c.get_int("vocab_size", 128100);
    hidden_size = c.get_int("hidden_size", 1536);
    num_layers = c.get_int("num_hidden_layers", 24);
    num_heads = c.get_int("num_attention_heads", 24);
    if (num_heads <= 0 || hidden_size % num_heads != 0)
      c.fail("num_attention_heads",
             std::to_string(num_heads) + " does not divide hidden_size " + std::to_string(hidden_size));
    head_size = c.get_int("attention_head_size", hidden_size / num_heads);
    intermediate_size = c.get_int("intermediate_size", 6144);
    embedding_size = c.get_int("embedding_size", hidden_size);
    max_position_embeddings = c.get_int("max_position_embeddings", 512);
    type_vocab_size = c.get_int("type_vocab_size", 0);
    pad_token_id = c.get_int("pad_token_id", 0);
    act = read_activation(c, "hidden_act", "gelu");
    hidden_dropout = c.get_double("hidden_dropout_prob", 0.1);
    attention_dropout = c.get_double("attention_probs_dropout_prob", 0.1);
    eps = c.get_double("layer_norm_eps", 1e-7);
    relative_attention = c.get_bool("relative_attention", false);
    position_biased_input = c.get_bool("position_biased_input", true);
    share_att_key = c.get_bool("share_att_key", false);
    c2p = p2c = false;
    for (const auto& t : c.get_strings("pos_att_type")) {
      if (t == "c2p")
        c2p = true;
      else if (t == "p2c")
        p2c = true;
      else
        c.fail("pos_att_type", "entry \"" + t + "\" is not implemented in kgtrain (known: c2p, p2c)");
    }
    bool ln = false;
    for (const auto& t : c.get_strings("norm_rel_ebd", {"none"})) {
      if (t == "layer_norm")
        ln = true;
      else if (t != "none")
        c.fail("norm_rel_ebd", "entry \"" + t + "\" is not implemented in kgtrain (known: none, layer_norm)");
    }
    norm_rel_ebd = ln;
    max_relative_positions = c.get_int("max_relative_positions", -1);
    if (max_relative_positions < 1) max_relative_positions = max_position_embeddings;
    position_buckets = c.get_int("position_buckets", -1);
    pos_ebd_size = position_buckets > 0 ? position_buckets : max_relative_positions;
    conv_kernel_size = c.get_int("conv_kernel_size", 0);
    conv_groups = c.get_int("conv_groups", 1);
    conv_act = read_activation(c, "conv_act", "tanh");
    if (c.get_int("z_steps", 0) > 1)
      c.fail("z_steps", "> 1 (the enhanced mask decoder's extra steps) is not implemented");
  }
};

// [B, L, H*d] -> [B*H, L, d] (transformers' transpose_for_scores).
at::Tensor to_heads(const at::Tensor& x, int64_t heads) {
  at::Tensor v = x.view({x.size(0), x.size(1), heads, -1});
  return v.permute({0, 2, 1, 3}).contiguous().view({-1, v.size(1), v.size(-1)});
}

// sqrt(d * scale_factor) as a float32 scalar tensor, as transformers computes it (scaled_size_sqrt).
at::Tensor scaled_sqrt(int64_t d, int64_t factor) {
  return at::sqrt(at::scalar_tensor(static_cast<double>(d), at::kFloat) * factor);
}

struct DisentangledAttentionImpl : torch::nn::Module {
  explicit DisentangledAttentionImpl(const DebertaConfig& c) : cfg(c) {
    const int64_t all = c.num_heads * c.head_size;
    query_proj = register_module("query_proj", hf_linear(c.hidden_size, all));
    key_proj = register_module("key_proj", hf_linear(c.hidden_size, all));
    value_proj = register_module("value_proj", hf_linear(c.hidden_size, all));
    if (c.relative_attention && !c.share_att_key) {
      if (c.c2p) pos_key_proj = register_module("pos_key_proj", hf_linear(c.hidden_size, all));
      if (c.p2c) pos_query_proj = register_module("pos_query_proj", hf_linear(c.hidden_size, all));
    }
  }

  // x [T, hidden]: the real tokens (TokenLayout); mask [B, 1, L, L] bool; rel_pos [1, L, L]; rel [2 * span (or more),
  // hidden]. Returns [T, heads * head_size]; the scores are computed on the padded [B, L] layout.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& mask, const at::Tensor& rel_pos, const at::Tensor& rel,
                     const TokenLayout& layout) {
    const int64_t H = cfg.num_heads;
    auto heads = [&](const at::Tensor& t) { return to_heads(layout.unpack(t), H); };
    at::Tensor q = heads(query_proj(x)), k = heads(key_proj(x)), v = heads(value_proj(x));
    const int64_t factor = 1 + int64_t(cfg.c2p) + int64_t(cfg.p2c);
    at::Tensor scores = at::bmm(q, k.transpose(-1, -2) / scaled_sqrt(q.size(-1), factor).to(q.scalar_type()));
    if (cfg.relative_attention)
      scores = scores + bias(q, k, rel_pos, hf_dropout(rel, cfg.hidden_dropout, is_training()), factor);
    const int64_t L = scores.size(-1);
    scores = scores.view({-1, H, scores.size(-2), L});
    scores = scores.masked_fill(mask.logical_not(), hf_lowest(q.scalar_type()));
    at::Tensor probs = hf_dropout(at::softmax(scores, -1), cfg.attention_dropout, is_training());
    at::Tensor ctx = at::bmm(probs.view({-1, probs.size(-2), L}), v);
    ctx = ctx.view({-1, H, ctx.size(-2), ctx.size(-1)}).permute({0, 2, 1, 3}).contiguous();
    return layout.pack(ctx.view({ctx.size(0), ctx.size(1), -1}));
  }

  // The c2p and p2c terms (disentangled_attention_bias) for equal query and key lengths.
  at::Tensor bias(const at::Tensor& q, const at::Tensor& k, const at::Tensor& rel_pos, const at::Tensor& rel_all,
                  int64_t factor) {
    const int64_t H = cfg.num_heads, span = cfg.pos_ebd_size, reps = q.size(0) / H;
    at::Tensor rel = rel_all.slice(0, 0, span * 2).unsqueeze(0);
    at::Tensor pos = rel_pos.to(at::kLong);
    at::Tensor score;
    if (cfg.c2p) {
      at::Tensor pos_k = to_heads((cfg.share_att_key ? key_proj : pos_key_proj)(rel), H).repeat({reps, 1, 1});
      at::Tensor att = at::bmm(q, pos_k.transpose(-1, -2));
      at::Tensor idx = at::clamp(pos + span, 0, span * 2 - 1);
      att = at::gather(att, -1, idx.squeeze(0).expand({q.size(0), q.size(1), pos.size(-1)}));
      score = att / scaled_sqrt(pos_k.size(-1), factor).to(att.scalar_type());
    }
    if (cfg.p2c) {
      at::Tensor pos_q = to_heads((cfg.share_att_key ? query_proj : pos_query_proj)(rel), H).repeat({reps, 1, 1});
      at::Tensor idx = at::clamp(-pos + span, 0, span * 2 - 1);
      at::Tensor att = at::bmm(k, pos_q.transpose(-1, -2));
      att = at::gather(att, -1, idx.squeeze(0).expand({q.size(0), k.size(-2), k.size(-2)})).transpose(-1, -2);
      at::Tensor term = att / scaled_sqrt(pos_q.size(-1), factor).to(att.scalar_type());
      score = score.defined() ? score + term : term;
    }
    return score.defined() ? score : at::zeros({}, q.options());
  }

  DebertaConfig cfg;
  torch::nn::Linear query_proj{nullptr}, key_proj{nullptr}, value_proj{nullptr};
  torch::nn::Linear pos_key_proj{nullptr}, pos_query_proj{nullptr};
};
TORCH_MODULE(DisentangledAttention);

struct DebertaAttentionImpl : torch::nn::Module {
  explicit DebertaAttentionImpl(const DebertaConfig& c) {
    self = register_module("self", DisentangledAttention(c));
    output = register_module("output", HfDenseNorm(c.num_heads * c.head_size, c.hidden_size, c.eps, c.hidden_dropout));
  }
  DisentangledAttention self{nullptr};
  HfDenseNorm output{nullptr};
};
TORCH_MODULE(DebertaAttention);

struct DebertaLayerImpl : torch::nn::Module {
  explicit DebertaLayerImpl(const DebertaConfig& c) {
    attention = register_module("attention", DebertaAttention(c));
    intermediate = register_module("intermediate", HfIntermediate(c.hidden_size, c.intermediate_size, c.act));
    output = register_module("output", HfDenseNorm(c.intermediate_size, c.hidden_size, c.eps, c.hidden_dropout));
  }
  at::Tensor forward(const at::Tensor& x, const at::Tensor& mask, const at::Tensor& rel_pos, const at::Tensor& rel,
                     const TokenLayout& layout) {
    at::Tensor a = attention->output(attention->self(x, mask, rel_pos, rel, layout), x);
    return output(intermediate(a), a);
  }
  DebertaAttention attention{nullptr};
  HfIntermediate intermediate{nullptr};
  HfDenseNorm output{nullptr};
};
TORCH_MODULE(DebertaLayer);

struct DebertaEmbeddingsImpl : torch::nn::Module {
  explicit DebertaEmbeddingsImpl(const DebertaConfig& c) : cfg(c) {
    word_embeddings = register_module("word_embeddings", hf_embedding(c.vocab_size, c.embedding_size, c.pad_token_id));
    if (c.position_biased_input)
      position_embeddings =
          register_module("position_embeddings", hf_embedding(c.max_position_embeddings, c.embedding_size));
    if (c.type_vocab_size > 0)
      token_type_embeddings =
          register_module("token_type_embeddings", hf_embedding(c.type_vocab_size, c.embedding_size));
    if (c.embedding_size != c.hidden_size)
      embed_proj = register_module("embed_proj", hf_linear(c.embedding_size, c.hidden_size, false));
    LayerNorm = register_module("LayerNorm", hf_layer_norm(c.hidden_size, c.eps));
  }
  at::Tensor forward(const at::Tensor& ids, const at::Tensor& types, const at::Tensor& mask) {
    at::Tensor e = word_embeddings(ids);
    if (position_embeddings) e = e + position_embeddings(at::arange(ids.size(1), ids.options()).unsqueeze(0));
    if (token_type_embeddings) e = e + token_type_embeddings(types.defined() ? types : at::zeros_like(ids));
    if (embed_proj) e = embed_proj(e);
    e = LayerNorm(e) * mask.unsqueeze(2).to(e.scalar_type());
    return hf_dropout(e, cfg.hidden_dropout, is_training());
  }
  DebertaConfig cfg;
  torch::nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr}, token_type_embeddings{nullptr};
  torch::nn::Linear embed_proj{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
};
TORCH_MODULE(DebertaEmbeddings);

// DeBERTa-v2's ConvLayer after the first layer (deberta-v2-xlarge; v3 has none).
struct DebertaConvImpl : torch::nn::Module {
  explicit DebertaConvImpl(const DebertaConfig& c) : cfg(c) {
    conv = register_module("conv",
                           torch::nn::Conv1d(torch::nn::Conv1dOptions(c.hidden_size, c.hidden_size, c.conv_kernel_size)
                                                 .padding((c.conv_kernel_size - 1) / 2)
                                                 .groups(c.conv_groups)));
    LayerNorm = register_module("LayerNorm", hf_layer_norm(c.hidden_size, c.eps));
  }
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& residual, const at::Tensor& mask) {
    at::Tensor out = conv(hidden.permute({0, 2, 1}).contiguous()).permute({0, 2, 1}).contiguous();
    out = out.masked_fill((1 - mask).to(at::kBool).unsqueeze(-1).expand(out.sizes()), 0);
    out = apply_activation(cfg.conv_act, hf_dropout(out, cfg.hidden_dropout, is_training()));
    return LayerNorm(residual + out) * mask.unsqueeze(2).to(out.scalar_type());
  }
  DebertaConfig cfg;
  torch::nn::Conv1d conv{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
};
TORCH_MODULE(DebertaConv);

struct DebertaEncoderImpl : torch::nn::Module {
  explicit DebertaEncoderImpl(const DebertaConfig& c) {
    layer = register_module("layer", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.num_layers; ++i) layers.push_back(DebertaLayer(c)), layer->push_back(layers.back());
    if (c.relative_attention)
      rel_embeddings = register_module("rel_embeddings", hf_embedding(c.pos_ebd_size * 2, c.hidden_size));
    if (c.norm_rel_ebd) LayerNorm = register_module("LayerNorm", hf_layer_norm(c.hidden_size, c.eps));
    if (c.conv_kernel_size > 0) conv = register_module("conv", DebertaConv(c));
  }
  // get_rel_embedding: the relative embeddings, LayerNorm'd with norm_rel_ebd = "layer_norm".
  at::Tensor rel_embedding() {
    if (!rel_embeddings) return {};
    return LayerNorm ? LayerNorm(rel_embeddings->weight) : rel_embeddings->weight;
  }
  torch::nn::ModuleList layer{nullptr};
  std::vector<DebertaLayer> layers;
  torch::nn::Embedding rel_embeddings{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
  DebertaConv conv{nullptr};
};
TORCH_MODULE(DebertaEncoder);

// A layer with what it shares with the others (the relative embeddings and their LayerNorm): the unit a
// checkpointed layer recomputes, so that those shared parameters get their gradients through every layer.
struct DebertaStage : torch::nn::Module {
  DebertaStage(DebertaLayer l, DebertaEncoder enc) : layer(l), encoder(enc) {
    register_module("layer", l);
    if (enc->rel_embeddings) register_module("rel_embeddings", enc->rel_embeddings);
    if (enc->LayerNorm) register_module("LayerNorm", enc->LayerNorm);
  }
  DebertaLayer layer;
  DebertaEncoder encoder;
};

class DebertaV2Encoder final : public TextEncoder {
 public:
  explicit DebertaV2Encoder(const DebertaConfig& c)
      : TextEncoder({"deberta-v2", c.vocab_size, c.hidden_size, c.num_layers,
                     c.position_biased_input ? c.max_position_embeddings : 0, c.type_vocab_size, c.pad_token_id}),
        cfg_(c) {
    embeddings_ = register_module("embeddings", DebertaEmbeddings(c));
    encoder_ = register_module("encoder", DebertaEncoder(c));
    for (auto& l : encoder_->layers) stages_.push_back(std::make_shared<DebertaStage>(l, encoder_));
    add_group("embeddings", {"embeddings", "encoder.rel_embeddings", "encoder.LayerNorm", "encoder.conv"});
    for (int64_t i = 0; i < c.num_layers; ++i)
      add_group("layer." + std::to_string(i), {"encoder.layer." + std::to_string(i)});
  }

  std::vector<at::Tensor> forward(const at::Tensor& ids, const at::Tensor& attention_mask,
                                  const at::Tensor& types) override {
    check_inputs(ids, attention_mask, types);
    at::Tensor mask = mask_or_ones(ids, attention_mask);
    const TokenLayout layout(attention_mask.defined() ? mask : at::Tensor(), ids.size(0), ids.size(1));
    at::Tensor m = mask.unsqueeze(1).unsqueeze(2);                      // [B, 1, 1, L]
    at::Tensor pair = (m * m.squeeze(-2).unsqueeze(-1)).to(at::kBool);  // [B, 1, L, L]: both tokens real
    at::Tensor rel_pos;
    if (cfg_.relative_attention)
      rel_pos = deberta_relative_positions(ids.size(1), ids.size(1), cfg_.position_buckets, cfg_.max_relative_positions,
                                           ids.device());
    const bool recompute = grad_checkpointing() && is_training() && at::GradMode::is_enabled();
    at::Tensor rel = recompute ? at::Tensor() : encoder_->rel_embedding();
    return run_packed_layers(layout, embeddings_(ids, types, mask), stages_.size(), [&](size_t i) {
      auto stage = stages_[i];
      PackedLayer l{stage,
                    [stage, pair, rel_pos, rel, layout](const at::Tensor& t) {
                      at::Tensor r =
                          rel.defined() || !stage->encoder->rel_embeddings ? rel : stage->encoder->rel_embedding();
                      return stage->layer->forward(t, pair, rel_pos, r, layout);
                    },
                    {}};
      if (i == 0 && encoder_->conv)
        l.post = [conv = encoder_->conv, mask, layout](const at::Tensor& input, const at::Tensor& out) mutable {
          return layout.pack(conv(input, layout.unpack(out), mask));
        };
      return l;
    });
  }

 private:
  DebertaConfig cfg_;
  DebertaEmbeddings embeddings_{nullptr};
  DebertaEncoder encoder_{nullptr};
  std::vector<std::shared_ptr<DebertaStage>> stages_;
};

}  // namespace deberta_impl

KG_REGISTER_TEXT_FAMILY(TextFamily{
    "deberta-v2",
    "DeBERTa-v2/v3 (transformers' DebertaV2Model): disentangled attention, log-bucketed relative positions",
    [](const HfConfig& cfg) -> TextEncoderPtr {
      return std::make_shared<deberta_impl::DebertaV2Encoder>(deberta_impl::DebertaConfig(cfg));
    }});

}  // namespace kg::model::text
