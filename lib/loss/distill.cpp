// Knowledge distillation (Hinton et al. 2015): the hard loss plus the KL divergence between the teacher's and the
// student's temperature-softened outputs, scaled by T^2 so the soft term's gradient keeps its size as T grows.
// The teacher's logits ride in the targets (loss.h: distill), so every path a batch takes (accumulation, out-of-memory
// slicing, CUDA graphs, data parallel) carries them with no extra plumbing.
#include <cmath>

#include <torch/torch.h>

#include "core/error.h"
#include "loss/loss.h"

namespace kg::loss {
namespace {

class Distill : public Loss {
 public:
  Distill(LossPtr hard, const LossOptions& o, const LossContext& ctx)
      : hard_(std::move(hard)), alpha_(o.distill_alpha), t_(o.distill_temperature), task_(ctx.task) {}

  at::Tensor forward(const at::Tensor& logits, const at::Tensor& targets) const override {
    const int64_t k = logits.size(1);
    if (targets.dim() != 2 || targets.size(1) <= k) return hard_->forward(logits, targets);  // no teacher: validation
    const int64_t d = targets.size(1) - k;
    KG_CHECK(d == k || (d == 1 && task_ == Task::multiclass), DataError, "loss.distill: targets ", targets.sizes(),
             " are neither [N, 1 + K] nor [N, 2K] for K = ", k, " outputs");
    at::Tensor hard = targets.narrow(1, 0, d);
    if (task_ == Task::multiclass && d == 1) hard = hard.squeeze(1).to(at::kLong);
    const at::Tensor h = hard_->forward(logits, hard);
    if (alpha_ == 0) return h;
    const at::Tensor teacher = targets.narrow(1, d, k).to(logits.dtype());
    return h * (1 - alpha_) + soft_term(logits, teacher) * alpha_;
  }

 private:
  // T^2 * KL(teacher_T || student_T), averaged over rows (multiclass, as kl_div's "batchmean") or cells.
  at::Tensor soft_term(const at::Tensor& logits, const at::Tensor& teacher) const {
    const at::Tensor s = logits / t_, t = teacher / t_;
    if (task_ == Task::multiclass) {
      const at::Tensor log_q = torch::log_softmax(t, 1);
      return (log_q.exp() * (log_q - torch::log_softmax(s, 1))).sum(1).mean() * (t_ * t_);
    }
    // Bernoulli KL per output: q log(q / p) + (1 - q) log((1 - q) / (1 - p)), from log-sigmoids (stable).
    const at::Tensor log_q = torch::log_sigmoid(t), log_1q = torch::log_sigmoid(-t);
    const at::Tensor kl =
        log_q.exp() * (log_q - torch::log_sigmoid(s)) + log_1q.exp() * (log_1q - torch::log_sigmoid(-s));
    return kl.mean() * (t_ * t_);
  }

  LossPtr hard_;
  double alpha_, t_;
  Task task_;
};

}  // namespace

LossPtr distill(LossPtr hard, const LossOptions& o, const LossContext& ctx) {
  KG_CHECK(ctx.task != Task::regression, ConfigError, "loss.distill.teacher = \"", o.distill_teacher,
           "\": data.task = \"regression\" has no class distribution to distill; distillation is for multiclass, "
           "binary and multilabel tasks (unset loss.distill)");
  KG_CHECK(o.distill_alpha >= 0 && o.distill_alpha <= 1, ConfigError, "loss.distill.alpha: expected 0..1, got ",
           o.distill_alpha);
  KG_CHECK(o.distill_temperature > 0 && std::isfinite(o.distill_temperature), ConfigError,
           "loss.distill.temperature: expected > 0, got ", o.distill_temperature);
  return std::make_unique<Distill>(std::move(hard), o, ctx);
}

}  // namespace kg::loss
