// Tiny Hugging Face model folders for the text models' tests: a config.json of each text family (hidden size 16,
// 2 layers, a vocabulary of 40 tokens), built in milliseconds, with its freshly initialised weights saved as
// model.safetensors -- what save_pretrained writes, at a size a test can afford.
#pragma once
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "model/weights/safetensors.h"
#include "model/text/encoder.h"
#include "model/text/hf_config.h"

namespace kg::test {

inline std::string tiny_text_config(const std::string& model_type) {
  const std::string bert_like = R"("vocab_size": 40, "hidden_size": 16, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 32, "max_position_embeddings": 64, "type_vocab_size": 2)";
  if (model_type == "bert") return R"({"model_type": "bert", )" + bert_like + "}";
  if (model_type == "roberta" || model_type == "xlm-roberta")
    return R"({"model_type": ")" + model_type + R"(", "pad_token_id": 1, )" + bert_like + "}";
  if (model_type == "electra") return R"({"model_type": "electra", "embedding_size": 8, )" + bert_like + "}";
  if (model_type == "distilbert")
    return R"({"model_type": "distilbert", "vocab_size": 40, "dim": 16, "n_layers": 2, "n_heads": 2,
      "hidden_dim": 32, "max_position_embeddings": 64})";
  if (model_type == "deberta-v2")  // v3's layout: relative positions in 256 buckets, shared keys, no absolute ones
    return R"({"model_type": "deberta-v2", "vocab_size": 40, "hidden_size": 16, "num_hidden_layers": 2,
      "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 512, "relative_attention": true,
      "position_buckets": 256, "norm_rel_ebd": "layer_norm", "share_att_key": true, "pos_att_type": ["p2c", "c2p"],
      "max_relative_positions": -1, "position_biased_input": false, "type_vocab_size": 0})";
  if (model_type == "modernbert")
    return R"({"model_type": "modernbert", "vocab_size": 40, "hidden_size": 16, "num_hidden_layers": 2,
      "num_attention_heads": 2, "intermediate_size": 24, "pad_token_id": 0, "local_attention": 4,
      "global_attn_every_n_layers": 2, "global_rope_theta": 160000.0, "local_rope_theta": 10000.0})";
  throw std::invalid_argument("tiny_text_config: no tiny config for model_type " + model_type);
}

// Writes `folder`/config.json and `folder`/model.safetensors of a tiny `model_type` encoder; returns `folder`.
inline std::string write_tiny_text_model(const std::string& folder, const std::string& model_type) {
  std::filesystem::create_directories(folder);
  const std::string json = tiny_text_config(model_type);
  std::ofstream(std::filesystem::path(folder) / "config.json") << json;
  auto enc = model::text::build_text_encoder(model::text::HfConfig::parse(json, folder + "/config.json"));
  model::write_safetensors((std::filesystem::path(folder) / "model.safetensors").string(), model::state_dict(*enc));
  return folder;
}

}  // namespace kg::test
