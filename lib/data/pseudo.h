// Pseudo-labelling: which unlabeled rows the ensemble labels confidently enough to train on, and the
// [pseudo] recipe section. The job is lib/jobs/pseudo_label.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "config/tree.h"
#include "core/tasks.h"

namespace kg::data {

// Recipe section [pseudo]; each field's doc is in pseudo_fields() (data/pseudo.cpp) and docs/reference.md.
struct PseudoOptions {
  static PseudoOptions load(const config::Tree& recipe);  // recipe.get<PseudoOptions>() decodes it once
  double threshold = 0.9;
  double top_fraction = 0;
  bool soft = false;
  std::string source_csv;
  std::string source_image_dir;
};

struct PseudoSelection {
  std::vector<int64_t> rows;       // selected row indices, ascending
  std::vector<double> confidence;  // per selected row
  std::vector<int64_t> label;      // multiclass / binary: the predicted class per selected row (-1 otherwise)
};

// probs [N, K]: multiclass softmax, binary [N, 1] sigmoid of the positive class, multilabel sigmoids.
// Confidence: multiclass max p; binary max(p, 1 - p); multilabel min over labels of max(p, 1 - p).
// A row is kept when it passes the threshold (when > 0) and, with top_fraction > 0, it is among the
// ceil(top_fraction * n_c) most confident rows of its predicted class c (multilabel: of all rows) —
// both rules together when both are set. Regression has no confidence: ConfigError unless
// threshold = 0 and top_fraction = 0 (keep every row).
PseudoSelection select_pseudo(const at::Tensor& probs, Task task, const PseudoOptions& o);

}  // namespace kg::data
