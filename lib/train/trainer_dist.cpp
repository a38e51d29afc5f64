// The trainer's data-parallel collectives (one process: not called, or a no-op).
#include "train/trainer.h"

#include "train/grad_reducer.h"

#include <torch/torch.h>

namespace kg::train {

void broadcast_weights(model::Network& net, device::ProcessGroup& group) {
  std::vector<at::Tensor> t = net.parameters();
  for (auto& b : net.buffers()) t.push_back(b);
  group.broadcast(t, 0);
}

void Trainer::broadcast_model() {
  if (p_.group) broadcast_weights(*p_.net, *p_.group);
}

bool Trainer::any_rank(bool flag) {
  if (!p_.group) return flag;
  std::vector<at::Tensor> t{torch::full({1}, flag ? 1.0f : 0.0f)};
  p_.group->all_reduce_sum(t);
  return t[0].item<float>() > 0;
}

void Trainer::reduce_params_of_epoch() {
  if (!reducer_) return;
  std::vector<at::Tensor> trainable;
  for (auto& p : params_)
    if (p.requires_grad()) trainable.push_back(p);
  reducer_->set_params(trainable);
}

bool Trainer::abandon_reduction() { return !reducer_ || reducer_->abandon(); }

at::Tensor Trainer::all_reduce_update(std::vector<at::Tensor>& grads, const at::Tensor& group_loss_sum, bool stop_here,
                                      bool* any_stop) {
  // The loss (every rank then agrees on a non-finite skip) and the stop flag go with the gradients.
  // Gradients of the ranks' mean losses, averaged: the gradient of the global batch's mean.
  at::Tensor extra = torch::stack({group_loss_sum.detach().to(torch::kFloat).reshape({}),
                                   torch::full({}, stop_here ? 1.0f : 0.0f, group_loss_sum.options().dtype(torch::kFloat))});
  const double w = static_cast<double>(p_.group->world_size());
  if (reducer_) {
    // The buckets went out during backward: wait for them (averaged in place), then the two scalars.
    reducer_->finish();
    std::vector<at::Tensor> t{extra};
    p_.group->all_reduce_sum(t);
  } else {
    std::vector<at::Tensor> t(grads);
    t.push_back(extra);
    p_.group->all_reduce_sum(t, p_.dist_bucket_bytes);
    torch::NoGradGuard ng;
    for (auto& g : grads) g.div_(w);
  }
  *any_stop = extra[1].item<float>() > 0;
  return extra[0] / w;
}

}  // namespace kg::train
