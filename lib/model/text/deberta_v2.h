// DeBERTa-v2 and v3 (He et al. 2021, "DeBERTa: Decoding-enhanced BERT with Disentangled Attention"; v3: He et al.
// 2021, "DeBERTaV3"), transformers' DebertaV2Model: disentangled attention (content->position "c2p" and
// position->content "p2c" terms over relative-position embeddings), log-bucketed relative positions
// (position_buckets), keys shared between content and positions (share_att_key), LayerNorm'd relative embeddings
// (norm_rel_ebd), the optional convolution after the first layer (conv_kernel_size) and optional absolute
// positions (position_biased_input; v3 has none). Exposed for the tests: the relative-position indices.
#pragma once
#include <cstdint>

#include <ATen/core/Tensor.h>

namespace kg::model::text {

// transformers' build_relative_position: [1, q_len, k_len] int64 of q - k, log-bucketed when bucket_size > 0 and
// max_position > 0 (make_log_bucket_position, computed in float32 as transformers does, so bucket edges agree).
at::Tensor deberta_relative_positions(int64_t q_len, int64_t k_len, int64_t bucket_size, int64_t max_position,
                                      const at::Device& device);

}  // namespace kg::model::text
