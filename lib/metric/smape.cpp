// SMAPE in percent (0..200) as Kaggle's competitions score it: 100 * mean over every (row, output)
// cell of 2 |p - y| / (|p| + |y|), a cell with p = y = 0 counting 0. Same scale as the smape loss.
#include <limits>

#include <torch/torch.h>

#include "metric/metric.h"

namespace kg::metric {
namespace {

struct SmapeOptions {};

class Smape : public Metric {
 public:
  void reset() override {
    sum_ = 0;
    count_ = 0;
  }
  void update(const at::Tensor& preds, const at::Tensor& targets) override {
    auto p = detail::preds_2d(preds, "smape");
    auto t = detail::dense_targets(targets, p, "smape");
    auto den = p.abs() + t.abs();
    auto cell = torch::where(den > 0, 2.0 * (p - t).abs() / den.clamp_min(std::numeric_limits<double>::min()),
                             torch::zeros_like(den));
    sum_ += cell.sum().item<double>();
    count_ += p.numel();
  }
  double compute() const override {
    return count_ ? 100.0 * sum_ / static_cast<double>(count_) : std::numeric_limits<double>::quiet_NaN();
  }
  bool higher_is_better() const override { return false; }

 private:
  double sum_ = 0;
  int64_t count_ = 0;
};

KG_REGISTER(metric_registry(), "smape",
            "symmetric mean absolute percentage error in percent, 0..200; 0/0 counts 0 (regression)",
            "[metric]\nnames = [\"smape\"]", config::Fields<SmapeOptions>(),
            [](const SmapeOptions&, const MetricContext&) -> MetricPtr { return std::make_unique<Smape>(); });
KG_METRIC_TASKS("smape", {Task::regression});

}  // namespace
}  // namespace kg::metric
