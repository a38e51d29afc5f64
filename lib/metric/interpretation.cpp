#include "metric/interpretation.h"

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

#include "core/error.h"
#include "metric/metric.h"

namespace kg::metric {
namespace {

void fill_prf(ClassRow& r, int64_t tp, int64_t fp, int64_t fn) {
  r.precision = tp + fp > 0 ? static_cast<double>(tp) / static_cast<double>(tp + fp) : 0.0;
  r.recall = tp + fn > 0 ? static_cast<double>(tp) / static_cast<double>(tp + fn) : 0.0;
  r.f1 = r.precision + r.recall > 0 ? 2 * r.precision * r.recall / (r.precision + r.recall) : 0.0;
  r.support = tp + fn;
}

void classify(Interpretation& in, const at::Tensor& p, const at::Tensor& truth) {
  const int64_t n = p.size(0), K = static_cast<int64_t>(in.names.size());
  in.predicted = in.task == Task::binary ? p.select(1, 0).ge(0.5).to(torch::kLong) : p.argmax(1);
  in.confusion = torch::zeros({K, K}, torch::kLong);
  auto cm = in.confusion.accessor<int64_t, 2>();
  auto pr = in.predicted.accessor<int64_t, 1>();
  auto tr = truth.accessor<int64_t, 1>();
  int64_t correct = 0;
  for (int64_t i = 0; i < n; ++i) {
    KG_ASSERT(tr[i] >= 0 && tr[i] < K && pr[i] >= 0 && pr[i] < K, "interpret: class index out of range");
    ++cm[tr[i]][pr[i]];
    correct += tr[i] == pr[i];
  }
  in.accuracy = n ? static_cast<double>(correct) / static_cast<double>(n) : 0.0;
  for (int64_t k = 0; k < K; ++k) {
    int64_t tp = cm[k][k], fp = 0, fn = 0;
    for (int64_t j = 0; j < K; ++j)
      if (j != k) fp += cm[j][k], fn += cm[k][j];
    ClassRow r;
    r.name = in.names[static_cast<size_t>(k)];
    fill_prf(r, tp, fp, fn);
    r.auc = std::nan("");
    in.rows.push_back(r);
    in.macro_f1 += r.f1 / static_cast<double>(K);
    for (int64_t j = 0; j < K; ++j)
      if (j != k && cm[k][j] > 0) in.most_confused.push_back({k, j, cm[k][j]});
  }
  std::stable_sort(in.most_confused.begin(), in.most_confused.end(),
                   [](const ConfusedPair& a, const ConfusedPair& b) { return a.count > b.count; });
  // Cross-entropy of the true class (binary: of the true side of the positive probability).
  const at::Tensor p_true = in.task == Task::binary ? torch::where(truth.eq(1), p.select(1, 0), 1.0 - p.select(1, 0))
                                                    : p.gather(1, truth.view({-1, 1})).view({-1});
  in.losses = -p_true.clamp_min(1e-15).log();
}

}  // namespace

Interpretation interpret(Task task, const std::vector<std::string>& names, const at::Tensor& preds,
                         const at::Tensor& targets) {
  Interpretation in;
  in.task = task;
  in.names = names;
  const at::Tensor p = preds.to(torch::kCPU).to(torch::kDouble).contiguous();
  KG_ASSERT(p.dim() == 2, "interpret: predictions must be [N, K]");
  const int64_t n = p.size(0), K = p.size(1);
  if (task == Task::multiclass) {
    KG_ASSERT(K == static_cast<int64_t>(names.size()), "interpret: one probability column per class");
    at::Tensor t = targets.to(torch::kCPU);
    if (t.dim() == 2) t = t.argmax(1);
    classify(in, p, t.to(torch::kLong).contiguous());
  } else if (task == Task::binary) {
    KG_ASSERT(K == 1 && names.size() == 2, "interpret: binary has one probability column and two classes");
    classify(in, p, targets.to(torch::kCPU).reshape({-1}).gt(0.5).to(torch::kLong).contiguous());
  } else if (task == Task::multilabel) {
    const at::Tensor t = targets.to(torch::kCPU).to(torch::kDouble).reshape({n, K}).gt(0.5);
    const at::Tensor pred = p.ge(0.5);
    in.accuracy = n ? pred.eq(t).to(torch::kDouble).mean().item<double>() : 0.0;
    for (int64_t k = 0; k < K; ++k) {
      const at::Tensor tk = t.select(1, k), pk = pred.select(1, k);
      ClassRow r;
      r.name = names[static_cast<size_t>(k)];
      fill_prf(r, (tk & pk).sum().item<int64_t>(), (~tk & pk).sum().item<int64_t>(), (tk & ~pk).sum().item<int64_t>());
      r.auc = evaluate("auc", {1, Task::binary}, p.select(1, k).to(torch::kFloat).view({-1, 1}),
                       tk.to(torch::kFloat).view({-1, 1}));
      in.macro_f1 += r.f1 / static_cast<double>(K);
      in.rows.push_back(r);
    }
    const at::Tensor pc = p.clamp(1e-15, 1 - 1e-15), tf = t.to(torch::kDouble);
    in.losses = -(tf * pc.log() + (1 - tf) * (1 - pc).log()).mean(1);
  } else {  // regression
    const at::Tensor t = targets.to(torch::kCPU).to(torch::kDouble).reshape({n, K});
    const at::Tensor err = p - t;
    in.losses = err.pow(2).mean(1);
    for (int64_t k = 0; k < K; ++k) {
      const at::Tensor e = err.select(1, k), tk = t.select(1, k);
      in.mae.push_back(e.abs().mean().item<double>());
      in.rmse.push_back(std::sqrt(e.pow(2).mean().item<double>()));
      const double ss_tot = (tk - tk.mean()).pow(2).sum().item<double>();
      in.r2.push_back(ss_tot > 0 ? 1.0 - e.pow(2).sum().item<double>() / ss_tot : std::nan(""));
    }
  }
  return in;
}

nlohmann::json Interpretation::to_json() const {
  using nlohmann::json;
  auto finite = [](double v) { return std::isfinite(v) ? json(v) : json(); };
  json j = {{"task", task_name(task)}, {"names", names}};
  if (task == Task::regression) {
    json targets = json::array();
    for (size_t k = 0; k < names.size(); ++k)
      targets.push_back({{"name", names[k]}, {"mae", mae[k]}, {"rmse", rmse[k]}, {"r2", finite(r2[k])}});
    j["targets"] = targets;
  } else {
    j["accuracy"] = accuracy;
    j["macro_f1"] = macro_f1;
    json per = json::array();
    for (auto& r : rows) {
      json x = {
          {"name", r.name}, {"precision", r.precision}, {"recall", r.recall}, {"f1", r.f1}, {"support", r.support}};
      if (task == Task::multilabel) x["auc"] = finite(r.auc);
      per.push_back(x);
    }
    j["per_class"] = per;
  }
  if (confusion.defined()) {
    json cm = json::array();
    for (int64_t i = 0; i < confusion.size(0); ++i) {
      json row = json::array();
      for (int64_t k = 0; k < confusion.size(1); ++k) row.push_back(confusion[i][k].item<int64_t>());
      cm.push_back(row);
    }
    j["confusion"] = cm;
    json mc = json::array();
    for (auto& c : most_confused)
      mc.push_back({{"true", names[static_cast<size_t>(c.truth)]},
                    {"predicted", names[static_cast<size_t>(c.predicted)]},
                    {"count", c.count}});
    j["most_confused"] = mc;
  }
  return j;
}

}  // namespace kg::metric
