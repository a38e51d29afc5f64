// Text encoders with Hugging Face's architectures and parameter names (BERT, RoBERTa/XLM-R, ELECTRA, DistilBERT,
// DeBERTa-v2/v3, ...), built from a model folder's config.json and loaded from its model.safetensors or
// pytorch_model.bin. forward() gives every layer's hidden states (transformers' output_hidden_states), so that a
// head can pool the last k layers; the parameters are grouped as "embeddings", "layer.0", ... for layer-wise
// learning rates, and each layer can be gradient-checkpointed.
//
// Each family registers itself in its own file under its config.json model_type (KG_REGISTER_TEXT_FAMILY);
// an unknown model_type is a ConfigError (exit 2) naming it and listing the known ones.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include "core/macros.h"
#include "model/model.h"
#include "model/weights/safetensors.h"
#include "model/text/hf_config.h"

namespace kg::model::text {

class TokenLayout;  // model/text/text_layers.h

// One layer of TextEncoder::run_packed_layers: fn maps the real tokens [T, hidden] to the layer's output, through
// run_layer with stage; then, where defined, post(the layer's input as [B, L, hidden], fn's output [T, hidden]) ->
// [T, hidden], outside any checkpoint (DeBERTa-v2's convolution after the first layer).
struct PackedLayer {
  std::shared_ptr<torch::nn::Module> stage;
  std::function<at::Tensor(const at::Tensor&)> fn;
  std::function<at::Tensor(const at::Tensor&, const at::Tensor&)> post;
};

// What every family reads from its config: the sizes a head or the data pipeline needs.
struct EncoderShape {
  std::string model_type;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t num_layers = 0;
  int64_t max_positions = 0;    // longest input the position embeddings allow (0: no limit, relative positions)
  int64_t type_vocab_size = 0;  // 0: the family takes no token_type_ids
  int64_t pad_token_id = 0;
};

class TextEncoder : public torch::nn::Module {
 public:
  // input_ids [B, L] int64; attention_mask [B, L] (1 token, 0 padding; undefined: all ones); token_type_ids [B, L]
  // (undefined: zeros; ignored by families without them). Returns num_layers + 1 tensors [B, L, hidden]: the
  // embeddings' output, then each layer's (transformers' hidden_states; the last one is last_hidden_state, after
  // ModernBERT's final_norm). Every family computes its layers on the real tokens only (TokenLayout, attention alone
  // sees the padded [B, L] layout) and gives zeros at padding positions, where transformers gives values nobody may
  // read (pooling masks them).
  virtual std::vector<at::Tensor> forward(const at::Tensor& input_ids, const at::Tensor& attention_mask = {},
                                          const at::Tensor& token_type_ids = {}) = 0;

  // transformers' pooler_output where the family has a pooler (BERT, RoBERTa: tanh(dense(first token)));
  // undefined otherwise.
  virtual at::Tensor pooled(const at::Tensor& /*last_hidden*/) { return {}; }

  const EncoderShape& shape() const { return shape_; }
  // The parameter holding the token embeddings ("embeddings.word_embeddings.weight"): the loader finds the
  // prefix a task model saved them under ("deberta.", "bert.", ...) from it.
  virtual std::string word_embeddings_name() const { return "embeddings.word_embeddings.weight"; }

  // "embeddings" first (with what every layer shares: DeBERTa's relative embeddings), then "layer.0", ...,
  // then any parameters after the layers (BERT's "pooler"); every parameter is in exactly one group.
  std::vector<LayerGroup> layer_groups() const;
  std::vector<std::string> group_names() const;

  // While training, each layer's activations are recomputed in backward instead of kept (model/grad_checkpoint.h).
  void set_grad_checkpointing(bool on) { grad_checkpointing_ = on; }
  bool grad_checkpointing() const { return grad_checkpointing_; }

 protected:
  explicit TextEncoder(EncoderShape shape) : shape_(std::move(shape)) {}
  // Declares a group by parameter-name prefixes, in forward order; called by each family's constructor.
  void add_group(std::string name, std::vector<std::string> prefixes);
  // fn(x) for one layer; checkpointed while training with grad_checkpointing. `stage` must own every parameter
  // fn uses that needs a gradient (fn may capture tensors that need none: masks, position indices).
  at::Tensor run_layer(const std::shared_ptr<torch::nn::Module>& stage,
                       const std::function<at::Tensor(const at::Tensor&)>& fn, const at::Tensor& x);
  // The layer loop of the families that skip padding: embeddings [B, L, hidden] packed to layout's real tokens,
  // layer(i) run on them for i < count, then finish (where defined) on the last output; returns count + 1 hidden states
  // [B, L, hidden] (the embeddings' first), unpacked: zeros at the padding positions.
  std::vector<at::Tensor> run_packed_layers(const TokenLayout& layout, const at::Tensor& embeddings, size_t count,
                                            const std::function<PackedLayer(size_t)>& layer,
                                            const std::function<at::Tensor(const at::Tensor&)>& finish = {});
  // The ids' checks every family makes: [B, L] integers, L within max_positions, mask and type ids of that shape,
  // and (for ids on the CPU, where it costs no device sync) every id within the vocabulary.
  void check_inputs(const at::Tensor& input_ids, const at::Tensor& attention_mask,
                    const at::Tensor& token_type_ids) const;

 private:
  EncoderShape shape_;
  std::vector<std::pair<std::string, std::vector<std::string>>> groups_;
  bool grad_checkpointing_ = false;
};
using TextEncoderPtr = std::shared_ptr<TextEncoder>;

// A family: the config.json model_type it builds, one line of doc, its factory (which reads and checks its keys).
struct TextFamily {
  std::string model_type;
  std::string doc;
  std::function<TextEncoderPtr(const HfConfig&)> make;
};
bool register_text_family(TextFamily family);  // false (and a start-up InternalError) for a duplicate
std::vector<std::string> text_family_names();  // sorted
// The family of cfg.model_type(); ConfigError (exit 2) naming the file and the model_type, listing the known ones.
const TextFamily& text_family(const HfConfig& cfg);
#define KG_REGISTER_TEXT_FAMILY(...) \
  static const bool KG_CONCAT(kg_text_family_, __COUNTER__) = ::kg::model::text::register_text_family(__VA_ARGS__)

// A tokenizer of `tokenizer_size` tokens (its largest id + 1) for this encoder: ConfigError (exit 2) naming `where`
// when its ids would index past the embeddings (config.json vocab_size). A smaller tokenizer is fine (padded vocab).
void check_vocabulary(const TextEncoder& enc, int64_t tokenizer_size, const std::string& where);

// Builds the encoder config.json describes, with freshly initialised weights.
TextEncoderPtr build_text_encoder(const HfConfig& cfg);

// Copies a state dict into the encoder. Names may be bare ("embeddings.word_embeddings.weight", AutoModel's
// save_pretrained) or carry a task model's prefix ("deberta.", "bert.", "roberta.", ...: found from the word
// embeddings' name), old files' LayerNorm gamma/beta are renamed weight/bias, and the non-persistent buffers
// transformers once saved (position_ids, token_type_ids) are skipped. Tensors outside the encoder (a classifier, an
// MLM head) are reported as unexpected; parameters the file lacks as missing (errors with `strict`). A tensor of
// another shape is always a CheckpointError (exit 3) naming it and both shapes (the vocabulary: config.json's
// vocab_size against the file's embedding rows).
LoadReport load_hf_state_dict(TextEncoder& enc, const TensorMap& tensors, const std::string& source, bool strict);

// The tensors of a Hugging Face model folder and the file they came from: model.safetensors, its sharded form
// (model.safetensors.index.json), or pytorch_model.bin; CheckpointError (exit 3) when it holds none.
std::pair<TensorMap, std::string> read_hf_weights(const std::string& folder);

// A Hugging Face model folder: config.json + model.safetensors (or its sharded index) or pytorch_model.bin.
struct LoadedTextEncoder {
  TextEncoderPtr encoder;
  std::string weights_file;
  LoadReport report;
};
LoadedTextEncoder load_text_encoder(const std::string& folder, bool strict = false);

}  // namespace kg::model::text
