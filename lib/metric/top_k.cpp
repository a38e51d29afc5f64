// Top-k accuracy (multiclass): fraction of rows whose target is among the k most probable classes
// (torch.topk; k is capped at K). Registered as top_k (k = 5, the ImageNet convention) and top_3.
#include <algorithm>
#include <limits>

#include <torch/torch.h>

#include "metric/metric.h"

namespace kg::metric {
namespace {

struct TopKOptions {};

class TopK : public Metric {
 public:
  TopK(int64_t k, const char* name) : k_(k), name_(name) {}
  void reset() override { correct_ = total_ = 0; }
  void update(const at::Tensor& preds, const at::Tensor& targets) override {
    auto p = detail::preds_2d(preds, name_);
    auto t = detail::class_targets(targets, p.size(0), name_);
    auto top = std::get<1>(p.topk(std::min(k_, p.size(1)), 1));
    correct_ += top.eq(t.unsqueeze(1)).any(1).sum().item<int64_t>();
    total_ += t.size(0);
  }
  double compute() const override {
    return total_ ? static_cast<double>(correct_) / static_cast<double>(total_)
                  : std::numeric_limits<double>::quiet_NaN();
  }
  bool higher_is_better() const override { return true; }

 private:
  int64_t k_;
  const char* name_;
  int64_t correct_ = 0, total_ = 0;
};

KG_REGISTER(metric_registry(), "top_k", "top-5 accuracy: the label is among the 5 most probable classes (multiclass)",
            "[metric]\nnames = [\"accuracy\", \"top_k\"]", config::Fields<TopKOptions>(),
            [](const TopKOptions&, const MetricContext&) -> MetricPtr { return std::make_unique<TopK>(5, "top_k"); });
KG_METRIC_TASKS("top_k", {Task::multiclass});

KG_REGISTER(metric_registry(), "top_3", "top-3 accuracy: the label is among the 3 most probable classes (multiclass)",
            "[metric]\nnames = [\"accuracy\", \"top_3\"]", config::Fields<TopKOptions>(),
            [](const TopKOptions&, const MetricContext&) -> MetricPtr { return std::make_unique<TopK>(3, "top_3"); });
KG_METRIC_TASKS("top_3", {Task::multiclass});

}  // namespace
}  // namespace kg::metric
