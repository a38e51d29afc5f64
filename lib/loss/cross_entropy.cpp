// Cross-entropy with label smoothing (Szegedy et al. 2016), matching torch.nn.CrossEntropyLoss:
// the smoothed target is (1 - eps) * one_hot + eps / K.
#include <torch/nn/functional/loss.h>
#include <torch/nn/functional/activation.h>

#include "loss/loss.h"

namespace kg::loss {
namespace {

struct CrossEntropyOptions {
  double label_smoothing = 0.0;  ///< eps in [0, 1): weight moved from the true class to all classes
};

class CrossEntropy : public Loss {
 public:
  explicit CrossEntropy(const CrossEntropyOptions& o) : eps_(o.label_smoothing) {}
  at::Tensor forward(const at::Tensor& logits, const at::Tensor& targets) const override {
    if (targets.dim() == 1) {
      namespace F = torch::nn::functional;
      return F::cross_entropy(logits, targets, F::CrossEntropyFuncOptions().label_smoothing(eps_));
    }
    // Soft targets: smoothing applies to the given distribution as it does to a one-hot.
    auto k = static_cast<double>(logits.size(1));
    auto t = targets * (1.0 - eps_) + eps_ / k;
    return -(t * torch::log_softmax(logits, 1)).sum(1).mean();
  }

 private:
  double eps_;
};

config::Fields<CrossEntropyOptions> fields() {
  config::Fields<CrossEntropyOptions> f;
  f.field("label_smoothing", &CrossEntropyOptions::label_smoothing, "weight moved from the true class to all classes")
      .min(0).max(0.999);
  return f;
}

KG_REGISTER(loss_registry(), "cross_entropy", "softmax cross-entropy with optional label smoothing",
            "[loss]\nname = \"cross_entropy\"\nlabel_smoothing = 0.1", fields(),
            [](const CrossEntropyOptions& o, const LossContext&) -> LossPtr { return std::make_unique<CrossEntropy>(o); });

}  // namespace
}  // namespace kg::loss
