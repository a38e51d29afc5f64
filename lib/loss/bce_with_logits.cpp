// Binary cross-entropy on logits, as torch.nn.BCEWithLogitsLoss(pos_weight=...) with mean reduction
// over every (row, label) cell; label smoothing as timm's BinaryCrossEntropy: t * (1 - eps) + eps / 2.
#include <torch/torch.h>

#include "core/error.h"
#include "loss/loss.h"

namespace kg::loss {
namespace {

// Keys of [loss] when name = "bce_with_logits"; each field's doc is in bce_with_logits_fields() below and
// docs/reference.md.
struct BceOptions {
  config::json pos_weight = 1.0;
  double label_smoothing = 0.0;
};

class BceWithLogits : public Loss {
 public:
  BceWithLogits(const BceOptions& o, const LossContext& ctx) : eps_(o.label_smoothing) {
    std::vector<double> pw;
    if (o.pos_weight.is_array()) {
      for (auto& x : o.pos_weight) pw.push_back(x.get<double>());
      KG_CHECK(static_cast<int64_t>(pw.size()) == ctx.num_outputs, ConfigError, "loss.pos_weight has ", pw.size(),
               " values but the model has K = ", ctx.num_outputs,
               " outputs (labels): give one number, or one per label");
    } else {
      pw.assign(static_cast<size_t>(std::max<int64_t>(ctx.num_outputs, 1)), o.pos_weight.get<double>());
    }
    bool all_one = true;
    for (double x : pw) all_one = all_one && x == 1.0;
    if (!all_one) pos_weight_ = DeviceConstant(torch::tensor(pw, torch::kFloat));
  }
  at::Tensor forward(const at::Tensor& logits, const at::Tensor& targets) const override {
    auto t = detail::dense_targets(logits, targets, "bce_with_logits");
    if (eps_ > 0) t = t * (1.0 - eps_) + eps_ / 2.0;
    return torch::binary_cross_entropy_with_logits(logits, t, {}, pos_weight_.like(logits), at::Reduction::Mean);
  }

 private:
  double eps_;
  DeviceConstant pos_weight_;
};

config::Fields<BceOptions> bce_with_logits_fields() {
  config::Fields<BceOptions> f;
  f.field("pos_weight", &BceOptions::pos_weight,
          "weight of the positive term: one number (> 0) or one per label; as BCEWithLogitsLoss(pos_weight=)")
      .check([](const config::json& v) -> std::string {
        auto ok = [](const config::json& x) { return x.is_number() && x.get<double>() > 0; };
        if (ok(v)) return "";
        if (v.is_array() && !v.empty()) {
          bool all = true;
          for (auto& x : v) all = all && ok(x);
          if (all) return "";
        }
        return "expected a number > 0 or a non-empty array of numbers > 0 (one per label), got " + v.dump();
      });
  f.field("label_smoothing", &BceOptions::label_smoothing, "eps: targets become t * (1 - eps) + eps / 2 (timm style)")
      .min(0)
      .max(0.999);
  return f;
}

KG_REGISTER(loss_registry(), "bce_with_logits",
            "sigmoid binary cross-entropy per label, with pos_weight and label smoothing (binary, multilabel)",
            "[loss]\nname = \"bce_with_logits\"\npos_weight = 2.0\nlabel_smoothing = 0.05", bce_with_logits_fields(),
            [](const BceOptions& o, const LossContext& ctx) -> LossPtr {
              return std::make_unique<BceWithLogits>(o, ctx);
            });
KG_LOSS_TASKS("bce_with_logits", {Task::binary, Task::multilabel});

}  // namespace
}  // namespace kg::loss
