// Softmax cross-entropy with label smoothing (Szegedy et al. 2016) and class weights, matching
// torch.nn.functional.cross_entropy(weight=..., label_smoothing=...): hard targets use its weighted
// mean (divided by the summed weights of the rows' classes); soft targets [N, K] are smoothed as
// (1 - eps) * t + eps / K, weighted per class and averaged over the N rows, as PyTorch does.
#include <torch/nn/functional/loss.h>
#include <torch/nn/functional/activation.h>

#include "core/error.h"
#include "loss/loss.h"

namespace kg::loss {
namespace {

// Keys of [loss] when name = "cross_entropy"; each field's doc is in cross_entropy_fields() below and
// docs/reference.md.
struct CrossEntropyOptions {
  double label_smoothing = 0.0;
  std::vector<double> class_weights;
};

class CrossEntropy : public Loss {
 public:
  CrossEntropy(const CrossEntropyOptions& o, const LossContext& ctx) : eps_(o.label_smoothing) {
    if (!o.class_weights.empty()) {
      KG_CHECK(static_cast<int64_t>(o.class_weights.size()) == ctx.num_outputs, ConfigError, "loss.class_weights has ",
               o.class_weights.size(), " values but the model has K = ", ctx.num_outputs,
               " classes: give one weight per class, in class order");
      weight_ = DeviceConstant(torch::tensor(o.class_weights, torch::kFloat));
    }
  }
  at::Tensor forward(const at::Tensor& logits, const at::Tensor& targets) const override {
    const at::Tensor w = weight_.like(logits);
    if (targets.dim() == 1) {
      KG_CHECK(!targets.is_floating_point(), DataError,
               "loss cross_entropy: 1-D targets must be int64 class indices, got ", targets.dtype());
      namespace F = torch::nn::functional;
      return F::cross_entropy(logits, targets.to(torch::kLong),
                              F::CrossEntropyFuncOptions().weight(w).label_smoothing(eps_));
    }
    KG_CHECK(targets.sizes() == logits.sizes(), DataError,
             "loss cross_entropy: soft targets must be [N, K] like the logits ", logits.sizes(), ", got ",
             targets.sizes());
    const auto k = static_cast<double>(logits.size(1));
    auto t = targets.to(logits.dtype()) * (1.0 - eps_) + eps_ / k;
    auto logp = torch::log_softmax(logits, 1);
    if (w.defined()) logp = logp * w;
    return -(t * logp).sum(1).mean();
  }

 private:
  double eps_;
  DeviceConstant weight_;
};

config::Fields<CrossEntropyOptions> cross_entropy_fields() {
  config::Fields<CrossEntropyOptions> f;
  f.field("label_smoothing", &CrossEntropyOptions::label_smoothing, "weight moved from the true class to all classes")
      .min(0)
      .max(0.999);
  f.field("class_weights", &CrossEntropyOptions::class_weights,
          "one weight per class, in class order (empty: unweighted); as torch's cross_entropy weight=")
      .min(0);
  return f;
}

KG_REGISTER(loss_registry(), "cross_entropy",
            "softmax cross-entropy with label smoothing and class weights (multiclass; hard or soft targets)",
            "[loss]\nname = \"cross_entropy\"\nlabel_smoothing = 0.1", cross_entropy_fields(),
            [](const CrossEntropyOptions& o, const LossContext& ctx) -> LossPtr {
              return std::make_unique<CrossEntropy>(o, ctx);
            });
KG_LOSS_TASKS("cross_entropy", {Task::multiclass});

}  // namespace
}  // namespace kg::loss
