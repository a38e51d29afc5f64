// fastai's ClassificationInterpretation, and more, from predictions and targets (an OOF file): the confusion
// matrix, per-class precision / recall / F1 / support, the most-confused pairs, per-row losses for the top
// losses; multilabel per-label AUC and F1; regression per-target MAE / RMSE / R2 and residuals. Predictions and
// targets as metric.h describes (probabilities for classification, raw values for regression).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include "core/tasks.h"

namespace kg::metric {

struct ClassRow {
  std::string name;
  double precision = 0, recall = 0, f1 = 0;  // 0 where undefined (sklearn's zero_division = 0)
  int64_t support = 0;                       // true rows of the class (label)
  double auc = 0;                            // multilabel: the label's ROC AUC (NaN with one class present)
};

struct ConfusedPair {
  int64_t truth = 0, predicted = 0, count = 0;
};

struct Interpretation {
  Task task = Task::multiclass;
  std::vector<std::string> names;           // classes (binary: negative, positive), labels or targets
  at::Tensor confusion;                     // multiclass, binary: int64 [K, K], rows truth, columns prediction
  at::Tensor predicted;                     // int64 [N] predicted class (multiclass, binary)
  std::vector<ClassRow> rows;               // per class / label (not regression)
  std::vector<ConfusedPair> most_confused;  // off-diagonal cells, largest first (count > 0)
  double accuracy = 0, macro_f1 = 0;        // classification; multilabel: accuracy is per cell
  at::Tensor losses;  // double [N]: cross-entropy of the true class / mean BCE / mean squared error
  // regression, per target
  std::vector<double> mae, rmse, r2;
  nlohmann::json to_json() const;  // every number above except per-row tensors
};

// `task`: multiclass | binary | multilabel | regression. `names`: one per class (binary: both classes),
// label or target. InternalError for tensors of the wrong shape (the caller read them from an OOF file).
Interpretation interpret(Task task, const std::vector<std::string>& names, const at::Tensor& preds,
                         const at::Tensor& targets);

}  // namespace kg::metric
