// F1 = 2 TP / (2 TP + FP + FN), as sklearn's f1_score. Multiclass: arg-max class vs target; macro
// averages over the classes present in targets or predictions (sklearn's label set), micro pools all
// classes (= accuracy). Binary and multilabel: a cell is predicted positive when p > 0.5; macro
// averages over every label column (a label with no positive target or prediction counts 0, sklearn's
// zero_division default), micro pools all cells; binary is the positive class's F1 either way.
#include <limits>
#include <vector>

#include <torch/torch.h>

#include "metric/metric.h"

namespace kg::metric {
namespace {

struct F1Options {};

class F1 : public Metric {
 public:
  F1(const MetricContext& ctx, bool micro, const char* name)
      : multiclass_(ctx.task == Task::multiclass), micro_(micro), name_(name) {}
  void reset() override {
    tp_.clear();
    fp_.clear();
    fn_.clear();
    rows_ = 0;
  }
  void update(const at::Tensor& preds, const at::Tensor& targets) override {
    auto p = detail::preds_2d(preds, name_);
    const int64_t k = p.size(1);
    at::Tensor yp, yt;  // bool [N, K]
    if (multiclass_) {
      auto t = detail::class_targets(targets, p.size(0), name_);
      yp = torch::zeros_like(p, torch::kBool).scatter_(1, p.argmax(1, true), true);
      yt = torch::zeros_like(p, torch::kBool).scatter_(1, t.clamp(0, k - 1).unsqueeze(1), true);
    } else {
      yp = p.gt(0.5);
      yt = detail::dense_targets(targets, p, name_).gt(0.5);
    }
    auto add = [k](std::vector<int64_t>& acc, const at::Tensor& cells) {
      auto s = cells.sum(0).to(torch::kLong).contiguous();
      acc.resize(static_cast<size_t>(k), 0);
      for (int64_t c = 0; c < k; ++c) acc[static_cast<size_t>(c)] += s.data_ptr<int64_t>()[c];
    };
    add(tp_, yp & yt);
    add(fp_, yp & ~yt);
    add(fn_, ~yp & yt);
    rows_ += p.size(0);
  }
  double compute() const override {
    if (rows_ == 0) return std::numeric_limits<double>::quiet_NaN();
    auto f1 = [](double tp, double fp, double fn) { return 2 * tp + fp + fn > 0 ? 2 * tp / (2 * tp + fp + fn) : 0.0; };
    if (micro_) {
      double tp = 0, fp = 0, fn = 0;
      for (size_t c = 0; c < tp_.size(); ++c) tp += tp_[c], fp += fp_[c], fn += fn_[c];
      return f1(tp, fp, fn);
    }
    double sum = 0;
    int64_t labels = 0;
    for (size_t c = 0; c < tp_.size(); ++c) {
      if (multiclass_ && tp_[c] + fp_[c] + fn_[c] == 0) continue;  // class absent from targets and predictions
      sum += f1(tp_[c], fp_[c], fn_[c]);
      ++labels;
    }
    return labels ? sum / static_cast<double>(labels) : 0.0;
  }
  bool higher_is_better() const override { return true; }

 private:
  bool multiclass_, micro_;
  const char* name_;
  std::vector<int64_t> tp_, fp_, fn_;
  int64_t rows_ = 0;
};

KG_REGISTER(metric_registry(), "f1",
            "macro F1 (sklearn average=\"macro\"); threshold 0.5 for binary/multilabel, arg-max for multiclass",
            "[metric]\nnames = [\"f1\"]", config::Fields<F1Options>(),
            [](const F1Options&, const MetricContext& ctx) -> MetricPtr {
              return std::make_unique<F1>(ctx, false, "f1");
            });
KG_METRIC_TASKS("f1", {Task::multiclass, Task::binary, Task::multilabel});

KG_REGISTER(metric_registry(), "f1_micro",
            "micro F1 over all classes or label cells (sklearn average=\"micro\"); multiclass: equals accuracy",
            "[metric]\nnames = [\"f1_micro\"]", config::Fields<F1Options>(),
            [](const F1Options&, const MetricContext& ctx) -> MetricPtr {
              return std::make_unique<F1>(ctx, true, "f1_micro");
            });
KG_METRIC_TASKS("f1_micro", {Task::multiclass, Task::binary, Task::multilabel});

}  // namespace
}  // namespace kg::metric
