// Merging predictions over TTA views and checkpoints into one prediction per row.
#pragma once
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "config/tree.h"
#include "core/tasks.h"

namespace kg::tta {

// outputs: raw model outputs (logits for classification, values for regression), each [N, K], same shape.
// task: multiclass | binary | multilabel | regression (metric::activate). Returns float32 probabilities
// (softmax for multiclass, per-column sigmoid for binary/multilabel) or values (regression):
//   mean      : mean of the activated outputs
//   geometric : multiclass softmax(mean log_softmax), the normalized geometric mean of the probabilities;
//               binary/multilabel per column p_g / (p_g + q_g), q = 1 - p (= sigmoid(mean logit));
//               regression: ConfigError (no geometric mean of values that may be <= 0)
//   logits    : activate(mean of the raw outputs); regression the plain mean
// weights (optional, one per output, >= 0, not all 0): weighted versions, normalized to sum 1.
// ConfigError for an unknown method, task or bad weights; UsageError when the shapes differ.
at::Tensor merge(const std::vector<at::Tensor>& outputs, const std::string& how, Task task,
                 const std::vector<double>& weights = {});

// The same for already-activated predictions (probabilities, or regression values), e.g. checkpoints
// averaged after each merged its own views. Probabilities carry no logit offset, so for classification
// `logits` merges in log space exactly like `geometric`; regression `logits` is the plain mean.
at::Tensor merge_probs(const std::vector<at::Tensor>& probs, const std::string& how, Task task,
                       const std::vector<double>& weights = {});

// Binary/multilabel decisions: probs >= threshold, per class. `threshold` is a number or an array with
// one per class (the last dimension of probs); anything else is a ConfigError naming `key`. Returns bool.
at::Tensor apply_threshold(const at::Tensor& probs, const config::json& threshold,
                           const std::string& key = "tta.threshold");

}  // namespace kg::tta
