// Text's sliding windows (data.stride) at prediction: a row's windows were predicted one by one, consecutive in the
// loader's order; their outputs combine into the row's one prediction, so metrics, out-of-fold files and
// submissions keep one row per text. The combination is element-wise over the raw outputs (logits, or regression
// values in target units), before the activation: mean or max (data.window_pool), as the AES 2.0 and Feedback Prize
// solutions pooled a long essay's chunks.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace kg::train {

// The positions in `windows` (Batch::windows of every predicted sample, in order) where a row starts (window 0).
std::vector<int64_t> window_starts(const std::vector<int64_t>& windows);

// `raw` [N, K] (N samples) pooled to [R, K], R = starts.size(): row i is "mean" or "max" over samples
// [starts[i], starts[i + 1]) (the last to N).
at::Tensor pool_windows(const at::Tensor& raw, const std::vector<int64_t>& starts, const std::string& pool);

}  // namespace kg::train
