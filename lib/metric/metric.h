// Metrics accumulate batches of (predictions, targets) and report one number over every row seen.
// Predictions by task (see activate): multiclass softmax probabilities [N, K]; binary/multilabel
// sigmoid probabilities [N, K]; regression the raw outputs [N, K]. Targets: multiclass int64 [N]
// (float [N, K] soft targets count as their arg-max class, log_loss uses them as given); binary,
// multilabel float [N, K] 0/1 (a cell is positive when t > 0.5); regression float [N, K]. When K = 1,
// [N] is accepted for both.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "config/registry.h"
#include "core/tasks.h"

namespace kg::metric {

// Model outputs -> predictions: softmax (multiclass), sigmoid (binary, multilabel), identity
// (regression); float32, same device.
at::Tensor activate(const at::Tensor& logits, Task task);

class Metric {
 public:
  virtual ~Metric() = default;
  virtual void reset() = 0;
  // preds and targets as described above, any device (kept on the CPU).
  virtual void update(const at::Tensor& preds, const at::Tensor& targets) = 0;
  virtual double compute() const = 0;  // NaN when undefined (no rows; AUC with one class, ...)
  virtual bool higher_is_better() const = 0;
};
using MetricPtr = std::unique_ptr<Metric>;

struct MetricContext {
  int64_t num_outputs = 0;
  Task task = Task::multiclass;
};

using MetricRegistry = Registry<MetricPtr(const MetricContext&)>;
MetricRegistry& metric_registry();

// Tasks each metric supports, declared next to its registration (KG_METRIC_TASKS).
bool add_metric_tasks(const std::string& name, std::vector<Task> tasks);
const std::vector<Task>& supported_tasks(const std::string& name);  // empty for unknown names
std::vector<std::string> metrics_for(Task task);                    // sorted

// Builds a metric by name with its default options. ConfigError for an unknown name, or one that does
// not apply to ctx.task (naming the tasks it supports and the metrics for ctx.task).
MetricPtr create(const std::string& name, const MetricContext& ctx);

// One-shot: the value of metric `name` on all rows.
double evaluate(const std::string& name, const MetricContext& ctx, const at::Tensor& preds, const at::Tensor& targets);

namespace detail {
// Predictions and targets as float64 CPU [N, K] (targets of multiclass as int64 [N] class indices,
// arg-max of soft targets); DataError naming `metric` when the shapes do not fit.
at::Tensor preds_2d(const at::Tensor& preds, const char* metric);
at::Tensor class_targets(const at::Tensor& targets, int64_t n, const char* metric);
at::Tensor dense_targets(const at::Tensor& targets, const at::Tensor& preds2d, const char* metric);

// Base for metrics that need every row at once (AUC, R2): keeps the batches, computes on all of them.
class RowsMetric : public Metric {
 public:
  void reset() override;
  void update(const at::Tensor& preds, const at::Tensor& targets) override;
  double compute() const override;

 protected:
  // preds float64 [N, K], targets as given (CPU); N >= 1.
  virtual double compute_rows(const at::Tensor& preds, const at::Tensor& targets) const = 0;

 private:
  std::vector<at::Tensor> preds_, targets_;
};
}  // namespace detail

}  // namespace kg::metric

// KG_METRIC_TASKS("auc", {Task::binary, Task::multilabel, Task::multiclass})
#define KG_METRIC_TASKS(name, ...) \
  static const bool KG_CONCAT(kg_metric_tasks_, __COUNTER__) = ::kg::metric::add_metric_tasks(name, __VA_ARGS__)
