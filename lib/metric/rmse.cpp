// Root mean squared error per output column, averaged over columns uniformly (sklearn's
// root_mean_squared_error default; Kaggle's MCRMSE). One column: the plain RMSE.
#include <cmath>
#include <limits>
#include <vector>

#include <torch/torch.h>

#include "metric/metric.h"

namespace kg::metric {
namespace {

struct RmseOptions {};

class Rmse : public Metric {
 public:
  void reset() override {
    sq_.clear();
    rows_ = 0;
  }
  void update(const at::Tensor& preds, const at::Tensor& targets) override {
    auto p = detail::preds_2d(preds, "rmse");
    auto t = detail::dense_targets(targets, p, "rmse");
    auto s = (p - t).pow(2).sum(0).contiguous();
    sq_.resize(static_cast<size_t>(p.size(1)), 0.0);
    for (int64_t c = 0; c < p.size(1); ++c) sq_[static_cast<size_t>(c)] += s.data_ptr<double>()[c];
    rows_ += p.size(0);
  }
  double compute() const override {
    if (rows_ == 0 || sq_.empty()) return std::numeric_limits<double>::quiet_NaN();
    double sum = 0;
    for (double s : sq_) sum += std::sqrt(s / static_cast<double>(rows_));
    return sum / static_cast<double>(sq_.size());
  }
  bool higher_is_better() const override { return false; }

 private:
  std::vector<double> sq_;
  int64_t rows_ = 0;
};

KG_REGISTER(metric_registry(), "rmse", "root mean squared error, averaged over output columns (regression)",
            "[metric]\nnames = [\"rmse\"]", config::Fields<RmseOptions>(),
            [](const RmseOptions&, const MetricContext&) -> MetricPtr { return std::make_unique<Rmse>(); });
KG_METRIC_TASKS("rmse", {Task::regression});

}  // namespace
}  // namespace kg::metric
