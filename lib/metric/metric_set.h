// The [metric] section: which metrics every validation computes and which one decides "best"
// (checkpoint selection, early stopping).
#pragma once
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "config/recipe.h"
#include "core/tasks.h"

namespace kg::metric {

// Recipe section [metric]; each field's doc is in metric_set_fields() (metric/metric_set.cpp) and docs/reference.md.
struct MetricOptions {
  static MetricOptions load(const config::Tree& recipe);  // recipe.get<MetricOptions>() decodes it once
  std::vector<std::string> names;
  std::string monitor;
  std::string mode = "auto";
};

// Metrics when metric.names is empty: accuracy, log_loss (multiclass); auc, log_loss (binary,
// multilabel); rmse, mae (regression). ConfigError for an unknown task.
std::vector<std::string> default_metrics(Task task);

class MetricSet {
 public:
  // ConfigError (naming metric.names / metric.monitor and where they were set) when a name is unknown
  // or does not fit the task, a name repeats, or the monitor is neither a name nor "valid_loss".
  MetricSet(const config::Recipe& recipe, Task task, int64_t num_outputs);
  // No metric: the validation loss is the monitor, lower is better (kgtrain pretrain, whose outputs are tokens).
  static MetricSet loss_only();

  std::vector<std::string> names() const { return names_; }
  // Every metric over all rows: preds after metric::activate, targets as the task gives them.
  std::map<std::string, double> compute(const at::Tensor& preds, const at::Tensor& targets) const;
  const std::string& monitor() const { return monitor_; }
  bool higher_is_better() const { return higher_; }  // for the monitor
  // Whether monitor value `a` improves on `b` by more than min_delta. NaN `a` never improves; any
  // other `a` improves on a NaN `b` (NaN = no value yet).
  bool better(double a, double b, double min_delta = 0) const;

 private:
  MetricSet() = default;
  Task task_ = Task::multiclass;
  int64_t num_outputs_ = 0;
  std::vector<std::string> names_;
  std::string monitor_;
  bool higher_ = true;
};

}  // namespace kg::metric
