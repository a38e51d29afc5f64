// Log loss. Multiclass as sklearn's log_loss (eps = 1e-15): probabilities clipped to
// [1e-15, 1 - 1e-15], rows renormalised, -mean log p[target] (soft targets: -mean sum_c t_c log p_c).
// Binary/multilabel: mean binary cross-entropy over every (row, label) cell with p clipped the same
// way (the mean of the column-wise log losses).
#include <limits>

#include <torch/torch.h>

#include "metric/metric.h"

namespace kg::metric {
namespace {

constexpr double kEps = 1e-15;

struct LogLossOptions {};

class LogLoss : public Metric {
 public:
  explicit LogLoss(const MetricContext& ctx) : multiclass_(ctx.task == Task::multiclass) {}
  void reset() override {
    sum_ = 0;
    count_ = 0;
  }
  void update(const at::Tensor& preds, const at::Tensor& targets) override {
    auto p = detail::preds_2d(preds, "log_loss").clamp(kEps, 1 - kEps);
    if (multiclass_) {
      p = p / p.sum(1, true);
      auto logp = p.log();
      if (targets.dim() == 2 && targets.is_floating_point()) {
        auto t = detail::dense_targets(targets, p, "log_loss");
        sum_ -= (t * logp).sum().item<double>();
      } else {
        auto t = detail::class_targets(targets, p.size(0), "log_loss");
        sum_ -= logp.gather(1, t.unsqueeze(1)).sum().item<double>();
      }
      count_ += p.size(0);
    } else {
      auto t = detail::dense_targets(targets, p, "log_loss");
      sum_ -= (t * p.log() + (1 - t) * (1 - p).log()).sum().item<double>();
      count_ += p.numel();
    }
  }
  double compute() const override {
    return count_ ? sum_ / static_cast<double>(count_) : std::numeric_limits<double>::quiet_NaN();
  }
  bool higher_is_better() const override { return false; }

 private:
  bool multiclass_;
  double sum_ = 0;
  int64_t count_ = 0;
};

KG_REGISTER(metric_registry(), "log_loss",
            "log loss with probabilities clipped to [1e-15, 1 - 1e-15] (sklearn); binary/multilabel: mean over cells",
            "[metric]\nnames = [\"log_loss\"]", config::Fields<LogLossOptions>(),
            [](const LogLossOptions&, const MetricContext& ctx) -> MetricPtr {
              return std::make_unique<LogLoss>(ctx);
            });
KG_METRIC_TASKS("log_loss", {Task::multiclass, Task::binary, Task::multilabel});

}  // namespace
}  // namespace kg::metric
