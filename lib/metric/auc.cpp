// ROC AUC by the Mann-Whitney U statistic with average ranks for ties (equal to sklearn's
// roc_auc_score): binary on its one column; multilabel the macro average over labels; multiclass the
// macro one-vs-rest average over classes (sklearn multi_class="ovr", average="macro"). A column whose
// targets hold one class only has no AUC: it is left out of the average, and the result is NaN when
// no column has both classes (sklearn raises instead).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include <torch/torch.h>

#include "metric/metric.h"

namespace kg::metric {
namespace {

struct AucOptions {};

// AUC of one column; NaN when `positive` is all true or all false.
double column_auc(const double* score, const std::vector<char>& positive, int64_t n, int64_t stride) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return score[a * stride] < score[b * stride]; });
  double rank_sum = 0;
  int64_t n_pos = 0;
  for (int64_t i = 0; i < n;) {
    int64_t j = i;
    while (j + 1 < n &&
           score[order[static_cast<size_t>(j + 1)] * stride] == score[order[static_cast<size_t>(i)] * stride])
      ++j;
    const double avg_rank = 0.5 * static_cast<double>(i + j) + 1.0;  // ranks are 1-based
    for (int64_t k = i; k <= j; ++k)
      if (positive[static_cast<size_t>(order[static_cast<size_t>(k)])]) {
        rank_sum += avg_rank;
        ++n_pos;
      }
    i = j + 1;
  }
  const int64_t n_neg = n - n_pos;
  if (n_pos == 0 || n_neg == 0) return std::numeric_limits<double>::quiet_NaN();
  const double u = rank_sum - static_cast<double>(n_pos) * static_cast<double>(n_pos + 1) / 2.0;
  return u / (static_cast<double>(n_pos) * static_cast<double>(n_neg));
}

class Auc : public detail::RowsMetric {
 public:
  explicit Auc(const MetricContext& ctx) : multiclass_(ctx.task == Task::multiclass) {}
  bool higher_is_better() const override { return true; }

 protected:
  double compute_rows(const at::Tensor& preds, const at::Tensor& targets) const override {
    auto p = detail::preds_2d(preds, "auc").contiguous();
    const int64_t n = p.size(0), k = p.size(1);
    if (torch::isnan(p).any().item<bool>()) return std::numeric_limits<double>::quiet_NaN();
    at::Tensor pos;  // bool [N, K]
    if (multiclass_) {
      auto t = detail::class_targets(targets, n, "auc");
      pos = torch::zeros({n, k}, torch::kBool);
      pos.scatter_(1, t.clamp(0, k - 1).unsqueeze(1), true);
    } else {
      pos = detail::dense_targets(targets, p, "auc").gt(0.5);
    }
    pos = pos.contiguous();
    const bool* pd = pos.data_ptr<bool>();
    const double* sd = p.data_ptr<double>();
    double sum = 0;
    int64_t defined = 0;
    std::vector<char> col(static_cast<size_t>(n));
    for (int64_t c = 0; c < k; ++c) {
      for (int64_t i = 0; i < n; ++i) col[static_cast<size_t>(i)] = pd[i * k + c];
      double a = column_auc(sd + c, col, n, k);
      if (std::isnan(a)) continue;
      sum += a;
      ++defined;
    }
    return defined ? sum / static_cast<double>(defined) : std::numeric_limits<double>::quiet_NaN();
  }

 private:
  bool multiclass_;
};

KG_REGISTER(metric_registry(), "auc",
            "ROC AUC (Mann-Whitney, ties at average rank); multilabel/multiclass: macro average over columns "
            "(one-vs-rest) that hold both classes; NaN when none does",
            "[metric]\nnames = [\"auc\"]", config::Fields<AucOptions>(),
            [](const AucOptions&, const MetricContext& ctx) -> MetricPtr { return std::make_unique<Auc>(ctx); });
KG_METRIC_TASKS("auc", {Task::binary, Task::multilabel, Task::multiclass});

}  // namespace
}  // namespace kg::metric
