// Focal loss (Lin et al. 2017, "Focal Loss for Dense Object Detection"): cross-entropy scaled by
// (1 - p_t)^gamma. Binary/multilabel: torchvision.ops.sigmoid_focal_loss(reduction="mean"), per cell
// with alpha_t = alpha * t + (1 - alpha) * (1 - t). Multiclass: softmax focal,
// -sum_c t_c (1 - p_c)^gamma log p_c averaged over rows (hard targets are one-hot t); alpha is not used.
#include <torch/torch.h>

#include "core/error.h"
#include "loss/loss.h"

namespace kg::loss {
namespace {

// Keys of [loss] when name = "focal"; each field's doc is in focal_fields() below and docs/reference.md.
struct FocalOptions {
  double gamma = 2.0;
  double alpha = 0.25;
};

class Focal : public Loss {
 public:
  Focal(const FocalOptions& o, const LossContext& ctx)
      : gamma_(o.gamma), alpha_(o.alpha), softmax_(ctx.task == Task::multiclass) {}
  at::Tensor forward(const at::Tensor& logits, const at::Tensor& targets) const override {
    return softmax_ ? softmax_focal(logits, targets) : sigmoid_focal(logits, targets);
  }

 private:
  at::Tensor sigmoid_focal(const at::Tensor& logits, const at::Tensor& targets) const {
    auto t = detail::dense_targets(logits, targets, "focal");
    auto p = torch::sigmoid(logits);
    auto ce = torch::binary_cross_entropy_with_logits(logits, t, {}, {}, at::Reduction::None);
    auto p_t = p * t + (1 - p) * (1 - t);
    auto loss = ce * torch::pow(1 - p_t, gamma_);
    if (alpha_ >= 0) loss = loss * (alpha_ * t + (1 - alpha_) * (1 - t));
    return loss.mean();
  }
  at::Tensor softmax_focal(const at::Tensor& logits, const at::Tensor& targets) const {
    auto logp = torch::log_softmax(logits, 1);
    auto w = torch::pow(1 - logp.exp(), gamma_);
    if (targets.dim() == 1) {
      KG_CHECK(!targets.is_floating_point(), DataError, "loss focal: 1-D targets must be int64 class indices, got ",
               targets.dtype());
      auto idx = targets.to(torch::kLong).unsqueeze(1);
      return -(w.gather(1, idx) * logp.gather(1, idx)).mean();
    }
    KG_CHECK(targets.sizes() == logits.sizes(), DataError, "loss focal: soft targets must be [N, K] like the logits ",
             logits.sizes(), ", got ", targets.sizes());
    return -(targets.to(logits.dtype()) * w * logp).sum(1).mean();
  }

  double gamma_, alpha_;
  bool softmax_;
};

config::Fields<FocalOptions> focal_fields() {
  config::Fields<FocalOptions> f;
  f.field("gamma", &FocalOptions::gamma, "focusing exponent on (1 - p_t); 0 gives cross-entropy").min(0);
  f.field("alpha", &FocalOptions::alpha,
          "binary/multilabel: weight of positive cells in [0, 1], -1 = none (torchvision); multiclass: not used")
      .check([](const config::json& v) -> std::string {
        double a = v.get<double>();
        return a == -1.0 || (a >= 0 && a <= 1) ? ""
                                               : "expected a number in [0, 1] or -1 (no weighting), got " + v.dump();
      });
  return f;
}

KG_REGISTER(loss_registry(), "focal",
            "focal loss: softmax (multiclass) or torchvision's sigmoid focal (binary, multilabel)",
            "[loss]\nname = \"focal\"\ngamma = 2.0\nalpha = 0.25", focal_fields(),
            [](const FocalOptions& o, const LossContext& ctx) -> LossPtr { return std::make_unique<Focal>(o, ctx); });
KG_LOSS_TASKS("focal", {Task::multiclass, Task::binary, Task::multilabel});

}  // namespace
}  // namespace kg::loss
