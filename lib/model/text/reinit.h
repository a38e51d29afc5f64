// model.reinit_layers: the top k encoder layers re-drawn as the family's transformers _init_weights draws a new
// model (Zhang et al. 2021, "Revisiting Few-sample BERT Fine-tuning": the top layers of a pretrained encoder hold
// pre-training specifics that a small fine-tune must unlearn; re-initialising them often helps):
//   BERT, RoBERTa, XLM-R, ELECTRA, DistilBERT, DeBERTa-v2/v3   Linear weights ~ N(0, initializer_range),
//                                                              biases 0, LayerNorm weights 1
//   ModernBERT   truncated normals (cut at +-initializer_cutoff_factor std): std initializer_range for Wqkv and Wi,
//                initializer_range / sqrt(2 * num_hidden_layers) for the output projections Wo; norms 1, biases 0
// Drawn from torch's generator in parameter order: a seeded build gives the same weights every time.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/text/encoder.h"
#include "model/text/hf_config.h"

namespace kg::model::text {

// Re-initialises the last `k` "layer.N" groups of `enc` (built from `cfg`) and returns their names. ConfigError
// naming model.reinit_layers when k exceeds the encoder's layers.
std::vector<std::string> reinit_top_layers(TextEncoder& enc, const HfConfig& cfg, int64_t k);

}  // namespace kg::model::text
