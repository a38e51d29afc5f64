// Quadratic weighted kappa (Cohen 1968; Ben Hamner's Kaggle quadratic_weighted_kappa):
// 1 - sum(w * O) / sum(w * E), w_ij = (i - j)^2 / (R - 1)^2, O the confusion matrix, E the outer
// product of its marginals / N. Multiclass: arg-max class vs target over classes 0..K-1. Regression
// (one output): targets rounded, predictions rounded half to even and clipped to the targets' observed
// integer range [min, max]. NaN when undefined (every target and prediction the same single value).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <torch/torch.h>

#include "core/error.h"
#include "metric/metric.h"

namespace kg::metric {
namespace {

struct QwkOptions {};

double kappa(const std::vector<int64_t>& a, const std::vector<int64_t>& b, int64_t lo, int64_t hi) {
  const int64_t r = hi - lo + 1;
  const size_t rr = static_cast<size_t>(r);
  std::vector<double> o(rr * rr, 0.0), ha(rr, 0.0), hb(rr, 0.0);
  for (size_t i = 0; i < a.size(); ++i) {
    const size_t x = static_cast<size_t>(a[i] - lo), y = static_cast<size_t>(b[i] - lo);
    o[x * rr + y] += 1;
    ha[x] += 1;
    hb[y] += 1;
  }
  const double n = static_cast<double>(a.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < rr; ++i)
    for (size_t j = 0; j < rr; ++j) {
      const double d = static_cast<double>(i) - static_cast<double>(j), w = d * d;
      num += w * o[i * rr + j];
      den += w * ha[i] * hb[j] / n;
    }
  if (den == 0) return std::numeric_limits<double>::quiet_NaN();
  return 1.0 - num / den;  // the (R - 1)^2 normalisation cancels
}

class Qwk : public detail::RowsMetric {
 public:
  explicit Qwk(const MetricContext& ctx) : multiclass_(ctx.task == Task::multiclass) {
    KG_CHECK(multiclass_ || ctx.num_outputs <= 1, ConfigError,
             "metric qwk on a regression task needs one target column, "
             "the model has ",
             ctx.num_outputs, " outputs");
  }
  bool higher_is_better() const override { return true; }

 protected:
  double compute_rows(const at::Tensor& preds, const at::Tensor& targets) const override {
    auto p = detail::preds_2d(preds, "qwk");
    const int64_t n = p.size(0);
    std::vector<int64_t> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    int64_t lo = 0, hi = 0;
    if (multiclass_) {
      auto t = detail::class_targets(targets, n, "qwk").contiguous();
      auto q = p.argmax(1).contiguous();
      hi = p.size(1) - 1;
      for (int64_t i = 0; i < n; ++i) {
        a[static_cast<size_t>(i)] = std::clamp<int64_t>(t.data_ptr<int64_t>()[i], lo, hi);
        b[static_cast<size_t>(i)] = q.data_ptr<int64_t>()[i];
      }
    } else {
      KG_CHECK(p.size(1) == 1, DataError, "metric qwk: expected one regression output, got ", p.size(1));
      auto t = detail::dense_targets(targets, p, "qwk").contiguous();
      const double* td = t.data_ptr<double>();
      const double* pd = p.contiguous().data_ptr<double>();
      for (int64_t i = 0; i < n; ++i) {
        // Non-finite (a diverged model) or absurd values have no rating.
        if (std::fabs(td[i]) > 1e15 || !std::isfinite(td[i]) || !std::isfinite(pd[i]))
          return std::numeric_limits<double>::quiet_NaN();
        a[static_cast<size_t>(i)] = static_cast<int64_t>(std::nearbyint(td[i]));
      }
      lo = *std::min_element(a.begin(), a.end());
      hi = *std::max_element(a.begin(), a.end());
      KG_CHECK(hi - lo <= 10000, DataError, "metric qwk: regression targets span [", lo, ", ", hi,
               "]; kappa expects integer ratings over a small range");
      for (int64_t i = 0; i < n; ++i)
        b[static_cast<size_t>(i)] =
            static_cast<int64_t>(std::clamp(std::nearbyint(pd[i]), static_cast<double>(lo), static_cast<double>(hi)));
    }
    return kappa(a, b, lo, hi);
  }

 private:
  bool multiclass_;
};

KG_REGISTER(metric_registry(), "qwk",
            "quadratic weighted kappa; multiclass: arg-max class; regression: rounded prediction clipped to the "
            "targets' integer range",
            "[metric]\nnames = [\"qwk\"]", config::Fields<QwkOptions>(),
            [](const QwkOptions&, const MetricContext& ctx) -> MetricPtr { return std::make_unique<Qwk>(ctx); });
KG_METRIC_TASKS("qwk", {Task::multiclass, Task::regression});

}  // namespace
}  // namespace kg::metric
