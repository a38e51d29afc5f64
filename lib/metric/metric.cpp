#include "metric/metric.h"

#include <cmath>
#include <limits>
#include <map>

#include <torch/torch.h>

#include "core/error.h"
#include "core/strings.h"
#include "core/tasks.h"

namespace kg::metric {

MetricRegistry& metric_registry() {
  static MetricRegistry r("metric");
  return r;
}

namespace {

TaskTable& task_table() {
  static TaskTable t;
  return t;
}

}  // namespace

at::Tensor activate(const at::Tensor& logits, Task task) {
  auto x = logits.to(torch::kFloat);
  if (task == Task::multiclass) return torch::softmax(x, x.dim() - 1);
  if (task == Task::regression) return x;
  return torch::sigmoid(x);
}

bool add_metric_tasks(const std::string& name, std::vector<Task> tasks) {
  return task_table().add(name, std::move(tasks));
}

const std::vector<Task>& supported_tasks(const std::string& name) { return task_table().supported(name); }

std::vector<std::string> metrics_for(Task task) { return task_table().components_for(task); }

MetricPtr create(const std::string& name, const MetricContext& ctx) {
  if (!metric_registry().find_info(name)) metric_registry().unknown(name, "");
  const auto& tasks = supported_tasks(name);
  const bool ok = tasks.empty() || std::find(tasks.begin(), tasks.end(), ctx.task) != tasks.end();
  KG_CHECK(ok, ConfigError, "metric \"", name, "\" does not apply to data.task = \"", task_name(ctx.task),
           "\" (it supports ", join(task_names(tasks), ", "), "; metrics for ", task_name(ctx.task), ": ",
           join(metrics_for(ctx.task), ", "), ")");
  return metric_registry().create(name, config::Options(config::json::object(), "metric"), ctx);
}

double evaluate(const std::string& name, const MetricContext& ctx, const at::Tensor& preds, const at::Tensor& targets) {
  auto m = create(name, ctx);
  m->update(preds, targets);
  return m->compute();
}

namespace detail {

at::Tensor preds_2d(const at::Tensor& preds, const char* metric) {
  at::Tensor p = preds.detach().to(torch::kCPU, torch::kDouble);
  if (p.dim() == 1) p = p.unsqueeze(1);
  KG_CHECK(p.dim() == 2, DataError, "metric ", metric, ": expected predictions [N, K], got ", preds.sizes());
  return p;
}

at::Tensor class_targets(const at::Tensor& targets, int64_t n, const char* metric) {
  at::Tensor t = targets.detach().to(torch::kCPU);
  if (t.dim() == 2 && t.is_floating_point()) t = t.argmax(1);
  KG_CHECK(t.dim() == 1 && t.size(0) == n, DataError, "metric ", metric, ": expected ", n,
           " class indices [N] (or soft targets [N, K]), got ", targets.sizes());
  return t.to(torch::kLong);
}

at::Tensor dense_targets(const at::Tensor& targets, const at::Tensor& preds2d, const char* metric) {
  at::Tensor t = targets.detach().to(torch::kCPU, torch::kDouble);
  if (t.dim() == 1 && preds2d.size(1) == 1) t = t.unsqueeze(1);
  KG_CHECK(t.sizes() == preds2d.sizes(), DataError, "metric ", metric,
           ": expected targets shaped like the predictions ", preds2d.sizes(), ", got ", targets.sizes());
  return t;
}

void RowsMetric::reset() {
  preds_.clear();
  targets_.clear();
}

void RowsMetric::update(const at::Tensor& preds, const at::Tensor& targets) {
  preds_.push_back(preds.detach().to(torch::kCPU, torch::kDouble, /*non_blocking=*/false, /*copy=*/true));
  targets_.push_back(targets.detach().to(torch::kCPU, targets.scalar_type(), false, true));
}

double RowsMetric::compute() const {
  if (preds_.empty()) return std::numeric_limits<double>::quiet_NaN();
  auto p = torch::cat(preds_, 0);
  auto t = torch::cat(targets_, 0);
  if (p.size(0) == 0) return std::numeric_limits<double>::quiet_NaN();
  return compute_rows(p, t);
}

}  // namespace detail
}  // namespace kg::metric
