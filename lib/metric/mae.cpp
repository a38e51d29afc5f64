// Mean absolute error over every (row, output) cell (= sklearn's uniform average over columns).
#include <limits>

#include <torch/torch.h>

#include "metric/metric.h"

namespace kg::metric {
namespace {

struct MaeOptions {};

class Mae : public Metric {
 public:
  void reset() override {
    sum_ = 0;
    count_ = 0;
  }
  void update(const at::Tensor& preds, const at::Tensor& targets) override {
    auto p = detail::preds_2d(preds, "mae");
    auto t = detail::dense_targets(targets, p, "mae");
    sum_ += (p - t).abs().sum().item<double>();
    count_ += p.numel();
  }
  double compute() const override {
    return count_ ? sum_ / static_cast<double>(count_) : std::numeric_limits<double>::quiet_NaN();
  }
  bool higher_is_better() const override { return false; }

 private:
  double sum_ = 0;
  int64_t count_ = 0;
};

KG_REGISTER(metric_registry(), "mae", "mean absolute error over all outputs (regression)",
            "[metric]\nnames = [\"mae\"]", config::Fields<MaeOptions>(),
            [](const MaeOptions&, const MetricContext&) -> MetricPtr { return std::make_unique<Mae>(); });
KG_METRIC_TASKS("mae", {Task::regression});

}  // namespace
}  // namespace kg::metric
