// Masked-language modelling: a text encoder with its family's MLM head, as transformers' *ForMaskedLM builds it
// (BertForMaskedLM, RobertaForMaskedLM, DebertaV2ForMaskedLM, DistilBertForMaskedLM, ModernBertForMaskedLM):
// dense -> activation -> LayerNorm -> a decoder tied to the word embeddings, plus an output bias. What
// `kgtrain pretrain` trains (jobs/pretrain.h), and the folder it writes is one `AutoModelForMaskedLM` and
// `model.pretrained` both read.
//
// Names: the encoder under "backbone." (as TextNetwork), the head under "head." (head.dense.weight, head.norm.weight,
// head.bias); hf_state_dict() renames both to the family's file names (bert.embeddings..., cls.predictions.bias).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include "model/model.h"
#include "model/text/encoder.h"
#include "model/text/hf_config.h"

namespace kg::model::text {

// Where a family keeps its MLM head in a Hugging Face file, and how it computes it.
struct MlmHeadSpec {
  std::string architecture;  // config.json "architectures": "BertForMaskedLM"
  std::string prefix;        // the encoder's prefix in that file: "bert."
  std::string dense, norm;   // module names: "cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm"
  std::string bias;          // the output bias: "cls.predictions.bias" ("" = none: ModernBERT's decoder_bias = false)
  HfActivation act = HfActivation::kGelu;
  double eps = 1e-12;
  bool dense_bias = true, norm_bias = true;
};

// The head of cfg's family; ConfigError (exit 2) naming config.json's model_type for a family without one (ELECTRA's
// discriminator is pre-trained by replaced-token detection, not MLM).
MlmHeadSpec mlm_head_spec(const HfConfig& cfg);

struct MlmHeadImpl : torch::nn::Module {
  MlmHeadImpl(const MlmHeadSpec& spec, int64_t hidden, int64_t embedding, int64_t vocab);
  // hidden [M, hidden] -> logits [M, vocab] with the decoder weight `word_embeddings` [vocab, embedding].
  at::Tensor forward(const at::Tensor& hidden, const at::Tensor& word_embeddings);
  torch::nn::Linear dense{nullptr};
  at::Tensor norm_weight, norm_bias, bias;  // norm_bias / bias undefined when the family has none
  MlmHeadSpec spec;
};
TORCH_MODULE(MlmHead);

class MlmNetwork final : public Network {
 public:
  // Around `encoder` (built, and loaded by the caller); the head drawn as transformers' _init_weights draws it
  // (normal(0, initializer_range) weights, zero biases, unit norms) until load_head() finds one.
  MlmNetwork(TextEncoderPtr encoder, const HfConfig& cfg);

  using Network::forward;
  // The last hidden states at in.predict's positions (every real token when it is undefined), through the head:
  // [M, vocab] logits, the predicted positions in row-major order.
  at::Tensor forward(const Inputs& in) override;
  // A ConfigError: an MLM network takes token ids.
  at::Tensor forward_features(const at::Tensor& x) override;

  // Copies the head from a Hugging Face file's tensors when they hold it (under spec's names); false when they do
  // not (an encoder saved with AutoModel: the head keeps its init). CheckpointError naming a tensor of another shape.
  bool load_head(const TensorMap& tensors, const std::string& source);
  // The encoder's and the head's parameters under the family's *ForMaskedLM names (the tied decoder weight left
  // out, as transformers saves it): the live tensors.
  std::vector<std::pair<std::string, at::Tensor>> hf_parameters() const;
  // The same, detached copies on the CPU: what RUN/model/model.safetensors holds.
  TensorMap hf_state_dict() const;

  TextEncoder& encoder() { return *encoder_; }
  const MlmHeadSpec& spec() const { return head_->spec; }

 private:
  at::Tensor word_embeddings() const;
  TextEncoderPtr encoder_;
  MlmHead head_{nullptr};
};

}  // namespace kg::model::text
