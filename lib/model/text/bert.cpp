// BERT (Devlin et al. 2018) and the encoders with its layout, transformers' BertModel, RobertaModel,
// XLMRobertaModel and ElectraModel: the same layers (attention.self.query/key/value, attention.output, intermediate,
// output) under embeddings that differ. RoBERTa and XLM-R number positions from padding_idx + 1 and skip padding
// tokens (create_position_ids_from_input_ids); ELECTRA's embeddings may be narrower than its layers
// (embedding_size, then embeddings_project); BERT and RoBERTa carry a pooler (dense + tanh over the first token)
// that forward() does not run: pooled() does.
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/torch.h>

#include "core/error.h"
#include "model/text/encoder.h"
#include "model/text/text_layers.h"

namespace kg::model::text {
namespace bert_impl {

enum class BertKind { kBert, kRoberta, kElectra };

struct BertConfig {
  BertKind kind;
  std::string model_type;
  int64_t vocab_size, hidden_size, num_layers, num_heads, intermediate_size, embedding_size;
  int64_t max_position_embeddings, type_vocab_size, pad_token_id;
  HfActivation act;
  double hidden_dropout, attention_dropout, eps;

  BertConfig(const HfConfig& c, BertKind k) : kind(k), model_type(c.model_type()) {
    vocab_size = c.get_int("vocab_size");
    hidden_size = c.get_int("hidden_size", 768);
    num_layers = c.get_int("num_hidden_layers", 12);
    num_heads = c.get_int("num_attention_heads", 12);
    if (num_heads <= 0 || hidden_size % num_heads != 0)
      c.fail("num_attention_heads",
             std::to_string(num_heads) + " does not divide hidden_size " + std::to_string(hidden_size));
    intermediate_size = c.get_int("intermediate_size", 3072);
    embedding_size = k == BertKind::kElectra ? c.get_int("embedding_size", 128) : hidden_size;
    max_position_embeddings = c.get_int("max_position_embeddings", 512);
    type_vocab_size = c.get_int("type_vocab_size", 2);
    pad_token_id = c.get_int("pad_token_id", k == BertKind::kRoberta ? 1 : 0);
    act = read_activation(c, "hidden_act", "gelu");
    hidden_dropout = c.get_double("hidden_dropout_prob", 0.1);
    attention_dropout = c.get_double("attention_probs_dropout_prob", 0.1);
    eps = c.get_double("layer_norm_eps", 1e-12);
    c.get_choice("position_embedding_type", {"absolute"}, "absolute");
    if (c.get_bool("is_decoder", false)) c.fail("is_decoder", "true: kgtrain builds encoders only");
  }
};

struct BertSelfAttentionImpl : torch::nn::Module {
  explicit BertSelfAttentionImpl(const BertConfig& c) : cfg(c) {
    query = register_module("query", hf_linear(c.hidden_size, c.hidden_size));
    key = register_module("key", hf_linear(c.hidden_size, c.hidden_size));
    value = register_module("value", hf_linear(c.hidden_size, c.hidden_size));
  }
  // x [T, hidden]: the real tokens (TokenLayout); the scores on the padded [B, L] layout.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& additive_mask, const TokenLayout& layout) {
    const int64_t d = cfg.hidden_size / cfg.num_heads;
    auto heads = [&](const at::Tensor& t) { return hf_split_heads(layout.unpack(t), d); };
    return layout.pack(hf_eager_attention(heads(query(x)), heads(key(x)), heads(value(x)), additive_mask,
                                          cfg.attention_dropout, is_training()));
  }
  BertConfig cfg;
  torch::nn::Linear query{nullptr}, key{nullptr}, value{nullptr};
};
TORCH_MODULE(BertSelfAttention);

struct BertAttentionImpl : torch::nn::Module {
  explicit BertAttentionImpl(const BertConfig& c) {
    self = register_module("self", BertSelfAttention(c));
    output = register_module("output", HfDenseNorm(c.hidden_size, c.hidden_size, c.eps, c.hidden_dropout));
  }
  BertSelfAttention self{nullptr};
  HfDenseNorm output{nullptr};
};
TORCH_MODULE(BertAttention);

struct BertLayerImpl : torch::nn::Module {
  explicit BertLayerImpl(const BertConfig& c) {
    attention = register_module("attention", BertAttention(c));
    intermediate = register_module("intermediate", HfIntermediate(c.hidden_size, c.intermediate_size, c.act));
    output = register_module("output", HfDenseNorm(c.intermediate_size, c.hidden_size, c.eps, c.hidden_dropout));
  }
  at::Tensor forward(const at::Tensor& x, const at::Tensor& additive_mask, const TokenLayout& layout) {
    at::Tensor a = attention->output(attention->self(x, additive_mask, layout), x);
    return output(intermediate(a), a);
  }
  BertAttention attention{nullptr};
  HfIntermediate intermediate{nullptr};
  HfDenseNorm output{nullptr};
};
TORCH_MODULE(BertLayer);

struct BertEmbeddingsImpl : torch::nn::Module {
  explicit BertEmbeddingsImpl(const BertConfig& c) : cfg(c) {
    word_embeddings = register_module("word_embeddings", hf_embedding(c.vocab_size, c.embedding_size, c.pad_token_id));
    // RoBERTa's position embeddings have a padding row too (no gradient), the padding tokens' position.
    position_embeddings = register_module(
        "position_embeddings",
        hf_embedding(c.max_position_embeddings, c.embedding_size,
                     c.kind == BertKind::kRoberta ? std::optional<int64_t>(c.pad_token_id) : std::nullopt));
    token_type_embeddings = register_module("token_type_embeddings", hf_embedding(c.type_vocab_size, c.embedding_size));
    LayerNorm = register_module("LayerNorm", hf_layer_norm(c.embedding_size, c.eps));
  }
  at::Tensor positions(const at::Tensor& ids) const {
    if (cfg.kind != BertKind::kRoberta) return at::arange(ids.size(1), ids.options()).unsqueeze(0);
    at::Tensor m = ids.ne(cfg.pad_token_id).to(at::kInt);
    return (at::cumsum(m, 1).to(at::kInt) * m).to(at::kLong) + cfg.pad_token_id;
  }
  at::Tensor forward(const at::Tensor& ids, const at::Tensor& types) {
    at::Tensor e = word_embeddings(ids) + token_type_embeddings(types.defined() ? types : at::zeros_like(ids));
    e = e + position_embeddings(positions(ids));
    return hf_dropout(LayerNorm(e), cfg.hidden_dropout, is_training());
  }
  BertConfig cfg;
  torch::nn::Embedding word_embeddings{nullptr}, position_embeddings{nullptr}, token_type_embeddings{nullptr};
  torch::nn::LayerNorm LayerNorm{nullptr};
};
TORCH_MODULE(BertEmbeddings);

struct BertPoolerImpl : torch::nn::Module {
  explicit BertPoolerImpl(int64_t hidden) { dense = register_module("dense", hf_linear(hidden, hidden)); }
  torch::nn::Linear dense{nullptr};
};
TORCH_MODULE(BertPooler);

class BertFamilyEncoder final : public TextEncoder {
 public:
  explicit BertFamilyEncoder(const BertConfig& c)
      : TextEncoder(
            {c.model_type, c.vocab_size, c.hidden_size, c.num_layers,
             c.kind == BertKind::kRoberta ? c.max_position_embeddings - c.pad_token_id - 1 : c.max_position_embeddings,
             c.type_vocab_size, c.pad_token_id}),
        cfg_(c) {
    embeddings_ = register_module("embeddings", BertEmbeddings(c));
    if (c.embedding_size != c.hidden_size)
      embeddings_project_ = register_module("embeddings_project", hf_linear(c.embedding_size, c.hidden_size));
    auto encoder = register_module("encoder", std::make_shared<torch::nn::Module>());
    auto list = encoder->register_module("layer", torch::nn::ModuleList());
    for (int64_t i = 0; i < c.num_layers; ++i) layers_.push_back(BertLayer(c)), list->push_back(layers_.back());
    if (c.kind != BertKind::kElectra) pooler_ = register_module("pooler", BertPooler(c.hidden_size));
    add_group("embeddings", {"embeddings", "embeddings_project"});
    for (int64_t i = 0; i < c.num_layers; ++i)
      add_group("layer." + std::to_string(i), {"encoder.layer." + std::to_string(i)});
    if (pooler_) add_group("pooler", {"pooler"});
  }

  std::vector<at::Tensor> forward(const at::Tensor& ids, const at::Tensor& attention_mask,
                                  const at::Tensor& types) override {
    check_inputs(ids, attention_mask, types);
    at::Tensor mask = attention_mask.defined() ? attention_mask.to(ids.device()) : at::Tensor();
    const TokenLayout layout(mask, ids.size(0), ids.size(1));
    at::Tensor e = embeddings_(ids, types);
    if (embeddings_project_) e = embeddings_project_(e);
    at::Tensor add_mask = mask.defined() ? hf_additive_mask(mask, e.scalar_type()) : at::Tensor();
    return run_packed_layers(layout, e, layers_.size(), [&](size_t i) -> PackedLayer {
      BertLayer l = layers_[i];
      return {
          l.ptr(), [l, add_mask, layout](const at::Tensor& t) mutable { return l->forward(t, add_mask, layout); }, {}};
    });
  }

  at::Tensor pooled(const at::Tensor& last_hidden) override {
    if (!pooler_) return {};
    return at::tanh(pooler_->dense(last_hidden.select(1, 0)));
  }

 private:
  BertConfig cfg_;
  BertEmbeddings embeddings_{nullptr};
  torch::nn::Linear embeddings_project_{nullptr};
  std::vector<BertLayer> layers_;
  BertPooler pooler_{nullptr};
};

TextEncoderPtr make_bert_family(const HfConfig& cfg, BertKind kind) {
  return std::make_shared<BertFamilyEncoder>(BertConfig(cfg, kind));
}

}  // namespace bert_impl

KG_REGISTER_TEXT_FAMILY(TextFamily{"bert", "BERT (transformers' BertModel)", [](const HfConfig& c) {
                                     return bert_impl::make_bert_family(c, bert_impl::BertKind::kBert);
                                   }});
KG_REGISTER_TEXT_FAMILY(TextFamily{"roberta", "RoBERTa (transformers' RobertaModel)", [](const HfConfig& c) {
                                     return bert_impl::make_bert_family(c, bert_impl::BertKind::kRoberta);
                                   }});
KG_REGISTER_TEXT_FAMILY(TextFamily{"xlm-roberta", "XLM-RoBERTa (transformers' XLMRobertaModel)", [](const HfConfig& c) {
                                     return bert_impl::make_bert_family(c, bert_impl::BertKind::kRoberta);
                                   }});
KG_REGISTER_TEXT_FAMILY(TextFamily{
    "electra", "ELECTRA discriminator (transformers' ElectraModel)",
    [](const HfConfig& c) { return bert_impl::make_bert_family(c, bert_impl::BertKind::kElectra); }});

}  // namespace kg::model::text
