#include "model/text/mlm.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

#include "core/error.h"
#include "core/strings.h"
#include "model/text/text_network.h"

namespace kg::model::text {

MlmHeadSpec mlm_head_spec(const HfConfig& cfg) {
  const std::string& type = cfg.model_type();
  MlmHeadSpec s;
  if (type == "bert" || type == "deberta-v2") {
    // DebertaV2ForMaskedLM keeps BERT's names unless config.json says legacy = false.
    const bool deberta = type == "deberta-v2";
    s.architecture = deberta ? "DebertaV2ForMaskedLM" : "BertForMaskedLM";
    s.prefix = deberta ? "deberta." : "bert.";
    const bool legacy = !deberta || cfg.get_bool("legacy", true);
    const std::string root = legacy ? "cls.predictions.transform." : "lm_predictions.lm_head.";
    s.dense = root + "dense";
    s.norm = root + "LayerNorm";
    s.bias = legacy ? "cls.predictions.bias" : "lm_predictions.lm_head.bias";
    s.act = read_activation(cfg, "hidden_act", "gelu");
    s.eps = cfg.get_double("layer_norm_eps", deberta ? 1e-7 : 1e-12);
  } else if (type == "roberta" || type == "xlm-roberta") {
    s.architecture = type == "roberta" ? "RobertaForMaskedLM" : "XLMRobertaForMaskedLM";
    s.prefix = "roberta.";
    s.dense = "lm_head.dense";
    s.norm = "lm_head.layer_norm";
    s.bias = "lm_head.bias";
    s.act = HfActivation::kGelu;  // RobertaLMHead calls gelu whatever hidden_act says
    s.eps = cfg.get_double("layer_norm_eps", 1e-12);
  } else if (type == "distilbert") {
    s.architecture = "DistilBertForMaskedLM";
    s.prefix = "distilbert.";
    s.dense = "vocab_transform";
    s.norm = "vocab_layer_norm";
    s.bias = "vocab_projector.bias";
    s.act = read_activation(cfg, "activation", "gelu");
    s.eps = 1e-12;  // DistilBertForMaskedLM's fixed LayerNorm eps
  } else if (type == "modernbert") {
    s.architecture = "ModernBertForMaskedLM";
    s.prefix = "model.";
    s.dense = "head.dense";
    s.norm = "head.norm";
    s.bias = cfg.get_bool("decoder_bias", true) ? "decoder.bias" : "";
    s.act = read_activation(cfg, "classifier_activation", "gelu");
    s.eps = cfg.get_double("norm_eps", 1e-5);
    s.dense_bias = cfg.get_bool("classifier_bias", false);
    s.norm_bias = cfg.get_bool("norm_bias", false);
  } else {
    throw ConfigError(
        cfg.path() + ": model_type \"" + type +
        "\" has no masked-language-model head in kgtrain (kgtrain pretrain takes bert, roberta, "
        "xlm-roberta, deberta-v2, distilbert, modernbert" +
        (type == "electra" ? "; an ELECTRA discriminator is pre-trained by replaced-token detection" : "") + ")");
  }
  return s;
}

MlmHeadImpl::MlmHeadImpl(const MlmHeadSpec& sp, int64_t hidden, int64_t embedding, int64_t vocab) : spec(sp) {
  dense = register_module("dense", torch::nn::Linear(torch::nn::LinearOptions(hidden, embedding).bias(sp.dense_bias)));
  // nn.LayerNorm(bias=norm_bias): LibTorch's LayerNorm always has a bias, ModernBERT's head none.
  auto norm = register_module("norm", std::make_shared<torch::nn::Module>("MlmHeadNorm"));
  norm_weight = norm->register_parameter("weight", torch::ones({embedding}));
  if (sp.norm_bias) norm_bias = norm->register_parameter("bias", torch::zeros({embedding}));
  if (!sp.bias.empty()) bias = register_parameter("bias", torch::zeros({vocab}));
}

at::Tensor MlmHeadImpl::forward(const at::Tensor& hidden, const at::Tensor& word_embeddings) {
  at::Tensor x = apply_activation(spec.act, dense->forward(hidden));
  x = at::layer_norm(x, {x.size(-1)}, norm_weight, norm_bias, spec.eps);
  return at::linear(x, word_embeddings, bias);
}

namespace {
// transformers' _init_weights for the head: normal(0, initializer_range) weights, zero biases, unit norm weights.
void init_head(MlmHeadImpl& h, double std) {
  torch::NoGradGuard ng;
  h.dense->weight.normal_(0.0, std);
  if (h.dense->bias.defined()) h.dense->bias.zero_();
}
}  // namespace

MlmNetwork::MlmNetwork(TextEncoderPtr encoder, const HfConfig& cfg) : encoder_(std::move(encoder)) {
  KG_ASSERT(encoder_, "an MLM network without an encoder");
  const MlmHeadSpec spec = mlm_head_spec(cfg);
  register_module("backbone", encoder_);
  const at::Tensor emb = word_embeddings();
  head_ = register_module("head", MlmHead(spec, encoder_->shape().hidden_size, emb.size(1), emb.size(0)));
  init_head(*head_, cfg.get_double("initializer_range", 0.02));
  for (auto& [g, names] : encoder_group_names(*encoder_, "backbone.")) add_group(g, std::move(names));
  own_head({"head"});
  set_arch(encoder_->shape().model_type);
}

at::Tensor MlmNetwork::word_embeddings() const {
  const std::string name = encoder_->word_embeddings_name();
  for (const auto& p : encoder_->named_parameters(true))
    if (p.key() == name) return p.value();
  throw InternalError("the " + encoder_->shape().model_type + " encoder has no parameter " + name);
}

at::Tensor MlmNetwork::forward(const Inputs& in) {
  KG_CHECK(in.is_text(), ConfigError, "a masked-language model takes token ids; this batch has ",
           in.pixels.defined() ? "images" : "no input");
  encoder_->set_grad_checkpointing(grad_checkpointing());
  const at::Tensor last = encoder_->forward(in.ids, in.mask, in.type_ids).back();  // [B, L, hidden]
  at::Tensor where = in.predict;
  if (!where.defined()) where = in.mask.defined() ? in.mask.to(at::kBool) : torch::ones_like(in.ids, at::kBool);
  return head_->forward(last.index({where}), word_embeddings());
}

at::Tensor MlmNetwork::forward_features(const at::Tensor&) {
  throw ConfigError("a masked-language model takes token ids, not images");
}

bool MlmNetwork::load_head(const TensorMap& tensors, const std::string& source) {
  const auto& s = head_->spec;
  if (!tensors.count(s.dense + ".weight")) return false;
  torch::NoGradGuard ng;
  for (auto& [name, p] : hf_parameters()) {
    if (name.rfind(s.prefix, 0) == 0) continue;  // the encoder's: load_hf_state_dict loaded them
    auto it = tensors.find(name);
    KG_CHECK(it != tensors.end(), CheckpointError, source, ": holds ", s.dense, ".weight but not ", name,
             ", the rest of the ", s.architecture, " head");
    KG_CHECK(p.sizes() == it->second.sizes(), CheckpointError, source, ": ", name, " is ", it->second.sizes(),
             " in the file but ", p.sizes(), " in the head config.json describes");
    p.copy_(it->second.to(p.device(), p.scalar_type()));
  }
  return true;
}

std::vector<std::pair<std::string, at::Tensor>> MlmNetwork::hf_parameters() const {
  const auto& s = head_->spec;
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& p : encoder_->named_parameters(true)) out.emplace_back(s.prefix + p.key(), p.value());
  out.emplace_back(s.dense + ".weight", head_->dense->weight);
  if (s.dense_bias) out.emplace_back(s.dense + ".bias", head_->dense->bias);
  out.emplace_back(s.norm + ".weight", head_->norm_weight);
  if (s.norm_bias) out.emplace_back(s.norm + ".bias", head_->norm_bias);
  if (!s.bias.empty()) out.emplace_back(s.bias, head_->bias);
  return out;
}

TensorMap MlmNetwork::hf_state_dict() const {
  TensorMap out;
  for (const auto& [name, t] : hf_parameters()) out[name] = t.detach().cpu();
  return out;
}

}  // namespace kg::model::text
