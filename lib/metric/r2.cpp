// Coefficient of determination per output column, 1 - SS_res / SS_tot, averaged over columns
// uniformly (sklearn's r2_score default). A constant target column scores 1 when predicted exactly,
// else 0 (sklearn's force_finite).
#include <limits>

#include <torch/torch.h>

#include "metric/metric.h"

namespace kg::metric {
namespace {

struct R2Options {};

class R2 : public detail::RowsMetric {
 public:
  bool higher_is_better() const override { return true; }

 protected:
  double compute_rows(const at::Tensor& preds, const at::Tensor& targets) const override {
    auto p = detail::preds_2d(preds, "r2");
    auto t = detail::dense_targets(targets, p, "r2");
    auto ss_res = (t - p).pow(2).sum(0).contiguous();
    auto ss_tot = (t - t.mean(0, true)).pow(2).sum(0).contiguous();
    double sum = 0;
    const int64_t k = p.size(1);
    for (int64_t c = 0; c < k; ++c) {
      const double res = ss_res.data_ptr<double>()[c], tot = ss_tot.data_ptr<double>()[c];
      sum += tot != 0 ? 1.0 - res / tot : (res == 0 ? 1.0 : 0.0);
    }
    return k ? sum / static_cast<double>(k) : std::numeric_limits<double>::quiet_NaN();
  }
};

KG_REGISTER(metric_registry(), "r2", "coefficient of determination, averaged over output columns (regression)",
            "[metric]\nnames = [\"r2\"]", config::Fields<R2Options>(),
            [](const R2Options&, const MetricContext&) -> MetricPtr { return std::make_unique<R2>(); });
KG_METRIC_TASKS("r2", {Task::regression});

}  // namespace
}  // namespace kg::metric
