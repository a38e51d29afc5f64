#include "train/adversarial.h"

#include <torch/torch.h>

#include "core/error.h"
#include "core/strings.h"

namespace kg::train {

AdversarialOptions adversarial_options(const TrainOptions& t) {
  return {t.adv_kind, t.adv_start_epoch, t.adv_eps, t.adv_lr, t.adv_param, t.adv_emb_name};
}

Adversary::Adversary(const AdversarialOptions& o, model::Network& net) : o_(o) {
  KG_CHECK(o.kind == "fgm" || o.kind == "awp", ConfigError, "train.adversarial.kind = \"", o.kind,
           "\": expected none, fgm or awp");
  eps_ = o.eps > 0 ? o.eps : (o.kind == "fgm" ? 1.0 : 0.2);
  const std::string& needle = o.kind == "fgm" ? o.emb_name : o.param;
  for (const auto& p : net.named_parameters(true))
    if (p.key().find(needle) != std::string::npos) params_.emplace_back(p.key(), p.value());
  all_ = net.parameters(true);
  KG_CHECK(!params_.empty(), ConfigError, "train.adversarial.", o.kind == "fgm" ? "emb_name" : "param", " = \"", needle,
           "\": no parameter of the network has it in its name",
           o.kind == "fgm" ? " (FGM perturbs the word embeddings: a text model's are \"word_embeddings\"; an image "
                             "model has none, use kind = \"awp\")"
                           : "");
}

void Adversary::before_clean_backward(bool first_of_update) {
  earlier_grads_.clear();
  if (o_.kind != "awp" || first_of_update) return;
  for (auto& p : all_) earlier_grads_.push_back(p.grad().defined() ? p.grad().clone() : at::Tensor());
}

void Adversary::perturb_fgm() {
  for (auto& [name, p] : params_) {
    if (!p.requires_grad() || !p.grad().defined()) continue;
    const at::Tensor g = p.grad().to(torch::kFloat);
    const at::Tensor norm = g.norm();
    const at::Tensor ok = torch::isfinite(norm) & (norm > 0);
    p.add_(torch::where(ok, eps_ * g / norm.clamp_min(1e-30), torch::zeros_like(g)).to(p.dtype()));
  }
}

void Adversary::perturb_awp() {
  constexpr double e = 1e-6;
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i].second;
    if (!p.requires_grad() || !p.grad().defined()) continue;
    const at::Tensor g = p.grad().to(torch::kFloat), w = saved_[i].to(torch::kFloat);
    const at::Tensor norm1 = g.norm(), norm2 = w.norm();
    const at::Tensor ok = torch::isfinite(norm1) & (norm1 > 0);
    const at::Tensor r = torch::where(ok, o_.lr * g / (norm1 + e) * (norm2 + e), torch::zeros_like(g));
    const at::Tensor bound = eps_ * w.abs();
    p.copy_(torch::min(torch::max(w + r, w - bound), w + bound));
  }
}

void Adversary::attack(const std::function<void()>& adversarial_step) {
  torch::NoGradGuard no_grad;
  saved_.clear();
  for (auto& [name, p] : params_) saved_.push_back(p.detach().clone());
  if (o_.kind == "fgm") {
    perturb_fgm();
  } else {
    perturb_awp();
    for (auto& p : all_) p.mutable_grad() = at::Tensor();  // the class's optimizer.zero_grad() (set_to_none)
  }
  {
    at::AutoGradMode grad_on(true);
    adversarial_step();
  }
  for (size_t i = 0; i < params_.size(); ++i) params_[i].second.copy_(saved_[i]);
  for (size_t i = 0; i < earlier_grads_.size(); ++i) {
    if (!earlier_grads_[i].defined()) continue;
    auto& p = all_[i];
    if (p.grad().defined())
      p.mutable_grad().add_(earlier_grads_[i]);
    else
      p.mutable_grad() = earlier_grads_[i];
  }
  saved_.clear();
  earlier_grads_.clear();
}

}  // namespace kg::train
