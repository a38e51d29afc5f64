// Accuracy. Multiclass: fraction of rows whose arg-max class is the target. Binary and multilabel:
// element-wise, the fraction of (row, label) cells where (p > 0.5) equals (t > 0.5) (fastai's
// accuracy_multi; for multilabel this is not exact-match/subset accuracy).
#include <cmath>
#include <limits>

#include <torch/torch.h>

#include "metric/metric.h"

namespace kg::metric {
namespace {

struct AccuracyOptions {};

class Accuracy : public Metric {
 public:
  explicit Accuracy(const MetricContext& ctx) : multiclass_(ctx.task == Task::multiclass) {}
  void reset() override { correct_ = total_ = 0; }
  void update(const at::Tensor& preds, const at::Tensor& targets) override {
    auto p = detail::preds_2d(preds, "accuracy");
    if (multiclass_) {
      auto t = detail::class_targets(targets, p.size(0), "accuracy");
      correct_ += p.argmax(1).eq(t).sum().item<int64_t>();
      total_ += t.size(0);
    } else {
      auto t = detail::dense_targets(targets, p, "accuracy");
      correct_ += p.gt(0.5).eq(t.gt(0.5)).sum().item<int64_t>();
      total_ += t.numel();
    }
  }
  double compute() const override {
    return total_ ? static_cast<double>(correct_) / static_cast<double>(total_)
                  : std::numeric_limits<double>::quiet_NaN();
  }
  bool higher_is_better() const override { return true; }

 private:
  bool multiclass_;
  int64_t correct_ = 0, total_ = 0;
};

KG_REGISTER(metric_registry(), "accuracy",
            "multiclass: fraction of rows whose top class is the label; binary/multilabel: fraction of cells with "
            "(p > 0.5) == label",
            "[metric]\nnames = [\"accuracy\"]", config::Fields<AccuracyOptions>(),
            [](const AccuracyOptions&, const MetricContext& ctx) -> MetricPtr {
              return std::make_unique<Accuracy>(ctx);
            });
KG_METRIC_TASKS("accuracy", {Task::multiclass, Task::binary, Task::multilabel});

}  // namespace
}  // namespace kg::metric
