#include <torch/torch.h>

#include "metric/metric.h"

namespace kg::metric {
namespace {

struct AccuracyOptions {};

// Fraction of rows whose arg-max class equals the target.
class Accuracy : public Metric {
 public:
  void reset() override { correct_ = total_ = 0; }
  void update(const at::Tensor& probs, const at::Tensor& targets) override {
    correct_ += probs.argmax(1).eq(targets.to(probs.device())).sum().item<int64_t>();
    total_ += targets.size(0);
  }
  double compute() const override { return total_ ? static_cast<double>(correct_) / static_cast<double>(total_) : 0.0; }
  bool higher_is_better() const override { return true; }

 private:
  int64_t correct_ = 0, total_ = 0;
};

KG_REGISTER(metric_registry(), "accuracy", "fraction of rows whose top class is the label", "[train]\nmetric = \"accuracy\"",
            config::Fields<AccuracyOptions>(),
            [](const AccuracyOptions&, const MetricContext&) -> MetricPtr { return std::make_unique<Accuracy>(); });

}  // namespace
}  // namespace kg::metric
