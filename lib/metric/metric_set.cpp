#include "metric/metric_set.h"

#include <cmath>
#include <set>

#include "config/registry.h"
#include "config/sections.h"
#include "core/error.h"
#include "core/strings.h"
#include "metric/metric.h"

namespace kg::metric {
namespace {

config::Fields<MetricOptions> metric_set_fields() {
  config::Fields<MetricOptions> f;
  f.field("names", &MetricOptions::names,
          "metrics computed every validation; empty = the task's defaults: accuracy, log_loss (multiclass); "
          "auc, log_loss (binary, multilabel); rmse, mae (regression)")
      .check([](const config::json& v) -> std::string {
        auto known = metric_registry().names();
        for (auto& x : v) {
          auto n = x.get<std::string>();
          if (!metric_registry().find_info(n))
            return "unknown metric \"" + n + "\" (known: " + join(known, ", ") + ")" + did_you_mean(n, known);
        }
        return "";
      });
  f.field("monitor", &MetricOptions::monitor,
          "what \"best\" means (checkpoints, early stopping): one of metric.names or \"valid_loss\"; \"\" = the first "
          "name");
  f.field("mode", &MetricOptions::mode, "direction of the monitor: auto = the metric's own (valid_loss: min)")
      .choices({"auto", "max", "min"});
  return f;
}
KG_REGISTER_SECTION("metric", "validation metrics and the one that selects the best epoch",
                    metric_set_fields().schema(), "");

}  // namespace

MetricOptions MetricOptions::load(const config::Tree& recipe) {
  return metric_set_fields().load(config::Options(&recipe, "metric"));
}

std::vector<std::string> default_metrics(Task task) {
  if (task == Task::multiclass) return {"accuracy", "log_loss"};
  if (task == Task::binary || task == Task::multilabel) return {"auc", "log_loss"};
  return {"rmse", "mae"};  // regression
}

MetricSet MetricSet::loss_only() {
  MetricSet m;
  m.monitor_ = "valid_loss";
  m.higher_ = false;
  return m;
}

MetricSet::MetricSet(const config::Recipe& recipe, Task task, int64_t num_outputs)
    : task_(task), num_outputs_(num_outputs) {
  const config::Options src = recipe.section("metric");
  const MetricOptions o = metric_set_fields().load(src);
  names_ = o.names.empty() ? default_metrics(task) : o.names;
  std::vector<std::string> problems;
  std::set<std::string> seen;
  const MetricContext ctx{num_outputs, task};
  for (auto& n : names_) {
    if (!seen.insert(n).second) problems.push_back(src.where("names") + ": metric \"" + n + "\" is listed twice");
    try {
      create(n, ctx);
    } catch (const ConfigError& e) {
      for (auto& p : e.problems()) problems.push_back(src.where("names") + ": " + p);
    }
  }
  monitor_ = o.monitor.empty() ? names_.front() : o.monitor;
  if (monitor_ != "valid_loss" && !seen.count(monitor_))
    problems.push_back(src.where("monitor") + ": \"" + monitor_ + "\" is not computed (allowed: " + join(names_, ", ") +
                       ", valid_loss; add it to metric.names to monitor it)" + did_you_mean(monitor_, names_));
  if (!problems.empty()) throw ConfigError(problems);
  if (o.mode == "max")
    higher_ = true;
  else if (o.mode == "min")
    higher_ = false;
  else
    higher_ = monitor_ == "valid_loss" ? false : create(monitor_, ctx)->higher_is_better();
}

std::map<std::string, double> MetricSet::compute(const at::Tensor& preds, const at::Tensor& targets) const {
  std::map<std::string, double> out;
  for (auto& n : names_) out[n] = evaluate(n, {num_outputs_, task_}, preds, targets);
  return out;
}

bool MetricSet::better(double a, double b, double min_delta) const {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return higher_ ? a > b + min_delta : a < b - min_delta;
}

}  // namespace kg::metric
