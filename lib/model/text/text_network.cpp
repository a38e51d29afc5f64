#include "model/text/text_network.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <utility>

#include <ATen/ATen.h>
#include <torch/torch.h>

#include "core/error.h"
#include "core/strings.h"
#include "model/text/hf_config.h"
#include "model/text/reinit.h"

namespace kg::model {

TextAttentionPoolImpl::TextAttentionPoolImpl(int64_t hidden) {
  dense = register_module("dense", torch::nn::Linear(hidden, hidden));
  score = register_module("score", torch::nn::Linear(hidden, 1));
}

at::Tensor TextAttentionPoolImpl::weights(const at::Tensor& h, const at::Tensor& mask) {
  // In float32, with padding at float's lowest (not -inf: a sample of padding only gets even weights, not NaN),
  // whatever dtype autocast gives the scores.
  at::Tensor s = score(at::tanh(dense(h))).squeeze(-1).to(at::kFloat);
  if (mask.defined()) s = s.masked_fill(mask.eq(0), std::numeric_limits<float>::lowest());
  return at::softmax(s, 1);
}

at::Tensor TextAttentionPoolImpl::forward(const at::Tensor& h, const at::Tensor& mask) {
  return (weights(h, mask).unsqueeze(-1) * h.to(at::kFloat)).sum(1).to(h.scalar_type());
}

at::Tensor masked_mean_pool(const at::Tensor& h, const at::Tensor& mask) {
  if (!mask.defined()) return h.to(at::kFloat).mean(1).to(h.scalar_type());
  at::Tensor m = mask.to(at::kFloat).unsqueeze(-1);  // [N, L, 1]
  return ((h.to(at::kFloat) * m).sum(1) / m.sum(1).clamp_min(1e-9)).to(h.scalar_type());
}

namespace text_network_impl {

const std::vector<std::string>& pooling_names() {
  static const std::vector<std::string> names{"mean", "cls", "attention"};
  return names;
}

}  // namespace text_network_impl

TextNetwork::TextNetwork(text::TextEncoderPtr encoder, const TextNetworkOptions& o, const ModelContext& ctx)
    : encoder_(std::move(encoder)), opts_(o) {
  KG_ASSERT(encoder_, "a text network without an encoder");
  const auto& shape = encoder_->shape();
  const std::string& name = shape.model_type;
  KG_CHECK(ctx.seq_len > 0, ConfigError, "model.name = \"", name,
           "\" is a text model: it takes token ids, not images; set data.text_cols (and data.max_length)");
  KG_CHECK(shape.max_positions <= 0 || ctx.seq_len <= shape.max_positions, ConfigError,
           "data.max_length = ", ctx.seq_len, " is longer than the ", name, " encoder's ", shape.max_positions,
           " positions (its config.json max_position_embeddings): set data.max_length to at most ",
           shape.max_positions);
  const auto& pools = text_network_impl::pooling_names();
  KG_CHECK(std::find(pools.begin(), pools.end(), o.pooling) != pools.end(), ConfigError, "model.pooling: \"", o.pooling,
           "\" is not a text pooling (known: ", join(pools, ", "), ")");
  KG_CHECK(o.pool_layers >= 1 && o.pool_layers <= shape.num_layers, ConfigError, "model.pool_layers = ", o.pool_layers,
           ": the ", name, " encoder has ", shape.num_layers, " layers, so pool_layers is 1 to ", shape.num_layers);
  KG_CHECK(ctx.model.global_pool.empty(), ConfigError, "model.global_pool = \"", ctx.model.global_pool,
           "\" pools an image's feature map; a text model pools its tokens with model.pooling (", join(pools, ", "),
           "): remove model.global_pool");
  register_module("backbone", encoder_);
  head_ = register_module("head", std::make_shared<torch::nn::Module>("TextHead"));
  if (o.pooling == "attention") {
    auto list = head_->register_module("attention_pool", torch::nn::ModuleList());
    for (int64_t i = 0; i < o.pool_layers; ++i) {
      attention_.push_back(TextAttentionPool(shape.hidden_size));
      list->push_back(attention_.back());
    }
  }
  add_encoder_groups();
  // The dry forward in finish() only finds the pooled width, which does not depend on the length: 8 tokens do.
  ModelContext dry = ctx;
  dry.seq_len = std::min<int64_t>(ctx.seq_len, 8);
  finish(dry, *head_, "head.fc", o.pooling, {o.pooling});
}

void TextNetwork::add_encoder_groups() {
  for (auto& [g, names] : encoder_group_names(*encoder_, "backbone.")) add_group(g, std::move(names));
}

std::vector<std::pair<std::string, std::vector<std::string>>> encoder_group_names(const text::TextEncoder& enc,
                                                                                  const std::string& prefix) {
  // Exact parameter names (Network's groups take module paths; a parameter's own name is one).
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (const auto& g : enc.layer_groups()) {
    std::vector<std::string> names;
    for (const auto& [param, t] : g.params) names.push_back(prefix + param);
    const bool own = groups.empty() || g.name == "embeddings" || g.name.rfind("layer.", 0) == 0;
    if (own)
      groups.emplace_back(g.name, std::move(names));
    else
      groups.back().second.insert(groups.back().second.end(), names.begin(), names.end());
  }
  return groups;
}

at::Tensor TextNetwork::forward_backbone(const Inputs& in) {
  KG_CHECK(in.is_text(), ConfigError, "model ", encoder_->shape().model_type,
           " takes text (token ids); this batch has ", in.pixels.defined() ? "images: set data.text_cols" : "no input");
  encoder_->set_grad_checkpointing(grad_checkpointing());
  return pool_hidden(encoder_->forward(in.ids, in.mask, in.type_ids), in.mask);
}

at::Tensor TextNetwork::forward_features(const at::Tensor& x) {
  throw ConfigError("model " + encoder_->shape().model_type + " takes text (token ids), not images (got a batch " +
                    c10::str(x.sizes()) + "): set data.text_cols");
}

at::Tensor TextNetwork::pool_hidden(const std::vector<at::Tensor>& hidden, const at::Tensor& mask) {
  const auto n = static_cast<int64_t>(hidden.size());
  KG_ASSERT(n > opts_.pool_layers, "the ", encoder_->shape().model_type, " encoder returned ", n,
            " hidden states for pool_layers = ", opts_.pool_layers);
  std::vector<at::Tensor> parts;
  for (int64_t i = 0; i < opts_.pool_layers; ++i) {
    const at::Tensor& h = hidden[static_cast<size_t>(n - 1 - i)];
    if (opts_.pooling == "cls")
      parts.push_back(h.select(1, 0));
    else if (opts_.pooling == "attention")
      parts.push_back(attention_[static_cast<size_t>(i)]->forward(h, mask));
    else
      parts.push_back(masked_mean_pool(h, mask));
  }
  return parts.size() == 1 ? parts.front() : at::cat(parts, 1);
}

const text::TextEncoder* text_encoder_of(const Network& net) {
  const auto* t = dynamic_cast<const TextNetwork*>(&net);
  return t ? &t->encoder() : nullptr;
}

namespace text_network_impl {

// One family per text encoder family. Listed here, not read from text::text_family_names(): the families register
// themselves in other files, whose static initialisation may come after this one's (a test holds both lists equal).
struct TextModelEntry {
  const char* name;
  const char* model;   // transformers' class
  const char* folder;  // the example's folder
};
const std::vector<TextModelEntry>& text_model_entries() {
  static const std::vector<TextModelEntry> entries{
      {"bert", "BERT (transformers' BertModel)", "bert-base-uncased"},
      {"deberta-v2", "DeBERTa-v2/v3 (transformers' DebertaV2Model)", "deberta-v3-base"},
      {"distilbert", "DistilBERT (transformers' DistilBertModel)", "distilbert-base-uncased"},
      {"electra", "ELECTRA discriminator (transformers' ElectraModel)", "electra-base-discriminator"},
      {"modernbert", "ModernBERT (transformers' ModernBertModel)", "ModernBERT-base"},
      {"roberta", "RoBERTa (transformers' RobertaModel)", "roberta-base"},
      {"xlm-roberta", "XLM-RoBERTa (transformers' XLMRobertaModel)", "xlm-roberta-base"},
  };
  return entries;
}

config::Fields<TextNetworkOptions> text_network_fields() {
  config::Fields<TextNetworkOptions> f;
  f.field("pooling", &TextNetworkOptions::pooling,
          "text models: the tokens into one vector: mean (of the tokens, padding excluded), cls (the first token), "
          "attention (learned weights over the tokens: Linear(H, H), tanh, Linear(H, 1), softmax; trains with the "
          "head)")
      .choices(pooling_names());
  f.field("pool_layers", &TextNetworkOptions::pool_layers,
          "text models: pool each of the encoder's last k hidden states and concatenate them (last layer first): "
          "hidden_size x k features for the head; at most the encoder's num_hidden_layers")
      .min(1);
  f.field("reinit_layers", &TextNetworkOptions::reinit_layers,
          "text models: re-initialise the encoder's top k layers after loading model.pretrained, as transformers "
          "initialises a new model (Zhang et al. 2021: helps small fine-tunes; 0 = keep every pretrained layer)")
      .min(0);
  return f;
}

NetworkPtr build_text_network(const std::string& model_type, const TextNetworkOptions& o, const ModelContext& ctx) {
  namespace fs = std::filesystem;
  const std::string& folder = ctx.model.pretrained;
  const std::string what =
      "a text model is built from a Hugging Face folder: config.json + model.safetensors or "
      "pytorch_model.bin";
  KG_CHECK(!folder.empty(), ConfigError, "model.pretrained: model.name = \"", model_type, "\" needs it: ", what);
  KG_CHECK(ctx.seq_len > 0, ConfigError, "model.name = \"", model_type,
           "\": this model takes text, set data.text_cols (and data.max_length)");
  std::error_code ec;
  KG_CHECK(fs::is_directory(folder, ec), ConfigError, "model.pretrained: ", folder, " is not a folder; ", what);
  const auto cfg = text::HfConfig::read((fs::path(folder) / "config.json").string());
  KG_CHECK(cfg.model_type() == model_type, ConfigError, "model.name = \"", model_type, "\" but ", cfg.path(),
           " has model_type \"", cfg.model_type(), "\"",
           is_text_model(cfg.model_type()) ? ": set model.name = \"" + cfg.model_type() + "\""
                                           : " (the text models: " + join(text_model_names(), ", ") + ")");
  auto loaded = text::load_text_encoder(folder, ctx.model.pretrained_strict);
  loaded.report.reinit_layers = text::reinit_top_layers(*loaded.encoder, cfg, o.reinit_layers);
  auto net = std::make_shared<TextNetwork>(loaded.encoder, o, ctx);
  net->set_pretrained_report(std::move(loaded.report));
  return net;
}

bool register_text_models() {
  for (const auto& e : text_model_entries()) {
    const std::string name = e.name;
    model_registry().add(
        name,
        std::string(e.model) + " text encoder from a Hugging Face folder (model.pretrained), its tokens pooled " +
            "(model.pooling) for the head",
        "[model]\nname = \"" + name + "\"\npretrained = \"" + e.folder + "\"  # config.json + model.safetensors\n" +
            "pooling = \"mean\"",
        text_network_fields(), [name](const TextNetworkOptions& o, const ModelContext& ctx) -> NetworkPtr {
          return build_text_network(name, o, ctx);
        });
  }
  return true;
}
const bool kTextModelsRegistered = register_text_models();

}  // namespace text_network_impl

const std::vector<std::string>& text_model_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& e : text_network_impl::text_model_entries()) out.push_back(e.name);
    std::sort(out.begin(), out.end());
    return out;
  }();
  return names;
}

bool is_text_model(const std::string& model_name) {
  const auto& names = text_model_names();
  return std::find(names.begin(), names.end(), model_name) != names.end();
}

}  // namespace kg::model
