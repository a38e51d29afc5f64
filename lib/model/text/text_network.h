// Text models: a Hugging Face encoder (model/text/encoder.h) as a Network's backbone, its tokens pooled into one
// vector per sample for kgtrain's head (numeric features, head_hidden, drop_rate, classifier) -- Kaggle's NLP
// recipe of AutoModel + MeanPooling/AttentionPooling + a linear layer. One model family per encoder family, under
// config.json's model_type: model.name = "deberta-v2" with model.pretrained = the model's folder.
//
// Names: the encoder's parameters under "backbone." (backbone.embeddings.word_embeddings.weight,
// backbone.encoder.layer.0.attention.self.query_proj.weight, ...), the pooling and the classifier under "head."
// (head.attention_pool.0.dense.weight, head.fc.weight), then the head's feature_bn / feature_mlp / head_hidden.
// Layer groups: the encoder's ("embeddings", "layer.0", ...; BERT's pooler, which forward() never runs, joins the
// last layer so that layer-wise lr decay counts layers), then "head": the attention pooling is new and trains
// with the classifier from the first step, never frozen with the backbone.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "model/model.h"
#include "model/text/encoder.h"

namespace kg::model {

// Keys of [model] for a text family; each field's doc is in text_network_fields() (text_network.cpp) and
// docs/reference.md.
struct TextNetworkOptions {
  std::string pooling = "mean";  // mean | cls | attention
  int64_t pool_layers = 1;       // the last k hidden states, each pooled, concatenated (last layer first)
  int64_t reinit_layers = 0;     // the top k encoder layers re-initialised after loading (model/text/reinit.h)
};

// Kaggle's AttentionPooling over tokens: score = Linear(H, 1)(tanh(Linear(H, H)(h))), softmax over the sample's
// tokens (padding gets weight 0), the weighted sum of h.
struct TextAttentionPoolImpl : torch::nn::Module {
  explicit TextAttentionPoolImpl(int64_t hidden);
  // [N, L, H] + mask [N, L] (1 token, 0 padding; undefined: every token) -> [N, H] in h's dtype.
  at::Tensor forward(const at::Tensor& h, const at::Tensor& mask);
  // The softmax weights [N, L], float32.
  at::Tensor weights(const at::Tensor& h, const at::Tensor& mask);
  torch::nn::Linear dense{nullptr}, score{nullptr};
};
TORCH_MODULE(TextAttentionPool);

class TextNetwork final : public Network {
 public:
  // Around `encoder` (built and loaded by the caller: the model families load model.pretrained, the folder). The
  // recipe's text length ctx.seq_len (data.max_length) must be positive and within the encoder's positions;
  // model.global_pool must be "" (the tokens are pooled by `pooling`).
  TextNetwork(text::TextEncoderPtr encoder, const TextNetworkOptions& o, const ModelContext& ctx);

  // The encoder on in.ids / in.mask / in.type_ids, pooled: [N, hidden * pool_layers].
  at::Tensor forward_backbone(const Inputs& in) override;
  // A ConfigError: a text model takes token ids, not images.
  at::Tensor forward_features(const at::Tensor& x) override;
  // The pooled features of the encoder's hidden states (num_layers + 1 of [N, L, hidden]) under `mask`.
  at::Tensor pool_hidden(const std::vector<at::Tensor>& hidden, const at::Tensor& mask);

  text::TextEncoder& encoder() { return *encoder_; }
  const text::TextEncoder& encoder() const { return *encoder_; }
  const TextNetworkOptions& options() const { return opts_; }
  // The attention pooling of the i-th pooled layer (0: the last); only with pooling = "attention".
  TextAttentionPool attention_pool(size_t i) const { return attention_.at(i); }

 private:
  void add_encoder_groups();
  text::TextEncoderPtr encoder_;
  std::shared_ptr<torch::nn::Module> head_;  // "head": the attention pooling and the classifier fc
  std::vector<TextAttentionPool> attention_;
  TextNetworkOptions opts_;
};

// MeanPooling as Kaggle's NLP solutions write it: sum(h * m) / clamp(sum(m), 1e-9) over the tokens with mask 1
// (undefined mask: every token), computed in float32, returned in h's dtype. [N, L, H] -> [N, H].
at::Tensor masked_mean_pool(const at::Tensor& h, const at::Tensor& mask);

// The layer groups of `enc` under `prefix` ("backbone."), by exact parameter name: its own groups, with any group after
// the layers (BERT's pooler, which the networks do not run) joined to the last layer, so that layer-wise lr decay
// counts layers.
std::vector<std::pair<std::string, std::vector<std::string>>> encoder_group_names(const text::TextEncoder& enc,
                                                                                  const std::string& prefix);

// The encoder of a text model; nullptr for an image network.
const text::TextEncoder* text_encoder_of(const Network& net);
// The text families' model.name values, sorted: config.json's model_type of each text encoder family.
const std::vector<std::string>& text_model_names();
bool is_text_model(const std::string& model_name);

}  // namespace kg::model
